import { DomainError, newId, type Sql } from "@affiliate/platform";
import { newSecret } from "../outbound/signing.js";
import { urlProblem } from "../outbound/ssrf-guard.js";
import {
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  lockEndpoint,
  rotateSecret,
  updateEndpoint,
} from "../store/endpoints.js";
import { webhookNotFound } from "./errors.js";
import { recordTestDelivery } from "./record-event.js";
import { rotationOverlapMs } from "./schedule.js";
import { type Delivery, type Endpoint, webhookTypes } from "./types.js";

export interface WebhookDeps {
  sql: Sql;
  clock: () => Date;
  /** WEBHOOK_ALLOW_PRIVATE: local development and tests may target private addresses. */
  allowPrivate: boolean;
}

function checkUrl(url: string, allowPrivate: boolean): void {
  const problem = urlProblem(url, allowPrivate);
  if (problem) throw DomainError.invalidField("url", problem);
}

function checkEvents(events: string[]): string[] {
  const unknown = events.filter((type) => !(webhookTypes as readonly string[]).includes(type));
  if (unknown.length > 0) {
    throw DomainError.invalidField(
      "events",
      `Unknown event type: ${unknown.join(", ")}; known: ${webhookTypes.join(", ")}`,
    );
  }
  return [...new Set(events)];
}

export async function createWebhook(
  deps: WebhookDeps,
  productId: string,
  input: { url: string; events: string[] },
): Promise<{ endpoint: Endpoint; secret: string }> {
  checkUrl(input.url, deps.allowPrivate);
  const events = checkEvents(input.events);
  const secret = newSecret();
  const endpoint = await insertEndpoint(deps.sql, { id: newId("wh"), productId, url: input.url, events, secret });
  return { endpoint, secret };
}

export async function getWebhookOrThrow(deps: Pick<WebhookDeps, "sql">, productId: string, id: string) {
  const endpoint = await findEndpoint(deps.sql, productId, id);
  if (!endpoint) throw webhookNotFound(id);
  return endpoint;
}

export function listWebhooks(deps: Pick<WebhookDeps, "sql">, productId: string): Promise<Endpoint[]> {
  return listEndpoints(deps.sql, productId);
}

export async function updateWebhook(
  deps: WebhookDeps,
  productId: string,
  id: string,
  change: { url?: string; events?: string[]; enabled?: boolean },
): Promise<Endpoint> {
  if (change.url !== undefined) checkUrl(change.url, deps.allowPrivate);
  const events = change.events === undefined ? undefined : checkEvents(change.events);
  const endpoint = await updateEndpoint(deps.sql, productId, id, { ...change, ...(events ? { events } : {}) });
  if (!endpoint) throw webhookNotFound(id);
  return endpoint;
}

export async function deleteWebhook(deps: Pick<WebhookDeps, "sql">, productId: string, id: string): Promise<void> {
  if (!(await deleteEndpoint(deps.sql, productId, id))) throw webhookNotFound(id);
}

/** A new secret signs from now on; the old one also signs for 24 hours (contract 9b). */
export async function rotateWebhookSecret(deps: WebhookDeps, productId: string, id: string): Promise<string> {
  const secret = newSecret();
  const overlapUntil = new Date(deps.clock().getTime() + rotationOverlapMs);
  if (!(await rotateSecret(deps.sql, productId, id, secret, overlapUntil))) throw webhookNotFound(id);
  return secret;
}

/** A signed webhook.test delivery, stored and retried like any other (contract 9b). */
export function testWebhook(deps: WebhookDeps, productId: string, id: string): Promise<Delivery> {
  // Kept (the lock order, store/endpoints.ts) until the delivery is in: a delete meanwhile waits,
  // or was first and the endpoint is not found.
  return deps.sql.begin(async (tx) => {
    const endpoint = await lockEndpoint(tx, id, "keep", productId);
    if (!endpoint) throw webhookNotFound(id);
    return recordTestDelivery(tx, endpoint, deps.clock());
  });
}
