import { WebhookVerificationError as SignatureError, Webhook } from "standardwebhooks";
import type { webhooks } from "./generated/openapi.js";
import { webhookTable } from "./generated/operations.js";
import { type Int64Fields, parseExact } from "./json.js";

/** Every event type a webhook endpoint can receive (`commission.created`, …, `webhook.test`). */
export type WebhookEventType = keyof webhooks & keyof typeof webhookTable;

/** The body of a delivery of `Type`: `{ id, type, created_at, data }`, `data` in the shape of its GET answer. */
export type WebhookEventOf<Type extends WebhookEventType> =
  webhooks[Type]["post"]["requestBody"]["content"]["application/json"];

/** A verified delivery: switch on `type` and `data` has that event's shape. */
export type WebhookEvent = { [Type in WebhookEventType]: WebhookEventOf<Type> }[WebhookEventType];

/** Headers as fetch (`Headers`) or Node's http (`IncomingHttpHeaders`) hold them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The delivery is not ours: bad or missing signature headers, a wrong signature, a stale timestamp, or a body that is not an event. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

const signatureHeaders = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

function headerValues(headers: WebhookHeaders): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of signatureHeaders) {
    const value =
      typeof (headers as Headers).get === "function"
        ? (headers as Headers).get(name)
        : (Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1] ?? null);
    if (typeof value === "string") values[name] = value;
    else if (Array.isArray(value)) values[name] = value.join(", ");
  }
  return values;
}

/**
 * Verifies a delivery as Standard Webhooks define it (the `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` headers; a timestamp within 5 minutes) against any of `secrets` (the
 * `whsec_…` secrets of the endpoint: both during the 24 hours after a rotation, when each
 * delivery is signed with both), and returns the event, int64 fields as bigint. `body` must be
 * the raw bytes or text as received: a re-serialised body no longer matches its signature.
 * Throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | readonly string[],
): WebhookEvent {
  const text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(body);
  const values = headerValues(headers);
  const candidates = typeof secrets === "string" ? [secrets] : secrets;
  if (candidates.length === 0) throw new WebhookVerificationError("No secret to verify the delivery with");
  let failure: unknown;
  const verified = candidates.some((secret) => {
    try {
      new Webhook(secret).verify(text, values);
      return true;
    } catch (error) {
      if (!(error instanceof SignatureError)) throw error;
      failure = error;
      return false;
    }
  });
  if (!verified) {
    throw new WebhookVerificationError(failure instanceof Error ? failure.message : "No matching signature", {
      cause: failure,
    });
  }
  const type = (JSON.parse(text) as { type?: unknown }).type;
  if (typeof type !== "string" || !Object.hasOwn(webhookTable, type)) {
    throw new WebhookVerificationError(
      `Verified, but of an event type this client does not know (${String(type)}): update @affiliate/client`,
    );
  }
  return parseExact(text, webhookTable[type as WebhookEventType] as Int64Fields) as WebhookEvent;
}
