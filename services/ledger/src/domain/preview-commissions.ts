import { normalizeEmail } from "@affiliate/contract-rules";
import { DomainError } from "@affiliate/platform";
import { recordedPayments } from "../store/payment-counters.js";
import { findPaymentsByExternalIds } from "../store/tracking-events.js";
import { attributeInOrder, BatchDirectory } from "./attribute.js";
import { decideCommissions } from "./commission-rules.js";
import { counterOf, nextPayment } from "./number-payments.js";
import type { TrackDeps } from "./track-batch.js";
import { trackErrors } from "./tracking-rules.js";
import type { CommissionPreview, TrackInput } from "./types.js";

/**
 * What a live payment would earn if it were recorded now, and why (contract section 12): the
 * payment is validated and attributed as Track would (live events, partners' current settings),
 * numbered as the next payment of its customer to that partnership, and decided by the same
 * decideCommissions Track uses. It reads only: nothing is written, counted or emitted. Its
 * external_id is ignored (a preview is never a replay).
 */
export async function previewCommissions(deps: TrackDeps, input: TrackInput): Promise<CommissionPreview> {
  const now = deps.clock();
  if (input.type !== "payment") throw DomainError.invalidField("type", "A preview is of a payment");
  if (input.testMode) throw DomainError.invalidField("test_mode", "A preview is of a live payment");
  const payment = { ...input, externalId: undefined };
  const alreadyRecorded =
    input.externalId !== undefined &&
    (await findPaymentsByExternalIds(deps.sql, false, [{ productId: input.productId, externalId: input.externalId }]))
      .length > 0;
  const errors = trackErrors(payment, now);
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);

  const occurredAt = payment.occurredAt ?? now;
  const customerEmail = payment.customerEmail === undefined ? undefined : normalizeEmail(payment.customerEmail);
  const partners = new BatchDirectory(deps.partners);
  const [attribution] = await attributeInOrder(deps.sql, partners, false, [{ ...payment, occurredAt, customerEmail }]);
  if (!attribution) return { partnershipId: null, commissions: [], skipped: null, alreadyRecorded };
  const sponsor = attribution.activeSponsorPartnershipId
    ? await partners.byPartnershipId(payment.productId, attribution.activeSponsorPartnershipId)
    : undefined;
  const counter = counterOf({
    eventType: "payment",
    productId: payment.productId,
    partnershipId: attribution.partnershipId,
    providerCustomerId: payment.providerCustomerId ?? null,
    customerEmail: customerEmail ?? null,
  });
  const recorded = counter ? (await recordedPayments(deps.sql, [counter])).values().next().value : undefined;
  const amountCents = payment.amountCents ?? 0;
  return {
    partnershipId: attribution.partnershipId,
    alreadyRecorded,
    ...decideCommissions({ amountCents, occurredAt }, attribution, sponsor, nextPayment(recorded, occurredAt)),
  };
}
