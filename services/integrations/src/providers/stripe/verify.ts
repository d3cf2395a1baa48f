import Stripe from "stripe";
import { RefusedDelivery } from "../../domain/ports.js";
import type { ReceivedEvent } from "../../domain/types.js";
import { applyGroupOf } from "./map-event.js";
import { type StripeEvent, stripeEventSchema } from "./payloads.js";

/** Stripe's tolerance for a signature's timestamp, in seconds (contract section 13). */
export const signatureToleranceSeconds = 300;

/**
 * Verifies a delivery with Stripe's own library (the `Stripe-Signature` scheme over the raw
 * bytes, within the tolerance) against each secret the connection accepts (the current one, and
 * a replaced one for 24 hours), and reads it as an event.
 */
export function verifyStripeDelivery(
  payload: Uint8Array,
  signature: string,
  secrets: string[],
  now: Date,
): ReceivedEvent {
  let verified: unknown;
  let lastError: unknown;
  for (const secret of secrets) {
    try {
      verified = Stripe.webhooks.constructEvent(
        Buffer.from(payload),
        signature,
        secret,
        signatureToleranceSeconds,
        undefined,
        now.getTime(),
      );
      break;
    } catch (error) {
      lastError = error;
    }
  }
  if (verified === undefined) {
    if (lastError instanceof SyntaxError) throw new RefusedDelivery("The body is not valid JSON");
    throw new RefusedDelivery(
      lastError instanceof Stripe.errors.StripeSignatureVerificationError
        ? `Stripe-Signature does not verify: ${lastError.message}`
        : "Stripe-Signature does not verify",
    );
  }
  return receivedEventOf(verified, Buffer.from(payload).toString("utf8"));
}

/** An event as Stripe's events API or a delivery gives it, ready to store. */
export function receivedEventOf(event: unknown, payload: string): ReceivedEvent {
  const parsed = stripeEventSchema.safeParse(event);
  if (!parsed.success) throw new RefusedDelivery("The body is not a Stripe event");
  return storable(parsed.data, payload);
}

function storable(event: StripeEvent, payload: string): ReceivedEvent {
  return {
    eventId: event.id,
    type: event.type,
    livemode: event.livemode,
    createdAt: new Date(event.created * 1000),
    payload,
    applyGroup: applyGroupOf(event),
  };
}
