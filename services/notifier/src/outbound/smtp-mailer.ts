import nodemailer from "nodemailer";
import type { Mailer } from "../domain/send-email.js";

/** Emails over SMTP to `url` (SMTP_URL) from `from` (MAIL_FROM). */
export function smtpMailer(url: string, from: string): Mailer & { close(): void } {
  const transport = nodemailer.createTransport(url);
  return {
    async send(message) {
      await transport.sendMail({ from, ...message });
    },
    close: () => transport.close(),
  };
}
