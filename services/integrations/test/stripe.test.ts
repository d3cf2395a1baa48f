import { createServer, type Server } from "node:http";
import { approveDueCommissions } from "@affiliate/ledger/domain/approve-due-commissions";
import { collectMetrics } from "@affiliate/platform";
import { StripeEventOutcome } from "@affiliate/proto/integrations";
import { CommissionStatus, HoldReason } from "@affiliate/proto/ledger";
import { parseMetrics, sumOf } from "@affiliate/testing";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stripeEventsSince } from "../src/providers/stripe/events-api.js";
import { wakeWaitersOf } from "../src/store/events.js";
import {
  connectedProgram,
  deliver,
  fixtures,
  type Harness,
  logLines,
  startHarness,
  stripeEvent,
  unique,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const commissionsOf = async (program: { productId: string; partnershipId: string }) =>
  (
    await h.ledger.listCommissions({
      productId: program.productId,
      partnershipId: program.partnershipId,
      pageSize: 100,
    })
  ).commissions;

const eventsOf = async (productId: string) =>
  (await h.integrations.listStripeEvents({ productId, pageSize: 100 })).events;

const outcomeOf = async (productId: string, eventId: string) => {
  const event = (await eventsOf(productId)).find((e) => e.id === eventId);
  return { outcome: StripeEventOutcome[event?.outcome ?? 0], detail: event?.detail };
};

/**
 * A connected program and a payment recorded unattributed at once: a customer nobody referred
 * (its own event says so) paid an invoice of 4,000 cents.
 */
async function paymentThatEarnedNothing() {
  const program = await connectedProgram(h);
  const customer = { ...fixtures.customer(program.code, `${unique("c")}@example.com`), metadata: {} };
  const unreferred = fixtures.invoice(customer, 4000);
  await deliver(h, program, stripeEvent("customer.created", customer));
  await deliver(h, program, stripeEvent("invoice.paid", unreferred));
  await h.drain();
  return { program, unreferred };
}

const codeOf = async (call: Promise<unknown>) => {
  try {
    await call;
    return "ok";
  } catch (error) {
    return Code[ConnectError.from(error).code];
  }
};

describe("the receiver", () => {
  it("refuses bad signatures, stale timestamps, unknown connections and malformed JSON, storing nothing", async () => {
    const program = await connectedProgram(h);
    const event = stripeEvent("invoice.paid", fixtures.invoice({ id: unique("cus"), email: "x@example.com" }, 100));
    // Stale by the receiver's clock (the harness's, set when it started), not by the wall clock.
    const stale = Math.floor(h.now.value.getTime() / 1000) - 301;
    expect(await codeOf(deliver(h, program, event, { secret: "whsec_other" }))).toBe("InvalidArgument");
    expect(await codeOf(deliver(h, program, event, { timestamp: stale }))).toBe("InvalidArgument");
    expect(await codeOf(deliver(h, { ...program, connectionId: "scn_unknown" }, event))).toBe("NotFound");
    expect(await codeOf(deliver(h, program, event, { payload: '{"id": "evt_1", ' }))).toBe("InvalidArgument");
    expect(await codeOf(deliver(h, program, event, { payload: '{"object": "customer"}' }))).toBe("InvalidArgument");
    expect(await eventsOf(program.productId)).toEqual([]);
  });

  it("keeps verifying the replaced webhook secret for 24 hours after a second PUT", async () => {
    const program = await connectedProgram(h);
    const rolled = `whsec_${unique("rolled").replace(/_/g, "")}`;
    await h.integrations.connectStripe({ productId: program.productId, webhookSecret: rolled });
    const event = () => stripeEvent("customer.created", { id: unique("cus"), object: "customer", metadata: {} });
    expect((await deliver(h, program, event(), { secret: rolled })).redelivered).toBe(false);
    expect((await deliver(h, program, event())).redelivered).toBe(false);
    h.now.value = new Date(Date.now() + 24 * 60 * 60 * 1000 + 1000);
    const timestamp = Math.floor(h.now.value.getTime() / 1000);
    try {
      expect(await codeOf(deliver(h, program, event(), { timestamp }))).toBe("InvalidArgument");
      expect(await codeOf(deliver(h, program, event(), { timestamp, secret: rolled }))).toBe("ok");
    } finally {
      h.now.value = new Date();
    }
    const { connection } = await h.integrations.getStripeConnection({ productId: program.productId });
    expect(connection?.eventsReceived).toBe(3n);
    expect(connection?.hasApiKey).toBe(false);
  });

  it("after a disconnect the path answers NOT_FOUND", async () => {
    const program = await connectedProgram(h);
    await h.integrations.disconnectStripe({ productId: program.productId });
    const event = stripeEvent("customer.created", { id: unique("cus"), object: "customer", metadata: {} });
    expect(await codeOf(deliver(h, program, event))).toBe("NotFound");
    expect(await codeOf(h.integrations.getStripeConnection({ productId: program.productId }))).toBe("NotFound");
  });
});

describe("secrets", () => {
  it("are never answered, stored in the clear or logged, after a connect, a roll and an event that fails", async () => {
    const apiKey = `rk_live_${unique("plainkey").replace(/_/g, "")}`;
    const program = await connectedProgram(h, { apiKey });
    const rolled = `whsec_${unique("plainrolled").replace(/_/g, "")}`;
    const secrets = [program.secret, rolled, apiKey];
    const linesBefore = logLines.length;
    const answers: unknown[] = [
      await h.integrations.connectStripe({ productId: program.productId, webhookSecret: rolled, apiKey }),
      await h.integrations.getStripeConnection({ productId: program.productId }),
    ];
    // A bad signature, and an event whose first attempt meets an unavailable ledger (logged).
    const refused = stripeEvent("customer.created", fixtures.customer(program.code, "x@x.io"));
    expect(await codeOf(deliver(h, program, refused, { secret: "whsec_someoneelse" }))).toBe("InvalidArgument");
    const paid = stripeEvent("invoice.paid", fixtures.invoice({ id: unique("cus"), email: "y@x.io" }, 1000));
    // No worker while it is stored: the running one would apply it with the real ledger first.
    await h.restartWorker({ stopped: true });
    await deliver(h, program, paid, { secret: rolled });
    await h.restartWorker({
      ledger: (real) => ({
        ...real,
        track: async () => {
          throw new ConnectError("ledger down", Code.Unavailable);
        },
      }),
    });
    try {
      await h.drain();
    } finally {
      await h.restartWorker();
    }
    answers.push(await h.integrations.listStripeEvents({ productId: program.productId, pageSize: 100 }));

    const answered = JSON.stringify(answers, (_key, value) => (typeof value === "bigint" ? String(value) : value));
    expect(answered).toContain(program.connectionId);
    const logged = logLines.slice(linesBefore).join("");
    expect(logged).toContain(paid.id);
    const stored = (
      await h.sql<{ row: string }[]>`
        select c::text as row from stripe_connections c where product_id = ${program.productId}
        union all select e::text from stripe_events e where product_id = ${program.productId}`
    )
      .map((r) => r.row)
      .join("\n");
    expect(stored).toContain(program.connectionId);
    // bytea columns read as hex: a secret stored in the clear would show as its bytes' hex.
    for (const secret of secrets) {
      const hex = Buffer.from(secret).toString("hex");
      expect({ answered: answered.includes(secret), logged: logged.includes(secret) }).toEqual({
        answered: false,
        logged: false,
      });
      expect({ stored: stored.includes(secret), storedAsBytes: stored.includes(hex) }).toEqual({
        stored: false,
        storedAsBytes: false,
      });
    }
  });
});

describe("payments", () => {
  it("a referred customer's paid invoice, each event delivered twice and out of order, is one payment and one commission", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = fixtures.invoice(customer, 12_345);
    const created = stripeEvent("customer.created", customer);
    const paid = stripeEvent("invoice.paid", invoice);
    expect((await deliver(h, program, created)).redelivered).toBe(false);
    expect((await deliver(h, program, paid)).redelivered).toBe(false);
    expect((await deliver(h, program, paid)).redelivered).toBe(true);
    expect((await deliver(h, program, created)).redelivered).toBe(true);
    await h.drain();
    // A customer.updated repeating the referral records nothing more.
    await deliver(h, program, stripeEvent("customer.updated", customer));
    await h.drain();

    const commissions = await commissionsOf(program);
    expect(commissions.map((c) => [c.level, Number(c.paymentAmountCents), Number(c.amountCents)])).toEqual([
      [1, 12_345, 2469],
    ]);
    expect(await outcomeOf(program.productId, paid.id)).toMatchObject({ outcome: "APPLIED" });
    const events = await eventsOf(program.productId);
    expect(events.map((e) => [e.type, StripeEventOutcome[e.outcome]])).toEqual([
      ["customer.updated", "IGNORED"],
      ["invoice.paid", "APPLIED"],
      ["customer.created", "APPLIED"],
    ]);
    expect(events[1]?.commissionIds).toEqual([commissions[0]?.id]);
  });

  it("a payment's events in reverse order, each delivered twice, are one payment, one commission, exact amounts", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = { ...fixtures.invoice(customer, 9_999), metadata: { referral_code: program.code } };
    const created = stripeEvent("customer.created", customer);
    const paid = stripeEvent("invoice.paid", invoice);
    const refunded = stripeEvent("charge.refunded", fixtures.charge(invoice, 3_333));
    // Stripe's order is created, paid, refunded: they arrive newest first, and each twice.
    for (const event of [refunded, paid, created, refunded, paid, created]) await deliver(h, program, event);
    await h.drain();

    const commissions = await commissionsOf(program);
    // 20% of 9,999 is 1,999.8 -> 2,000; two thirds of the payment left: 1,333.2 -> 1,333.
    expect(commissions.map((c) => [c.level, Number(c.paymentAmountCents), Number(c.amountCents)])).toEqual([
      [1, 9_999, 1_333],
    ]);
    const payments = await h.ledgerSql`
      select amount_cents, refunded_cents from tracking_events
      where product_id = ${program.productId} and event_type = 'payment'`;
    expect(payments).toEqual([{ amountCents: 9_999, refundedCents: 3_333 }]);
    expect((await eventsOf(program.productId)).map((e) => StripeEventOutcome[e.outcome])).toEqual([
      "APPLIED",
      "APPLIED",
      "APPLIED",
    ]);
  });

  it("the same invoice reported through the API and through Stripe is one commission", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = fixtures.invoice(customer, 5000);
    await h.ledger.track({
      productId: program.productId,
      type: 3,
      referralCode: program.code,
      customerEmail: customer.email,
      externalId: invoice.id,
      amountCents: 5000n,
    });
    const paid = stripeEvent("invoice.paid", invoice);
    await deliver(h, program, paid);
    await h.drain();
    expect((await commissionsOf(program)).filter((c) => c.level === 1)).toHaveLength(1);
    expect((await outcomeOf(program.productId, paid.id)).detail).toContain("recorded already");
  });

  it("a one-time checkout paid later (async_payment_succeeded) counts once; a subscription checkout only records the referral", async () => {
    const program = await connectedProgram(h);
    const session = {
      id: unique("cs"),
      object: "checkout.session",
      mode: "payment",
      amount_total: 2000,
      currency: "usd",
      customer: unique("cus"),
      customer_details: { email: `${unique("c")}@example.com` },
      client_reference_id: program.code,
      payment_intent: unique("pi"),
      invoice: null,
      subscription: null,
      metadata: {},
    };
    const unpaid = stripeEvent("checkout.session.completed", { ...session, payment_status: "unpaid" });
    const succeeded = stripeEvent("checkout.session.async_payment_succeeded", { ...session, payment_status: "paid" });
    await deliver(h, program, unpaid);
    await deliver(h, program, succeeded);
    await h.drain();
    expect(await outcomeOf(program.productId, unpaid.id)).toMatchObject({ outcome: "IGNORED" });
    // Both events name one payment and take its lock in turn: the second can still be finishing,
    // woken by the first's commit, when the drain returns. Applied it must be, and once.
    await expect
      .poll(() => outcomeOf(program.productId, succeeded.id), { timeout: 10_000 })
      .toMatchObject({ outcome: "APPLIED" });

    const subscription = stripeEvent("checkout.session.completed", {
      ...session,
      id: unique("cs"),
      mode: "subscription",
      payment_status: "paid",
      customer: unique("cus"),
      subscription: unique("sub"),
      invoice: unique("in"),
      metadata: { referral_code: program.code },
    });
    await deliver(h, program, subscription);
    await h.drain();
    expect(await outcomeOf(program.productId, subscription.id)).toMatchObject({
      outcome: "APPLIED",
      detail: `Signup recorded, attributed to partnership ${program.partnershipId}`,
    });
    expect((await commissionsOf(program)).map((c) => Number(c.paymentAmountCents))).toEqual([2000]);
  });

  it("a one-time checkout paid now, delivered twice, is one payment with its commission", async () => {
    const program = await connectedProgram(h);
    const paymentIntent = unique("pi");
    const completed = stripeEvent("checkout.session.completed", {
      id: unique("cs"),
      object: "checkout.session",
      mode: "payment",
      status: "complete",
      payment_status: "paid",
      amount_subtotal: 4200,
      amount_total: 4200,
      currency: "usd",
      customer: unique("cus"),
      customer_details: { email: `${unique("c")}@example.com` },
      client_reference_id: null,
      payment_intent: paymentIntent,
      invoice: null,
      subscription: null,
      metadata: { referral_code: program.code },
      created: Math.floor(Date.now() / 1000) - 10,
    });
    await deliver(h, program, completed);
    await deliver(h, program, completed);
    await h.drain();

    const commissions = await commissionsOf(program);
    expect(commissions.map((c) => [c.level, Number(c.paymentAmountCents), Number(c.amountCents)])).toEqual([
      [1, 4200, 840],
    ]);
    expect(await outcomeOf(program.productId, completed.id)).toEqual({
      outcome: "APPLIED",
      detail: `Payment ${paymentIntent} of 4200 cents recorded; commissions ${commissions[0]?.id}`,
    });
    const payments = await h.ledgerSql`
      select external_id, amount_cents from tracking_events
      where product_id = ${program.productId} and event_type = 'payment'`;
    expect(payments).toEqual([{ externalId: paymentIntent, amountCents: 4200 }]);
  });

  it("renewals past the rule's max_commission_payments are applied, earn nothing, and say why", async () => {
    const program = await connectedProgram(h);
    await h.partners.updateProgram({ productId: program.productId, maxCommissionPayments: 2 });
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    await deliver(h, program, stripeEvent("customer.created", customer));
    // One subscription's invoices: the first and two renewals.
    const renewals = [0, 1, 2].map((renewal) =>
      stripeEvent("invoice.paid", {
        ...fixtures.invoice(customer, 1000),
        billing_reason: renewal === 0 ? "subscription_create" : "subscription_cycle",
      }),
    );
    for (const event of renewals) await deliver(h, program, event);
    await h.drain();

    expect((await commissionsOf(program)).map((c) => [c.level, Number(c.amountCents)])).toEqual([
      [1, 200],
      [1, 200],
    ]);
    const third = renewals[2]?.data.object as { id: string };
    expect(await outcomeOf(program.productId, renewals[2]?.id ?? "")).toEqual({
      outcome: "APPLIED",
      detail: `Payment ${third.id} of 1000 cents recorded; no commission: the customer's max_commission_payments payments have earned already`,
    });
  });

  it("a renewal max_commission_months after the customer's first payment earns nothing, and says why", async () => {
    const program = await connectedProgram(h);
    await h.partners.updateProgram({ productId: program.productId, maxCommissionMonths: 1 });
    const customer = {
      ...fixtures.customer(program.code, `${unique("c")}@example.com`),
      created: Math.floor(Date.now() / 1000) - 50 * 86400,
    };
    await deliver(h, program, stripeEvent("customer.created", customer));
    const paidAt = (daysAgo: number) => ({ paid_at: Math.floor(Date.now() / 1000) - daysAgo * 86400 });
    const first = { ...fixtures.invoice(customer, 1000), status_transitions: paidAt(40) };
    const renewal = { ...fixtures.invoice(customer, 1000), status_transitions: paidAt(1) };
    const renewed = stripeEvent("invoice.paid", renewal);
    await deliver(h, program, stripeEvent("invoice.paid", first));
    await deliver(h, program, renewed);
    await h.drain();

    expect((await commissionsOf(program)).map((c) => Number(c.paymentAmountCents))).toEqual([1000]);
    expect(await outcomeOf(program.productId, renewed.id)).toEqual({
      outcome: "APPLIED",
      detail: `Payment ${renewal.id} of 1000 cents recorded; no commission: the customer's first payment is max_commission_months ago or more`,
    });
  });

  it("an amount in another currency than the program's fails and records nothing", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const paid = stripeEvent("invoice.paid", fixtures.invoice(customer, 1000, "eur"));
    await deliver(h, program, paid);
    await h.drain();
    expect(await outcomeOf(program.productId, paid.id)).toEqual({
      outcome: "FAILED",
      detail: "The amount is in EUR, the program's currency is USD: nothing recorded",
    });
    expect(await commissionsOf(program)).toEqual([]);
  });

  it("a test-mode event is sandbox data: recorded, no commission", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const paid = stripeEvent("invoice.paid", fixtures.invoice(customer, 1000), { livemode: false });
    await deliver(h, program, paid);
    await h.drain();
    expect((await outcomeOf(program.productId, paid.id)).detail).toContain("as sandbox data");
    expect(await commissionsOf(program)).toEqual([]);
  });
});

