/**
 * Contract section 17 in integrations: Stripe's events in any order still earn their commission,
 * a visitor id or a mapped promotion code attributes a checkout's customer, and each commission
 * says how it was attributed.
 */
import { createServer, type Server } from "node:http";
import { StripeEventOutcome } from "@affiliate/proto/integrations";
import { EventType } from "@affiliate/proto/ledger";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customerWaitMs } from "../src/domain/apply-payment.js";
import { stripeEventsSince } from "../src/providers/stripe/events-api.js";
import { replacePromotionCodes } from "../src/store/customers.js";
import { connectedProgram, deliver, fixtures, type Harness, startHarness, stripeEvent, unique } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const level1Of = async (program: { productId: string; partnershipId: string }) =>
  (
    await h.ledger.listCommissions({
      productId: program.productId,
      partnershipId: program.partnershipId,
      pageSize: 100,
    })
  ).commissions.filter((c) => c.level === 1);

const outcomeOf = async (productId: string, eventId: string) => {
  const events = (await h.integrations.listStripeEvents({ productId, pageSize: 100 })).events;
  const event = events.find((e) => e.id === eventId);
  return { outcome: StripeEventOutcome[event?.outcome ?? 0], detail: event?.detail ?? "" };
};

/** The signup the ledger recorded for a customer: when, and how it was attributed. */
const signupOf = async (customerId: string) => {
  const [row] = await h.ledgerSql<{ occurredAt: Date; attribution: string | null }[]>`
    select occurred_at, attribution from tracking_events where event_type = 'signup' and provider_customer_id = ${customerId}`;
  return row;
};

/** A subscription checkout's completed session, the customer it made, and its first invoice. */
function subscriptionCheckout(extra: Record<string, unknown>) {
  const customer = { id: unique("cus"), email: `${unique("c")}@example.com` };
  const session = {
    id: unique("cs"),
    object: "checkout.session",
    mode: "subscription",
    payment_status: "paid",
    status: "complete",
    amount_total: 9900,
    currency: "usd",
    customer: customer.id,
    customer_details: { email: customer.email },
    subscription: unique("sub"),
    invoice: unique("in"),
    metadata: {},
    created: Math.floor(Date.now() / 1000) - 30,
    livemode: true,
    ...extra,
  };
  return { customer, session, invoice: { ...fixtures.invoice(customer, 9900), id: session.invoice as string } };
}

describe("events out of order", () => {
  it("an invoice.paid before its customer.created waits, then earns its commission when the customer arrives", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    // The customer was created just now, after the invoice's paid time: the signup must still precede it.
    const late = { ...customer, created: Math.floor(Date.now() / 1000) + 60 };
    const invoice = fixtures.invoice(customer, 6000);
    const paid = stripeEvent("invoice.paid", invoice);
    await deliver(h, program, paid);
    await h.drain();
    expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "WAITING" });
    expect((await outcomeOf(program.productId, paid.id)).detail).toContain(customer.id);
    expect(await level1Of(program)).toEqual([]);

    await deliver(h, program, stripeEvent("customer.created", late));
    await h.drain();
    const [commission] = await level1Of(program);
    expect([Number(commission?.paymentAmountCents), commission?.attribution]).toEqual([6000, "metadata"]);
    expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "APPLIED" });
    const signup = await signupOf(customer.id);
    expect(signup?.occurredAt.getTime()).toBe((invoice.status_transitions.paid_at as number) * 1000);
  });

  it("a waiting invoice whose customer never comes is recorded unattributed after 10 minutes", async () => {
    const program = await connectedProgram(h);
    const invoice = fixtures.invoice({ id: unique("cus"), email: `${unique("c")}@example.com` }, 2500);
    const paid = stripeEvent("invoice.paid", invoice);
    await deliver(h, program, paid);
    await h.drain();
    expect((await outcomeOf(program.productId, paid.id)).outcome).toBe("WAITING");
    const before = h.now.value;
    h.now.value = new Date(before.getTime() + customerWaitMs + 1000);
    try {
      await h.drain();
      expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "APPLIED" });
      expect((await outcomeOf(program.productId, paid.id)).detail).toContain("no commission");
    } finally {
      h.now.value = before;
    }
  });

  it("with an API key, a payment before its customer reads the customer from Stripe at once", async () => {
    const program = await connectedProgram(h, { apiKey: "rk_test_customers" });
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    h.fetchCustomer = async (apiKey, customerId) => {
      expect([apiKey, customerId]).toEqual(["rk_test_customers", customer.id]);
      return { email: customer.email, referralCode: program.code, createdAt: new Date(customer.created * 1000) };
    };
    try {
      const paid = stripeEvent("invoice.paid", fixtures.invoice(customer, 4200));
      await deliver(h, program, paid);
      await h.drain();
      expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "APPLIED" });
      const [commission] = await level1Of(program);
      expect([Number(commission?.paymentAmountCents), commission?.attribution]).toEqual([4200, "metadata"]);
      // Its customer.created, delivered later, records nothing more.
      const created = stripeEvent("customer.created", customer);
      await deliver(h, program, created);
      await h.drain();
      expect((await outcomeOf(program.productId, created.id)).outcome).toBe("IGNORED");
    } finally {
      h.fetchCustomer = async () => ({});
    }
  });

  it("a customer seen without a referral lets its invoices through at once", async () => {
    const program = await connectedProgram(h);
    const customer = { ...fixtures.customer(program.code, `${unique("c")}@example.com`), metadata: {} };
    await deliver(h, program, stripeEvent("customer.created", customer));
    await h.drain();
    const paid = stripeEvent("invoice.paid", fixtures.invoice(customer, 1000));
    await deliver(h, program, paid);
    await h.drain();
    expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "APPLIED" });
  });
});

