import { referralCodePattern } from "@affiliate/contract-rules";
import type { ProviderCommand, Referral } from "../../domain/types.js";
import {
  chargeSchema,
  checkoutSessionSchema,
  customerSchema,
  disputeSchema,
  invoiceSchema,
  type StripeEvent,
} from "./payloads.js";

/** The event types that have an effect (contract section 13); reconciliation asks for these. */
export const handledEventTypes = [
  "customer.created",
  "customer.updated",
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "invoice.paid",
  "charge.refunded",
  "charge.dispute.created",
  "charge.dispute.closed",
] as const;

/** The metadata key a merchant sets on checkout sessions, subscriptions, invoices or customers. */
export const referralMetadataKey = "referral_code";

const dateOf = (seconds: number | null | undefined, fallback: Date) =>
  typeof seconds === "number" ? new Date(seconds * 1000) : fallback;

const present = (value: string | null | undefined) => (value ? value : undefined);

function referralOf(...metadatas: (Record<string, string> | null | undefined)[]): Referral | undefined {
  for (const metadata of metadatas) {
    const code = metadata?.[referralMetadataKey]?.trim();
    if (code) return { referralCode: code, source: "metadata" };
  }
  return undefined;
}

/**
 * The promotion codes an invoice's or session's discounts used, as ids (promo_…) and, when the
 * payload expanded them, as the codes customers type: whichever the merchant mapped matches.
 * Stripe puts them in several places across API versions; every one is read.
 */
function promotionCodesOf(object: Record<string, unknown>): string[] {
  const found = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === "string" && value !== "") found.add(value);
    else if (value && typeof value === "object") {
      const { id, code } = value as { id?: unknown; code?: unknown };
      if (typeof id === "string" && id !== "") found.add(id);
      if (typeof code === "string" && code !== "") found.add(code);
    }
  };
  const fromDiscount = (discount: unknown) => {
    if (discount && typeof discount === "object") add((discount as { promotion_code?: unknown }).promotion_code);
  };
  fromDiscount(object.discount);
  for (const discount of Array.isArray(object.discounts) ? object.discounts : []) fromDiscount(discount);
  const breakdown = (object.total_details as { breakdown?: { discounts?: unknown } } | null | undefined)?.breakdown;
  for (const entry of Array.isArray(breakdown?.discounts) ? breakdown.discounts : []) {
    fromDiscount((entry as { discount?: unknown } | null)?.discount);
  }
  return [...found];
}

/**
 * A session's client_reference_id, when it is a referral: a tracked visitor ("vis_…", what a
 * click answered) or a referral code. Anything else is the merchant's own reference.
 */
function clientReferral(reference: string | null | undefined): Referral | undefined {
  if (!reference) return undefined;
  if (reference.startsWith("vis_")) return { visitorId: reference };
  return referralCodePattern.test(reference) ? { referralCode: reference, source: "link" } : undefined;
}

/**
 * Which events must be applied one at a time, in the order received: a customer's (its signup
 * before its payments), and a charge's when they name no customer: a dispute's opening before its
 * closing (a dispute names only its charge), and a refund of that charge. Applied in parallel,
 * a closing that ran first would turn the opening into a replay ("recorded already") instead of
 * what it is. A refund or dispute still waits for its payment by itself (its payment may be in
 * another group). The group is stored with the event when it is received and never recomputed;
 * an event in a group of its own (`event:<id>`) may be applied in parallel with any other.
 */
export function applyGroupOf(event: StripeEvent): string {
  const object = event.data.object;
  const customer = idOf(event.type.startsWith("customer.") ? object.id : object.customer);
  if (customer) return `customer:${customer}`;
  const charge =
    event.type === "charge.refunded"
      ? idOf(object.id)
      : event.type.startsWith("charge.dispute.")
        ? idOf(object.charge)
        : undefined;
  if (charge) return `charge:${charge}`;
  return `event:${event.id}`;
}

/** An id as Stripe sends it: a string, or the object when the event expanded it. */
function idOf(value: unknown): string | undefined {
  if (typeof value === "string") return value || undefined;
  if (value && typeof value === "object" && typeof (value as { id?: unknown }).id === "string") {
    return (value as { id: string }).id || undefined;
  }
  return undefined;
}

