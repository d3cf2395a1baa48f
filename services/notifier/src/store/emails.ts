import { erasedMarker, literalPattern, type Queryable, wakeAfterCommit } from "@affiliate/platform";
import type { EmailDraft } from "../domain/types.js";

export interface EmailJob {
  id: string;
  productId: string;
  template: string;
  recipient: string;
  subject: string;
  textBody: string;
  htmlBody: string;
  attempts: number;
  nextAttemptAt: Date | null;
  leasedUntil: Date | null;
  leaseToken: string | null;
}

/** Records emails once per (event, template, recipient): a redelivered event adds nothing. */
export async function insertEmails(
  sql: Queryable,
  productId: string,
  eventId: string,
  drafts: (EmailDraft & { id: string })[],
  dueAt: Date,
): Promise<void> {
  if (drafts.length === 0) return;
  await sql`
    insert into emails ${sql(
      drafts.map((draft) => ({
        id: draft.id,
        productId,
        eventId,
        template: draft.template,
        recipient: draft.recipient,
        subject: draft.subject,
        textBody: draft.text,
        htmlBody: draft.html,
        nextAttemptAt: dueAt,
      })),
    )}
    on conflict (event_id, template, recipient) do nothing`;
  wakeAfterCommit("emails");
}

export async function recordEmailOutcome(
  sql: Queryable,
  id: string,
  outcome: { status: "pending" | "sent" | "recorded" | "failed"; error?: string; nextAttemptAt: Date | null; at: Date },
): Promise<void> {
  await sql`
    update emails set status = ${outcome.status}, attempts = attempts + 1, last_error = ${outcome.error ?? null},
      next_attempt_at = ${outcome.nextAttemptAt},
      sent_at = case when ${outcome.status} in ('sent', 'recorded') then ${outcome.at}::timestamptz else sent_at end
    where id = ${id}`;
}

/** Emails of this product still to be sent whose text mentions `email` (a customer's). */
export async function countQueuedMentions(sql: Queryable, productId: string, email: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from emails
    where product_id = ${productId}
      and (strpos(lower(text_body), ${email}) > 0 or strpos(lower(html_body), ${email}) > 0)`;
  return row?.count ?? 0;
}

/**
 * Replaces `email`, in any capitals (a refund reason quotes it as the merchant typed it), with
 * `[erased]` in the text of this product's emails: queued ones, and the stored copies of those
 * already sent or recorded, which are a store of personal data too. Answers how many changed.
 */
export async function eraseQueuedMentions(sql: Queryable, productId: string, email: string): Promise<number> {
  const pattern = literalPattern(email);
  const rows = await sql`
    update emails set text_body = regexp_replace(text_body, ${pattern}, ${erasedMarker}, 'gi'),
      html_body = regexp_replace(html_body, ${pattern}, ${erasedMarker}, 'gi')
    where product_id = ${productId}
      and (strpos(lower(text_body), ${email}) > 0 or strpos(lower(html_body), ${email}) > 0)
    returning id`;
  return rows.length;
}

export async function purgeEmails(sql: Queryable, before: Date): Promise<number> {
  const rows = await sql`
    delete from emails where created_at < ${before} and status <> 'pending' returning id`;
  return rows.length;
}