describe("reconciliation", () => {
  let fake: Server;
  let listed: unknown[] = [];
  beforeAll(async () => {
    // Stripe's GET /v1/events: newest first, two per page.
    fake = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://fake");
      const after = url.searchParams.get("starting_after");
      const start = after ? listed.findIndex((e) => (e as { id: string }).id === after) + 1 : 0;
      const page = listed.slice(start, start + 2);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({ object: "list", url: "/v1/events", has_more: start + 2 < listed.length, data: page }),
      );
    });
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    const address = fake.address();
    const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    h.eventsSince = (apiKey, since) => stripeEventsSince({ apiBase: base, apiKey, since, timeoutMs: 5000 });
  });
  afterAll(async () => {
    await new Promise((resolve) => fake.close(resolve));
  });

  it("applies a missed customer.created and its invoice.paid oldest first: the invoice earns its commission", async () => {
    const program = await connectedProgram(h, { apiKey: "rk_test_reconcileorder" });
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const created = { ...stripeEvent("customer.created", customer), created: Math.floor(Date.now() / 1000) - 120 };
    const paid = {
      ...stripeEvent("invoice.paid", fixtures.invoice(customer, 7700)),
      created: Math.floor(Date.now() / 1000) - 60,
    };
    listed = [paid, created];
    const report = await h.integrations.reconcileStripe({ productId: program.productId });
    expect({ fetched: report.fetched, new: report.new }).toEqual({ fetched: 2n, new: 2n });
    await h.drain();
    const [commission] = await level1Of(program);
    expect([Number(commission?.paymentAmountCents), commission?.attribution]).toEqual([7700, "metadata"]);
    expect((await outcomeOf(program.productId, paid.id)).detail).toContain("commissions");
  });
});

describe("attribution without merchant code", () => {
  it("a checkout whose client_reference_id is a visitor id attributes its customer; the invoice's commission says visitor", async () => {
    const program = await connectedProgram(h);
    const visitorId = `vis_${unique("v")}`;
    const clickedAt = timestampFromDate(new Date(Date.now() - 5 * 60_000));
    await h.ledger.track({
      productId: program.productId,
      type: EventType.CLICK,
      referralCode: program.code,
      visitorId,
      occurredAt: clickedAt,
    });
    const { customer, session, invoice } = subscriptionCheckout({ client_reference_id: visitorId });
    await deliver(h, program, stripeEvent("checkout.session.completed", session));
    await deliver(h, program, stripeEvent("invoice.paid", invoice));
    await h.drain();
    const [commission] = await level1Of(program);
    expect([Number(commission?.paymentAmountCents), commission?.attribution]).toEqual([9900, "visitor"]);
    expect((await signupOf(customer.id))?.attribution).toBe("visitor");
  });

  it("a mapped promotion code attributes the invoice, and beats the visitor's cookie", async () => {
    const program = await connectedProgram(h);
    const other = await h.partners.registerAffiliate({
      productId: program.productId,
      registration: { email: `${unique("aff")}@example.com` },
      notify: false,
    });
    const code = unique("SPRING").toUpperCase();
    await replacePromotionCodes(h.sql, {
      productId: program.productId,
      partnershipId: program.partnershipId,
      referralCode: program.code,
      codes: [code],
    });
    // The visitor clicked the other affiliate's link, then paid with the first one's code.
    const visitorId = `vis_${unique("v")}`;
    await h.ledger.track({
      productId: program.productId,
      type: EventType.CLICK,
      referralCode: other.partnership?.referralCode ?? "",
      visitorId,
      occurredAt: timestampFromDate(new Date(Date.now() - 5 * 60_000)),
    });
    const { session, invoice } = subscriptionCheckout({
      client_reference_id: visitorId,
      discounts: [{ coupon: "co_1", promotion_code: { id: unique("promo"), code: code.toLowerCase() } }],
    });
    await deliver(h, program, stripeEvent("checkout.session.completed", session));
    await deliver(
      h,
      program,
      stripeEvent("invoice.paid", { ...invoice, discount: { promotion_code: { id: "promo_x", code } } }),
    );
    await h.drain();
    const [commission] = await level1Of(program);
    expect([Number(commission?.paymentAmountCents), commission?.attribution]).toEqual([9900, "coupon"]);
  });
});
