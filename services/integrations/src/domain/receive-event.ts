import { DomainError, newId } from "@affiliate/platform";
import { connectionById } from "../store/connections.js";
import { insertEvent } from "../store/events.js";
import { acceptedWebhookSecrets, type ConnectionDeps } from "./connect-stripe.js";
import { RefusedDelivery, type VerifyDelivery } from "./ports.js";
import type { ReceivedEvent } from "./types.js";

/**
 * Receives one delivery (contract section 13): the connection must exist, the signature must
 * verify against the raw bytes (the provider adapter's `verify`), and the event is stored, due
 * to be applied, before the answer. A redelivery of a stored event id is acknowledged and
 * changes nothing. A refused delivery stores nothing.
 */
export async function receiveStripeEvent(
  deps: ConnectionDeps & { verify: VerifyDelivery },
  delivery: { connectionId: string; payload: Uint8Array; signature: string },
): Promise<{ eventId: string; redelivered: boolean }> {
  const connection = await connectionById(deps.sql, delivery.connectionId);
  if (!connection) throw new DomainError("not_found", `No Stripe connection ${delivery.connectionId}`);
  const now = deps.clock();
  let event: ReceivedEvent;
  try {
    event = deps.verify(
      delivery.payload,
      delivery.signature,
      acceptedWebhookSecrets(deps.sealing, connection, now),
      now,
    );
  } catch (error) {
    if (error instanceof RefusedDelivery) throw new DomainError("invalid_argument", error.message);
    throw error;
  }
  const stored = await insertEvent(deps.sql, {
    ...event,
    id: newId("sev"),
    productId: connection.productId,
    connectionId: connection.id,
    now,
  });
  return { eventId: event.eventId, redelivered: !stored };
}
