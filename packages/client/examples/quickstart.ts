/**
 * The README walk-through in TypeScript: program settings, affiliates, tracking, a refund,
 * approval and a payout, every page of a list, a webhook received and verified, an erasure.
 *
 *   AFFILIATE_API_URL=http://127.0.0.1:8080 AFFILIATE_API_KEY=sk_live_… npm run --silent example -w @affiliate/client
 *
 * (the key from `npm run --silent admin -- products create --name Acme`; the project's Node 24
 * runs the TypeScript as it is). A test runs it against a started mesh with a fresh product.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { AffiliateClient, ConflictError, verifyWebhook } from "@affiliate/client";

const baseUrl = process.env.AFFILIATE_API_URL ?? "http://127.0.0.1:8080";
const apiKey = process.env.AFFILIATE_API_KEY;
if (!apiKey) throw new Error("Set AFFILIATE_API_KEY to the product's secret key (sk_live_…)");

const client = new AffiliateClient({ baseUrl, apiKey });
const log = (...parts: unknown[]) => console.log(...parts);

// 1. Program settings: 25% commission for a customer's first 12 months, a 14-day hold, payouts from $10.
await client.program.update({
  commission_rate_bps: 2500,
  max_commission_months: 12,
  hold_days: 14,
  payout_minimum_cents: 1000,
});

// 2. An affiliate, and one recruited by her (her sponsor earns level-2 commissions).
const { partnership } = await client.affiliates.register({
  email: "ada@example.com",
  name: "Ada",
  referralCode: "ADA",
});
const bulk = await client.affiliates.bulkRegister({
  notify: false,
  affiliates: [{ email: "grace@example.com", sponsorReferralCode: "ADA" }, { email: "bad" }],
});
log("bulk:", bulk.summary);

// 3. Every affiliate, page after page (newest first): the iterator follows the cursor.
for await (const affiliate of client.affiliates.list({ limit: 1 })) {
  log("affiliate:", affiliate.id, affiliate.referral_code, affiliate.status);
}

// 4. A click and a payment. A payment with external_id is safe to retry, so the client retries
//    it after an unknown outcome; amounts may be numbers or bigints.
await client.events.track({ type: "click", referral_code: "ADA" });
const payment = await client.events.track({
  type: "payment",
  referral_code: "ADA",
  amount_cents: 10_000n,
  external_id: "ch_1",
  customer_email: "c@example.com",
});
const commissionId = payment.data.commissions[0]?.id;
if (!commissionId) throw new Error("The payment earned no commission");
log("payment:", payment.data.id, "commission", commissionId, payment.data.commissions[0]?.amount_cents);

// 5. The affiliate with her stats (sums are exact bigints), and the program's KPIs.
const ada = await client.affiliates.get(partnership.id);
log("earned_cents:", ada.data.stats.earned_cents);
const stats = await client.stats.get({ period: "30d" });
log("revenue_cents:", stats.data.revenue_cents);

// 6. A partial refund. The client sends an Idempotency-Key (its own unless given one), so a retry
//    never refunds twice; the same key again answers the stored outcome.
const refund = await client.refunds.create(
  { external_id: "ch_1", refund_amount_cents: 2500, reason: "downgrade" },
  { idempotencyKey: "refund-ch_1-1" },
);
log("refund: commission", refund.data.previous_commission_cents, "->", refund.data.new_commission_cents);

// 7. Approve the commission before its hold ends, then pay out.
await client.commissions.update(commissionId, { action: "approve" });
const generated = await client.payouts.generate();
const payoutId = generated.data[0]?.id;
if (!payoutId) throw new Error("No payout was generated");
await client.payouts.update(payoutId, { action: "approve" });
const paid = await client.payouts.update(payoutId, { action: "mark_paid", reference: "tr_123" });
log("payout:", paid.data.id, paid.data.status, paid.data.amount_cents);

// 8. A webhook: a local receiver takes one delivery, verified with the endpoint's secret.
const receiver = await receiveOneDelivery();
const webhook = await client.webhooks.create({ url: receiver.url, events: ["commission.refunded"] });
await client.refunds.create({ external_id: "ch_1", refund_amount_cents: 1000, reason: "downgrade" });
const delivery = await receiver.delivery;
// The raw bytes as received: a re-serialised body would no longer match its signature.
const event = verifyWebhook(delivery.body, delivery.headers, webhook.data.secret);
if (event.type === "commission.refunded") log("webhook verified:", event.type, event.data.id, event.data.amount_cents);

// 9. Errors are typed: refunding what is left twice over is a conflict.
try {
  await client.refunds.create({ external_id: "ch_1" });
  await client.refunds.create({ external_id: "ch_1" });
} catch (error) {
  if (!(error instanceof ConflictError)) throw error;
  log("conflict:", error.error, error.details);
}

// 10. Erase the customer, then read the receipt.
const erased = await client.customers.erase({ email: "  C@Example.com " });
const receipt = await client.customers.erasures.get(erased.data.erasure_id);
log("erasure:", receipt.data.id, receipt.data.status);
log("done");

/** A local HTTP endpoint that answers 200 to the first POST it receives and closes. */
async function receiveOneDelivery() {
  let deliver: (delivery: { body: Buffer; headers: IncomingMessage["headers"] }) => void = () => {};
  const delivery = new Promise<{ body: Buffer; headers: IncomingMessage["headers"] }>((resolve) => {
    deliver = resolve;
  });
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    response.end();
    server.close();
    deliver({ body: Buffer.concat(chunks), headers: request.headers });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, delivery };
}
