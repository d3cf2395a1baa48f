import { loadConfig, pageTokenSecret, rpcServiceConfigShape, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7105, metricsPort: 9105 }),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  LEDGER_URL: serviceUrls.default("http://127.0.0.1:7102"),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /** SMTP server for emails; unset: emails are recorded and logged by id, not sent. */
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().min(3).default("Affiliate program <no-reply@affiliate.local>"),
  /**
   * The affiliate portal's public address (e.g. https://affiliates.example.com/portal): welcome
   * emails link to its sign-in, sign-in emails to `<PORTAL_URL>#code=…`. Unset: the welcome
   * email has no link and the sign-in email gives the code to paste.
   */
  PORTAL_URL: z.string().url().optional(),
  /** Allows webhooks to private, loopback and link-local addresses (local development only). */
  WEBHOOK_ALLOW_PRIVATE: z
    .enum(["true", "false"])
    .default("false")
    .transform((value) => value === "true"),
  /** Deliveries and emails sent at once by one replica. */
  DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(64),
};

export const loadNotifierConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
