import Stripe from "stripe";
import type { FetchedCustomer } from "../../domain/ports.js";
import { stripeClient } from "./client.js";
import { referralMetadataKey } from "./map-event.js";

/**
 * One customer through Stripe's own client (`GET /v1/customers/:id`), for a payment that came
 * before its customer's event: its email, its metadata.referral_code and when it was created.
 * A deleted or unknown customer answers nothing to record. `apiBase` points it at another
 * address (tests use a local fake).
 */
export async function stripeCustomer(options: {
  apiBase: string;
  apiKey: string;
  customerId: string;
  timeoutMs: number;
}): Promise<FetchedCustomer> {
  const stripe = stripeClient(options);
  let customer: Awaited<ReturnType<typeof stripe.customers.retrieve>>;
  try {
    customer = await stripe.customers.retrieve(options.customerId);
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404) return {};
    throw error;
  }
  if ("deleted" in customer && customer.deleted) return {};
  const referralCode = customer.metadata?.[referralMetadataKey]?.trim();
  return {
    email: customer.email ?? undefined,
    referralCode: referralCode || undefined,
    createdAt: typeof customer.created === "number" ? new Date(customer.created * 1000) : undefined,
  };
}
