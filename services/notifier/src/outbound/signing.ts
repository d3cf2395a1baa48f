import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

/** A new endpoint secret: `whsec_` + base64 of 24 random bytes (Standard Webhooks). */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the event id, the same on every
 * retry), `webhook-timestamp` (this attempt's time, so a captured request cannot be replayed
 * later), and `webhook-signature` with one `v1,` signature per secret, space separated (during
 * a rotation overlap both the new and the previous secret sign).
 */
export function signatureHeaders(eventId: string, at: Date, body: string, secrets: string[]): Record<string, string> {
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(" "),
  };
}