describe("stripe_events_total", () => {
  it("counts each recorded outcome as /metrics serves it: applied, ignored, failed", async () => {
    const count = async (outcome: string) =>
      sumOf(parseMetrics(await collectMetrics()), "stripe_events_total", { outcome });
    const before = { applied: await count("applied"), ignored: await count("ignored"), failed: await count("failed") };
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    await deliver(h, program, stripeEvent("customer.created", customer));
    await deliver(h, program, stripeEvent("invoice.paid", fixtures.invoice(customer, 1000)));
    await deliver(h, program, stripeEvent("invoice.paid", fixtures.invoice(customer, 1000, "eur")));
    await h.drain();
    await deliver(h, program, stripeEvent("customer.updated", customer));
    await h.drain();
    expect({
      applied: (await count("applied")) - before.applied,
      ignored: (await count("ignored")) - before.ignored,
      failed: (await count("failed")) - before.failed,
    }).toEqual({ applied: 2, ignored: 1, failed: 1 });
  });
});

describe("refunds", () => {
  it("three partial refunds, then a redelivery of the first, refund exactly the cumulative total", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = fixtures.invoice(customer, 10_000);
    await deliver(h, program, stripeEvent("invoice.paid", { ...invoice, customer: null }));
    await deliver(h, program, stripeEvent("customer.created", customer));
    await h.drain();
    // The payment came before its customer's referral: unattributed. Pay again with a referral.
    const referred = { ...fixtures.invoice(customer, 10_000), metadata: { referral_code: program.code } };
    await deliver(h, program, stripeEvent("invoice.paid", referred));
    await h.drain();

    const first = stripeEvent("charge.refunded", fixtures.charge(referred, 1000));
    await deliver(h, program, first);
    await deliver(h, program, stripeEvent("charge.refunded", fixtures.charge(referred, 3500)));
    await deliver(h, program, stripeEvent("charge.refunded", fixtures.charge(referred, 6000)));
    await h.drain();
    // A redelivery of the first (a new event id for the same cumulative 1000, as a resend after a
    // retention window would be) and an exact repeat refund nothing more.
    await deliver(h, program, { ...first, id: unique("evt") });
    await deliver(h, program, first);
    await h.drain();

    const [commission] = (await commissionsOf(program)).filter((c) => c.level === 1);
    expect(Number(commission?.amountCents)).toBe(800); // 20% of the 4,000 cents left
    const refunds = (await eventsOf(program.productId)).filter((e) => e.type === "charge.refunded");
    expect(refunds.map((e) => StripeEventOutcome[e.outcome])).toEqual(["APPLIED", "APPLIED", "APPLIED", "APPLIED"]);
    expect(refunds[0]?.detail).toContain("it was already");
  });

  it("a refund before its payment waits, and is applied when the payment arrives", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = { ...fixtures.invoice(customer, 8000), metadata: { referral_code: program.code } };
    // The new API versions' charge names no invoice: the payment intent leads to it.
    const { invoice: _, ...charge } = fixtures.charge(invoice, 8000);
    const refunded = stripeEvent("charge.refunded", { ...charge, customer: null });
    await deliver(h, program, refunded);
    await h.drain();
    expect(await outcomeOf(program.productId, refunded.id)).toEqual({
      outcome: "WAITING",
      detail: `Waiting for payment ${invoice.payment_intent}`,
    });
    await deliver(h, program, stripeEvent("invoice.paid", invoice));
    await h.drain();
    expect(await outcomeOf(program.productId, refunded.id)).toMatchObject({ outcome: "APPLIED" });
    const [commission] = await commissionsOf(program);
    expect([Number(commission?.amountCents), commission?.status]).toEqual([0, 5]);
  });

  it("a refund of a payment that earned no commission is ignored at once, saying why (the ledger's reason)", async () => {
    const { program, unreferred } = await paymentThatEarnedNothing();
    const refunded = stripeEvent("charge.refunded", fixtures.charge(unreferred, 1500));
    await deliver(h, program, refunded);
    await h.drain();
    // Not "waiting" for a payment the ledger has: the ledger's NOT_FOUND carries the reason no_commission.
    expect(await outcomeOf(program.productId, refunded.id)).toEqual({
      outcome: "IGNORED",
      detail: `Payment ${unreferred.id} earned no commission: nothing to refund`,
    });
  });

  it("a refund whose payment never comes fails after 72 hours, and can be retried", async () => {
    const program = await connectedProgram(h);
    const refunded = stripeEvent("charge.refunded", {
      id: unique("ch"),
      object: "charge",
      amount_refunded: 100,
      currency: "usd",
      payment_intent: unique("pi"),
    });
    await deliver(h, program, refunded);
    await h.drain();
    h.now.value = new Date(Date.now() + 73 * 60 * 60 * 1000);
    try {
      await h.drain();
    } finally {
      h.now.value = new Date();
    }
    expect((await outcomeOf(program.productId, refunded.id)).outcome).toBe("FAILED");
    const { event } = await h.integrations.retryStripeEvent({ productId: program.productId, eventId: refunded.id });
    expect(event?.outcome).not.toBe(StripeEventOutcome.UNSPECIFIED);
    expect(
      await codeOf(h.integrations.retryStripeEvent({ productId: program.productId, eventId: unique("evt") })),
    ).toBe("NotFound");
  });
});