/** What one Stripe event asks of the ledger (contract section 13's table). */
export function commandOf(event: StripeEvent): ProviderCommand {
  const received = new Date(event.created * 1000);
  const object = event.data.object;
  switch (event.type) {
    case "customer.created":
    case "customer.updated": {
      const customer = customerSchema.parse(object);
      const referral = referralOf(customer.metadata);
      if (!referral) {
        return {
          kind: "ignore",
          detail: `Customer ${customer.id} has no metadata.${referralMetadataKey}`,
          customerId: customer.id,
        };
      }
      return {
        kind: "signup",
        referral,
        promotionCodes: [],
        customerId: customer.id,
        email: present(customer.email),
        occurredAt: dateOf(customer.created, received),
      };
    }
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = checkoutSessionSchema.parse(object);
      // A promotion code beats a visitor's cookie (contract section 17): the session's own
      // client_reference_id is used only when no mapped code attributes it (decided in apply).
      const referral = referralOf(session.metadata) ?? clientReferral(session.client_reference_id);
      const promotionCodes = promotionCodesOf(object);
      const customer = {
        customerId: session.customer,
        email: present(session.customer_details?.email) ?? present(session.customer_email),
      };
      if (session.subscription || session.invoice || session.mode === "subscription") {
        if (!customer.customerId) {
          return { kind: "ignore", detail: `Session ${session.id} is paid by its invoice and names no customer` };
        }
        if (!referral && promotionCodes.length === 0) {
          return {
            kind: "ignore",
            detail: `Session ${session.id} is paid by its invoice; no referral`,
            customerId: customer.customerId,
          };
        }
        return { kind: "signup", referral, promotionCodes, ...customer, occurredAt: dateOf(session.created, received) };
      }
      if (session.payment_status !== "paid") {
        return {
          kind: "ignore",
          detail: `Session ${session.id} is not paid yet (${session.payment_status ?? "no status"}); checkout.session.async_payment_succeeded will count it`,
        };
      }
      if (!session.payment_intent || !session.amount_total || !session.currency) {
        return { kind: "ignore", detail: `Session ${session.id} has no payment intent or amount` };
      }
      return {
        kind: "payment",
        externalId: session.payment_intent,
        amountCents: session.amount_total,
        currency: session.currency,
        occurredAt: received,
        referral,
        promotionCodes,
        aliases: [],
        ...customer,
      };
    }
    case "invoice.paid": {
      const invoice = invoiceSchema.parse(object);
      if (invoice.amount_paid <= 0) return { kind: "ignore", detail: `Invoice ${invoice.id} paid nothing` };
      const paymentIntents = [
        invoice.payment_intent,
        ...(invoice.payments?.data ?? []).map((entry) => entry.payment?.payment_intent),
      ].filter((id): id is string => typeof id === "string" && id !== "");
      return {
        kind: "payment",
        externalId: invoice.id,
        amountCents: invoice.amount_paid,
        currency: invoice.currency,
        occurredAt: dateOf(invoice.status_transitions?.paid_at, received),
        referral: referralOf(
          invoice.metadata,
          invoice.parent?.subscription_details?.metadata,
          invoice.subscription_details?.metadata,
        ),
        promotionCodes: promotionCodesOf(object),
        aliases: [...new Set(paymentIntents)],
        customerId: invoice.customer,
        email: present(invoice.customer_email),
      };
    }
    case "charge.refunded": {
      const charge = chargeSchema.parse(object);
      return {
        kind: "refund",
        paymentIds: [charge.invoice, charge.payment_intent].filter((id): id is string => !!id),
        refundedTotalCents: charge.amount_refunded,
        currency: charge.currency,
      };
    }
    case "charge.dispute.created":
    case "charge.dispute.closed": {
      const dispute = disputeSchema.parse(object);
      const paymentIds = [dispute.payment_intent].filter((id): id is string => !!id);
      if (event.type === "charge.dispute.created") return { kind: "hold", paymentIds, disputeId: dispute.id };
      if (dispute.status === "lost") return { kind: "dispute_lost", paymentIds, disputeId: dispute.id };
      if (dispute.status === "won" || dispute.status === "warning_closed") {
        return { kind: "release", paymentIds, disputeId: dispute.id, closedAs: dispute.status };
      }
      return { kind: "ignore", detail: `Dispute ${dispute.id} closed as ${dispute.status}` };
    }
    default:
      return { kind: "ignore", detail: `Event type ${event.type} is not handled` };
  }
}
