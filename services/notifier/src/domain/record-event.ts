import { currentTraceHeaders, newId, type Queryable } from "@affiliate/platform";
import { insertDeliveries, type NewDelivery } from "../store/deliveries.js";
import { insertEmails } from "../store/emails.js";
import { subscribedEndpoints } from "../store/endpoints.js";
import { type Delivery, type EmailDraft, type Endpoint, testEventType, type WebhookBody } from "./types.js";

/**
 * An event as the notifier records it: the webhook body and the emails it causes. An event that
 * is no webhook (an affiliate's sign-in) has no body, only its id and its emails.
 */
export type NotifiableEvent = { productId: string; emails: EmailDraft[] } & (
  | { body: WebhookBody }
  | { body: null; eventId: string }
);

/**
 * Records an event, in the transaction that marks it applied (so a redelivery records nothing
 * twice): one delivery per endpoint subscribed to its type, due now (enabled) or failed without
 * an attempt (disabled, for `recover` to send later), and its emails. Nothing is sent here: the
 * job worker sends what this commits.
 */
export async function recordEvent(tx: Queryable, event: NotifiableEvent, now: Date): Promise<void> {
  const { body } = event;
  if (body) {
    // Kept until the deliveries are in (the lock order, store/endpoints.ts).
    const endpoints = await subscribedEndpoints(tx, event.productId, body.type, "keep");
    const traceHeaders = currentTraceHeaders();
    await insertDeliveries(
      tx,
      endpoints.map(
        (endpoint): NewDelivery => ({
          id: newId("dlv"),
          productId: event.productId,
          endpointId: endpoint.id,
          payload: body,
          traceHeaders,
          dueAt: endpoint.enabled ? now : null,
        }),
      ),
    );
  }
  await insertEmails(
    tx,
    event.productId,
    body ? body.id : event.eventId,
    event.emails.map((draft) => ({ ...draft, id: newId("eml") })),
    now,
  );
}

/** Whether recording this event would store anything (no endpoint subscribed and no email: skip the lookups). */
export async function wantsEvent(tx: Queryable, productId: string, type: string): Promise<boolean> {
  return (await subscribedEndpoints(tx, productId, type)).length > 0;
}

/** A webhook.test delivery for one endpoint, due now. */
export async function recordTestDelivery(sql: Queryable, endpoint: Endpoint, now: Date): Promise<Delivery> {
  const body: WebhookBody = {
    id: newId("msg"),
    type: testEventType,
    created_at: now.toISOString(),
    data: { webhook_id: endpoint.id },
  };
  const id = newId("dlv");
  await insertDeliveries(sql, [
    {
      id,
      productId: endpoint.productId,
      endpointId: endpoint.id,
      payload: body,
      traceHeaders: currentTraceHeaders(),
      dueAt: now,
    },
  ]);
  return {
    id,
    endpointId: endpoint.id,
    eventId: body.id,
    eventType: body.type,
    status: "pending",
    attempts: 0,
    lastStatusCode: null,
    lastError: null,
    nextAttemptAt: now,
    createdAt: now,
    payload: body,
  };
}