describe("disputes", () => {
  /** A referred customer's paid invoice of `amountCents`, applied; with its level-1 commission. */
  async function paidInvoice(program: Awaited<ReturnType<typeof connectedProgram>>, amountCents = 10_000) {
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = { ...fixtures.invoice(customer, amountCents), metadata: { referral_code: program.code } };
    await deliver(h, program, stripeEvent("invoice.paid", invoice));
    await h.drain();
    const [commission] = await commissionsOf(program);
    return { invoice, commissionId: commission?.id ?? "" };
  }

  const commissionOf = async (productId: string, commissionId: string) => {
    const { commission } = await h.ledger.getCommission({ productId, commissionId });
    return {
      status: CommissionStatus[commission?.status ?? 0],
      amountCents: Number(commission?.amountCents),
      holdReason: HoldReason[commission?.holdReason ?? 0],
    };
  };

  it("an opened dispute holds the commission past its hold period; won, the hold lifts and the sweep approves", async () => {
    const program = await connectedProgram(h);
    await h.partners.updateProgram({ productId: program.productId, holdDays: 30 });
    const { invoice, commissionId } = await paidInvoice(program);
    const opened = stripeEvent("charge.dispute.created", fixtures.dispute(invoice, "needs_response"));
    await deliver(h, program, opened);
    await h.drain();
    expect(await outcomeOf(program.productId, opened.id)).toEqual({
      outcome: "APPLIED",
      detail: `Dispute ${opened.data.object.id} opened on payment ${invoice.id}: commissions ${commissionId} held until it closes`,
    });
    const afterHoldPeriod = new Date(Date.now() + 31 * 24 * 60 * 60 * 1000);
    await approveDueCommissions(h.ledgerSql, afterHoldPeriod);
    expect(await commissionOf(program.productId, commissionId)).toEqual({
      status: "PENDING",
      amountCents: 2000,
      holdReason: "DISPUTE",
    });

    const won = stripeEvent("charge.dispute.closed", { ...opened.data.object, status: "won" });
    await deliver(h, program, won);
    await h.drain();
    expect((await outcomeOf(program.productId, won.id)).detail).toBe(
      `Dispute ${opened.data.object.id} won: the hold on payment ${invoice.id}'s commissions is lifted`,
    );
    await approveDueCommissions(h.ledgerSql, afterHoldPeriod);
    expect(await commissionOf(program.productId, commissionId)).toEqual({
      status: "APPROVED",
      amountCents: 2000,
      holdReason: "UNSPECIFIED",
    });
  });

  it("an opened dispute closed as warning_closed lifts the hold, saying how it closed", async () => {
    const program = await connectedProgram(h);
    await h.partners.updateProgram({ productId: program.productId, holdDays: 30 });
    const { invoice, commissionId } = await paidInvoice(program);
    const dispute = fixtures.dispute(invoice, "warning_needs_response");
    await deliver(h, program, stripeEvent("charge.dispute.created", dispute));
    await h.drain();
    expect((await commissionOf(program.productId, commissionId)).holdReason).toBe("DISPUTE");

    const closed = stripeEvent("charge.dispute.closed", { ...dispute, status: "warning_closed" });
    await deliver(h, program, closed);
    await h.drain();
    expect(await outcomeOf(program.productId, closed.id)).toEqual({
      outcome: "APPLIED",
      detail: `Dispute ${dispute.id} closed without a chargeback (warning_closed): the hold on payment ${invoice.id}'s commissions is lifted`,
    });
    await approveDueCommissions(h.ledgerSql, new Date(Date.now() + 31 * 24 * 60 * 60 * 1000));
    expect(await commissionOf(program.productId, commissionId)).toEqual({
      status: "APPROVED",
      amountCents: 2000,
      holdReason: "UNSPECIFIED",
    });
  });

  it("a lost dispute refunds the payment in full: the commission is voided, once", async () => {
    const program = await connectedProgram(h);
    const { invoice, commissionId } = await paidInvoice(program, 12_345);
    const dispute = fixtures.dispute(invoice, "needs_response");
    await deliver(h, program, stripeEvent("charge.dispute.created", dispute));
    const lost = stripeEvent("charge.dispute.closed", { ...dispute, status: "lost" });
    await deliver(h, program, lost);
    await h.drain();
    // Redelivered (an exact repeat, and a resend with a new event id): nothing more.
    await deliver(h, program, lost);
    const resent = stripeEvent("charge.dispute.closed", { ...dispute, status: "lost" });
    await deliver(h, program, resent);
    await h.drain();
    expect(await outcomeOf(program.productId, lost.id)).toEqual({
      outcome: "APPLIED",
      detail: `Dispute ${dispute.id} lost: payment ${invoice.id} refunded in full (12345 cents now)`,
    });
    expect((await outcomeOf(program.productId, resent.id)).detail).toBe(
      `Dispute ${dispute.id} of payment ${invoice.id} was closed already: nothing changed`,
    );
    expect(await commissionOf(program.productId, commissionId)).toEqual({
      status: "REFUNDED",
      amountCents: 0,
      holdReason: "UNSPECIFIED",
    });
    const refunds = await h.ledgerSql`
      select r.amount_cents, r.reason from refunds r join tracking_events e on e.id = r.event_id
      where e.external_id = ${invoice.id}`;
    expect(refunds).toEqual([{ amountCents: 12_345, reason: "dispute lost" }]);
  });

  it("a dispute replayed twice and out of order (closed before opened): the hold ends lifted, applied once", async () => {
    const program = await connectedProgram(h);
    const { invoice, commissionId } = await paidInvoice(program);
    const dispute = fixtures.dispute(invoice, "needs_response");
    const opened = stripeEvent("charge.dispute.created", dispute);
    const closed = stripeEvent("charge.dispute.closed", { ...dispute, status: "warning_closed" });
    // The closing is received, so applied, first (one dispute's events are applied in the order
    // received), then both are delivered again.
    for (const event of [closed, opened, closed, opened]) {
      await deliver(h, program, event);
      await h.drain();
    }
    await deliver(h, program, { ...opened, id: unique("evt") });
    await h.drain();
    expect(await commissionOf(program.productId, commissionId)).toEqual({
      status: "APPROVED",
      amountCents: 2000,
      holdReason: "UNSPECIFIED",
    });
    const disputes = (await eventsOf(program.productId)).filter((e) => e.type.startsWith("charge.dispute"));
    expect(disputes.map((e) => [e.type, StripeEventOutcome[e.outcome], e.detail])).toEqual([
      [
        "charge.dispute.created",
        "APPLIED",
        `Dispute ${dispute.id} of payment ${invoice.id} was recorded already: nothing changed`,
      ],
      [
        "charge.dispute.created",
        "APPLIED",
        `Dispute ${dispute.id} of payment ${invoice.id} was recorded already: nothing changed`,
      ],
      [
        "charge.dispute.closed",
        "APPLIED",
        `Dispute ${dispute.id} closed without a chargeback (warning_closed): the hold on payment ${invoice.id}'s commissions is lifted`,
      ],
    ]);
    const balances = (await h.ledger.listPayableBalances({ productId: program.productId })).balances;
    expect(balances.map((b) => Number(b.amountCents))).toEqual([2000]);
  });

  /** A dispute of a referred customer's invoice that has not arrived, received and tried once. */
  async function disputeBeforeItsPayment() {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = { ...fixtures.invoice(customer, 5000), metadata: { referral_code: program.code } };
    const opened = stripeEvent("charge.dispute.created", fixtures.dispute(invoice, "needs_response"));
    await deliver(h, program, opened);
    await h.drain();
    return { program, invoice, opened };
  }

  it("a dispute before its payment waits, and holds the commission once the payment arrives", async () => {
    const { program, invoice, opened } = await disputeBeforeItsPayment();
    expect(await outcomeOf(program.productId, opened.id)).toEqual({
      outcome: "WAITING",
      detail: `Waiting for payment ${invoice.payment_intent}`,
    });
    await deliver(h, program, stripeEvent("invoice.paid", invoice));
    await h.drain();
    expect((await outcomeOf(program.productId, opened.id)).outcome).toBe("APPLIED");
    const [commission] = await commissionsOf(program);
    expect(HoldReason[commission?.holdReason ?? 0]).toBe("DISPUTE");
    expect((await h.ledger.listPayableBalances({ productId: program.productId })).balances).toEqual([]);
  });

  it("a dispute's opening woken by its payment goes before its closing, received later and not tried yet", async () => {
    const { program, invoice, opened } = await disputeBeforeItsPayment();
    expect((await outcomeOf(program.productId, opened.id)).outcome).toBe("WAITING");
    const openedAt = h.now.value;
    await h.restartWorker({ stopped: true });
    try {
      h.now.value = new Date(openedAt.getTime() + 1000);
      const closed = stripeEvent("charge.dispute.closed", { ...opened.data.object, status: "won" });
      await deliver(h, program, closed);
      // The payment is recorded a second later, and wakes the opening.
      await wakeWaitersOf(h.sql, program.productId, [invoice.payment_intent], new Date(openedAt.getTime() + 2000));
      // The worker claims a group's events in this order, one at a time.
      const claimOrder = await h.sql<{ eventId: string }[]>`
        select event_id from stripe_events
        where product_id = ${program.productId} and type like 'charge.dispute.%'
        order by next_attempt_at, id`;
      expect(claimOrder.map((row) => row.eventId)).toEqual([opened.id, closed.id]);
    } finally {
      h.now.value = openedAt;
      await h.restartWorker();
    }
  });

  it("a dispute of a payment that earned nothing is ignored, saying why", async () => {
    const { program, unreferred } = await paymentThatEarnedNothing();
    const dispute = fixtures.dispute(unreferred, "needs_response");
    const opened = stripeEvent("charge.dispute.created", dispute);
    const lost = stripeEvent("charge.dispute.closed", { ...dispute, status: "lost" });
    await deliver(h, program, opened);
    await deliver(h, program, lost);
    await h.drain();
    expect(await outcomeOf(program.productId, opened.id)).toEqual({
      outcome: "IGNORED",
      detail: `Dispute ${dispute.id} opened; payment ${unreferred.id} earned no commission: nothing to hold`,
    });
    expect(await outcomeOf(program.productId, lost.id)).toEqual({
      outcome: "IGNORED",
      detail: `Dispute ${dispute.id} closed; payment ${unreferred.id} earned no commission: nothing to refund`,
    });
  });

  it("a test-mode dispute is sandbox data: ignored", async () => {
    const program = await connectedProgram(h);
    const invoice = fixtures.invoice({ id: unique("cus"), email: "x@example.com" }, 1000);
    const opened = stripeEvent("charge.dispute.created", fixtures.dispute(invoice, "needs_response"), {
      livemode: false,
    });
    await deliver(h, program, opened);
    await h.drain();
    expect(await outcomeOf(program.productId, opened.id)).toEqual({
      outcome: "IGNORED",
      detail: "A test-mode payment is sandbox data: nothing to hold",
    });
  });
});

