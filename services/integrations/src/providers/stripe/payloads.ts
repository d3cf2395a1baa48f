import { z } from "zod";

/**
 * The fields of Stripe's payloads this adapter reads, and no more: parsed leniently (Stripe adds
 * fields in every API version, and moved some: a charge of versions after 2025-03 names no
 * invoice), so an event of any version is read for what it has. Nothing outside
 * providers/stripe sees these shapes.
 */

const metadata = z.record(z.string(), z.string()).nullish();
/** An id, or the object when the event expanded it. */
const idOrObject = z
  .union([z.string(), z.object({ id: z.string() }).loose()])
  .nullish()
  .transform((value) => (typeof value === "string" ? value : (value?.id ?? undefined)));

export const stripeEventSchema = z
  .object({
    id: z.string().min(1).max(255),
    object: z.literal("event"),
    type: z.string().min(1).max(255),
    livemode: z.boolean(),
    created: z.number().int(),
    data: z.object({ object: z.record(z.string(), z.unknown()) }).loose(),
  })
  .loose();
export type StripeEvent = z.infer<typeof stripeEventSchema>;

export const customerSchema = z
  .object({ id: z.string(), email: z.string().nullish(), metadata, created: z.number().int().nullish() })
  .loose();

export const checkoutSessionSchema = z
  .object({
    id: z.string(),
    mode: z.string().nullish(),
    payment_status: z.string().nullish(),
    amount_total: z.number().int().nullish(),
    currency: z.string().nullish(),
    customer: idOrObject,
    customer_email: z.string().nullish(),
    customer_details: z.object({ email: z.string().nullish() }).loose().nullish(),
    client_reference_id: z.string().nullish(),
    payment_intent: idOrObject,
    invoice: idOrObject,
    subscription: idOrObject,
    metadata,
    created: z.number().int().nullish(),
  })
  .loose();

export const invoiceSchema = z
  .object({
    id: z.string(),
    amount_paid: z.number().int(),
    currency: z.string(),
    customer: idOrObject,
    customer_email: z.string().nullish(),
    status_transitions: z.object({ paid_at: z.number().int().nullish() }).loose().nullish(),
    metadata,
    // API versions before 2025-03: the invoice's payment intent and subscription.
    payment_intent: idOrObject,
    subscription: idOrObject,
    // Later versions: the subscription's metadata on the invoice, and the payments list.
    parent: z
      .object({
        subscription_details: z.object({ metadata, subscription: idOrObject }).loose().nullish(),
      })
      .loose()
      .nullish(),
    subscription_details: z.object({ metadata }).loose().nullish(),
    payments: z
      .object({
        data: z.array(z.object({ payment: z.object({ payment_intent: idOrObject }).loose().nullish() }).loose()),
      })
      .loose()
      .nullish(),
    created: z.number().int().nullish(),
  })
  .loose();

export const chargeSchema = z
  .object({
    id: z.string(),
    amount_refunded: z.number().int(),
    currency: z.string(),
    payment_intent: idOrObject,
    // API versions before 2025-03 only.
    invoice: idOrObject,
  })
  .loose();

export const disputeSchema = z
  .object({
    id: z.string(),
    status: z.string(),
    charge: idOrObject,
    payment_intent: idOrObject,
  })
  .loose();
