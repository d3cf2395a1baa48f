import type { ClaimedJob, Logger, Sql } from "@affiliate/platform";
import { type EmailJob, recordEmailOutcome } from "../store/emails.js";
import { nextAttemptAt } from "./schedule.js";

/** Where emails go: SMTP (nodemailer) when SMTP_URL is set, else nowhere (recorded and logged). */
export interface Mailer {
  send(message: { to: string; subject: string; text: string; html: string; messageId: string }): Promise<void>;
}

export interface SendEmailDeps {
  sql: Sql;
  clock: () => Date;
  logger: Logger;
  /** Undefined: SMTP_URL is unset, so emails are only recorded. */
  mailer: Mailer | undefined;
}

/**
 * Sends one claimed email (the job worker's run). Without a mailer the email is marked
 * `recorded` and logged by id and template, never by address. An SMTP failure is retried on
 * the webhook schedule; the unique (event, template, recipient) row means never twice.
 */
export async function sendEmail(deps: SendEmailDeps, job: ClaimedJob<EmailJob>): Promise<void> {
  const email = job.row;
  if (!deps.mailer) {
    await job.finish((tx) =>
      recordEmailOutcome(tx, email.id, { status: "recorded", nextAttemptAt: null, at: deps.clock() }),
    );
    deps.logger.info({ emailId: email.id, template: email.template }, "email recorded (SMTP_URL unset)");
    return;
  }
  try {
    await deps.mailer.send({
      to: email.recipient,
      subject: email.subject,
      text: email.textBody,
      html: email.htmlBody,
      messageId: `<${email.id}@affiliate-notifier>`,
    });
    await job.finish((tx) =>
      recordEmailOutcome(tx, email.id, { status: "sent", nextAttemptAt: null, at: deps.clock() }),
    );
    deps.logger.info({ emailId: email.id, template: email.template }, "email sent");
  } catch (error) {
    const now = deps.clock();
    const next = nextAttemptAt(now, email.attempts + 1, undefined);
    const message = error instanceof Error ? error.message : String(error);
    await job.finish((tx) =>
      recordEmailOutcome(tx, email.id, {
        status: next ? "pending" : "failed",
        error: message,
        nextAttemptAt: next,
        at: now,
      }),
    );
    deps.logger.warn({ emailId: email.id, template: email.template, err: message }, "email not sent; will retry");
  }
}