describe("durability", () => {
  it("an event stored while no worker runs, and one whose first attempt died after the ledger's commit, are applied once", async () => {
    const program = await connectedProgram(h);
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = { ...fixtures.invoice(customer, 20_000), metadata: { referral_code: program.code } };
    // The process is killed between storing and applying: the stored event waits for the next one.
    await h.restartWorker({ stopped: true });
    const paid = stripeEvent("invoice.paid", invoice);
    await deliver(h, program, paid);
    // The next process's first attempt reaches the ledger, then dies before recording the outcome.
    let crashes = 1;
    await h.restartWorker({
      ledger: (real) => ({
        ...real,
        async track(input) {
          const tracked = await real.track(input);
          if (crashes-- > 0) throw new ConnectError("connection lost after the commit", Code.Unavailable);
          return tracked;
        },
      }),
    });
    await h.drain();
    expect((await outcomeOf(program.productId, paid.id)).outcome).toBe("WAITING");
    h.now.value = new Date(Date.now() + 60_000);
    try {
      await h.drain();
    } finally {
      h.now.value = new Date();
    }
    expect((await outcomeOf(program.productId, paid.id)).outcome).toBe("APPLIED");
    expect((await commissionsOf(program)).filter((c) => c.level === 1).map((c) => Number(c.amountCents))).toEqual([
      4000,
    ]);
    await h.restartWorker();
  });
});

