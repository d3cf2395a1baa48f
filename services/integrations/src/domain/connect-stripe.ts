import { DomainError, newId, type SealingKey, type Sql, type TransactionSql } from "@affiliate/platform";
import {
  type ConnectionRow,
  connectionActivity,
  connectionOfProduct,
  deleteConnection,
  insertConnection,
  lockConnectionOfProduct,
  replaceSecrets,
} from "../store/connections.js";
import type { ConnectionView } from "./types.js";

/** How long a replaced webhook secret keeps verifying (contract section 13). */
export const previousSecretGraceMs = 24 * 60 * 60 * 1000;

export interface ConnectionDeps {
  sql: Sql;
  /** Seals the secrets at rest (INTEGRATIONS_ENCRYPTION_KEY). */
  sealing: SealingKey;
  clock: () => Date;
}

export interface StripeSecrets {
  webhookSecret: string;
  apiKey?: string | undefined;
}

function assertValidSecrets(secrets: StripeSecrets): void {
  const errors: Record<string, string[]> = {};
  if (!/^whsec_[A-Za-z0-9]{1,255}$/.test(secrets.webhookSecret)) {
    errors.webhook_secret = ["Must be the endpoint's signing secret, whsec_…"];
  }
  if (secrets.apiKey !== undefined && !/^(rk|sk)_(live|test)_[A-Za-z0-9]{1,255}$/.test(secrets.apiKey)) {
    errors.api_key = ["Must be a restricted (rk_…) or secret (sk_…) Stripe key"];
  }
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
}

/**
 * Connects the product's Stripe account, or replaces its secrets: the connection (and so the
 * receiver's path) stays, and the replaced webhook secret keeps verifying for 24 hours, so
 * deliveries signed before the merchant rolled the secret in Stripe still arrive. The secrets are
 * sealed before they are stored and never leave this service.
 */
export async function connectStripe(
  deps: ConnectionDeps,
  productId: string,
  secrets: StripeSecrets,
): Promise<ConnectionView> {
  assertValidSecrets(secrets);
  const now = deps.clock();
  const webhookSecret = deps.sealing.seal(secrets.webhookSecret);
  const apiKey = secrets.apiKey === undefined ? null : deps.sealing.seal(secrets.apiKey);
  const row = await deps.sql.begin(async (tx) => {
    const existing = await lockConnectionOfProduct(tx, productId);
    if (!existing) {
      const inserted = await insertConnection(tx, { id: newId("scn"), productId, webhookSecret, apiKey, now });
      // A concurrent first PUT won: this one replaces its secrets, as a second PUT would.
      if (inserted) return inserted;
      const winner = await lockConnectionOfProduct(tx, productId);
      if (!winner) throw new DomainError("aborted", "The connection changed concurrently; retry");
      return replaceWith(tx, winner);
    }
    return replaceWith(tx, existing);

    async function replaceWith(tx: TransactionSql, current: ConnectionRow) {
      const unchanged = deps.sealing.open(current.webhookSecret) === secrets.webhookSecret;
      return replaceSecrets(tx, current.id, {
        webhookSecret,
        // Rolling to the same secret keeps whatever grace was running.
        previousWebhookSecret: unchanged ? current.previousWebhookSecret : current.webhookSecret,
        previousSecretUntil: unchanged ? current.previousSecretUntil : new Date(now.getTime() + previousSecretGraceMs),
        apiKey,
        now,
      });
    }
  });
  return viewOf(deps.sql, row);
}

export async function getStripeConnection(deps: ConnectionDeps, productId: string): Promise<ConnectionView> {
  const row = await connectionOfProduct(deps.sql, productId);
  if (!row) throw notConnected();
  return viewOf(deps.sql, row);
}

/** Forgets the connection and its secrets; the receiver's path answers 404 from now on. */
export async function disconnectStripe(deps: ConnectionDeps, productId: string): Promise<void> {
  if (!(await deleteConnection(deps.sql, productId))) throw notConnected();
}

const notConnected = () => new DomainError("not_found", "Stripe is not connected");

async function viewOf(sql: Sql, row: ConnectionRow): Promise<ConnectionView> {
  const activity = await connectionActivity(sql, row);
  return { id: row.id, connectedAt: row.connectedAt, hasApiKey: row.apiKey !== null, ...activity };
}

/** The webhook secrets a delivery may be signed with now: the current one, and a replaced one for 24 hours. */
export function acceptedWebhookSecrets(sealing: SealingKey, row: ConnectionRow, now: Date): string[] {
  const current = sealing.open(row.webhookSecret);
  const previous =
    row.previousWebhookSecret && row.previousSecretUntil && row.previousSecretUntil > now
      ? [sealing.open(row.previousWebhookSecret)]
      : [];
  return [current, ...previous];
}