describe("reconciliation", () => {
  let fake: Server;
  let fakeEvents: unknown[] = [];
  let fakeBase = "";
  beforeAll(async () => {
    // A local fake of Stripe's GET /v1/events: the handled types, newest first, paged by starting_after.
    fake = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://fake");
      if (url.pathname !== "/v1/events" || request.headers.authorization !== "Bearer rk_test_reconcile") {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { type: "invalid_request_error", message: "Invalid API key" } }));
        return;
      }
      const after = url.searchParams.get("starting_after");
      const start = after ? fakeEvents.findIndex((e) => (e as { id: string }).id === after) + 1 : 0;
      const limit = Number(url.searchParams.get("limit") ?? 10);
      const page = fakeEvents.slice(start, start + Math.min(limit, 2));
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          object: "list",
          url: "/v1/events",
          has_more: start + page.length < fakeEvents.length,
          data: page,
        }),
      );
    });
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    const address = fake.address();
    fakeBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    h.eventsSince = (apiKey, since) => stripeEventsSince({ apiBase: fakeBase, apiKey, since, timeoutMs: 5000 });
  });
  afterAll(async () => {
    await new Promise((resolve) => fake.close(resolve));
  });

  it("recovers every event whose delivery was dropped, once", async () => {
    const program = await connectedProgram(h, { apiKey: "rk_test_reconcile" });
    const customer = fixtures.customer(program.code, `${unique("c")}@example.com`);
    const invoice = fixtures.invoice(customer, 30_000);
    const created = stripeEvent("customer.created", customer);
    const paid = stripeEvent("invoice.paid", invoice);
    const refunded = stripeEvent("charge.refunded", fixtures.charge(invoice, 10_000));
    // Only the first delivery arrived; Stripe lists all three, newest first.
    await deliver(h, program, created);
    fakeEvents = [refunded, paid, created];

    const report = await h.integrations.reconcileStripe({ productId: program.productId });
    expect({ fetched: report.fetched, new: report.new }).toEqual({ fetched: 3n, new: 2n });
    await h.drain();
    const again = await h.integrations.reconcileStripe({ productId: program.productId });
    expect({ fetched: again.fetched, new: again.new }).toEqual({ fetched: 3n, new: 0n });

    const [commission] = (await commissionsOf(program)).filter((c) => c.level === 1);
    expect([Number(commission?.paymentAmountCents), Number(commission?.amountCents)]).toEqual([30_000, 4000]);
    expect((await eventsOf(program.productId)).map((e) => StripeEventOutcome[e.outcome])).toEqual([
      "APPLIED",
      "APPLIED",
      "APPLIED",
    ]);
  });

  it("needs an API key", async () => {
    const program = await connectedProgram(h);
    expect(await codeOf(h.integrations.reconcileStripe({ productId: program.productId }))).toBe("FailedPrecondition");
  });
});

describe("erasure", () => {
  it("replaces the customer's email in the stored events, counted in the receipt; other customers keep theirs", async () => {
    const program = await connectedProgram(h);
    const email = `${unique("erased")}@example.com`;
    const kept = `${unique("kept")}@example.com`;
    const customer = fixtures.customer(program.code, email);
    await deliver(h, program, stripeEvent("customer.created", customer));
    await deliver(
      h,
      program,
      stripeEvent("invoice.paid", { ...fixtures.invoice(customer, 1000), customer_email: "ERASED@x" }),
    );
    await deliver(h, program, stripeEvent("invoice.paid", fixtures.invoice(customer, 1000)));
    await deliver(h, program, stripeEvent("customer.created", fixtures.customer(program.code, kept)));
    await h.drain();
    const subject = { productId: program.productId, email };
    const storesOf = (answer: { stores: { store: string; records: bigint }[] }) =>
      Object.fromEntries(answer.stores.map(({ store, records }) => [store, Number(records)]));
    expect(storesOf(await h.erasure.findCustomer(subject))).toEqual({ stripe_events: 2 });
    const erasureId = unique("ers");
    expect(storesOf(await h.erasure.eraseCustomer({ ...subject, erasureId }))).toEqual({ stripe_events: 2 });
    expect(storesOf(await h.erasure.eraseCustomer({ ...subject, erasureId }))).toEqual({ stripe_events: 2 });
    expect(storesOf(await h.erasure.findCustomer(subject))).toEqual({ stripe_events: 0 });
    expect(storesOf(await h.erasure.findCustomer({ ...subject, email: kept }))).toEqual({ stripe_events: 1 });
  });
});
