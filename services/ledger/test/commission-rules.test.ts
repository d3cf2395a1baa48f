import { defaultFraudSettings } from "@affiliate/contract-rules";
import {
  type Commission,
  CommissionSkipped,
  type PreviewedCommission,
  RuleSource,
  RuleType,
} from "@affiliate/proto/ledger";
import { CommissionType } from "@affiliate/proto/partners";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { addCalendarMonths, decideCommissions } from "../src/domain/commission-rules.js";
import { customerKey, nextPayment } from "../src/domain/number-payments.js";
import type { Attribution } from "../src/domain/types.js";
import {
  EventType,
  failure,
  type Harness,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  trackBatch,
  unique,
  uniqueEmail,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());
// Tests that move the ledger's clock put it back.
const realNow = new Date();
afterEach(() => {
  h.clock.now = realNow;
});

const utc = (iso: string) => new Date(iso);

describe("calendar months (contract section 12)", () => {
  it("keeps the day and time of day, clamping a day the month lacks to its last day", () => {
    expect(addCalendarMonths(utc("2024-01-31T10:00:00.000Z"), 1)).toEqual(utc("2024-02-29T10:00:00.000Z")); // leap
    expect(addCalendarMonths(utc("2023-01-31T10:00:00.000Z"), 1)).toEqual(utc("2023-02-28T10:00:00.000Z"));
    expect(addCalendarMonths(utc("2024-03-31T23:59:59.999Z"), 1)).toEqual(utc("2024-04-30T23:59:59.999Z"));
    expect(addCalendarMonths(utc("2024-02-29T00:00:00.000Z"), 12)).toEqual(utc("2025-02-28T00:00:00.000Z"));
    expect(addCalendarMonths(utc("2024-02-29T00:00:00.000Z"), 48)).toEqual(utc("2028-02-29T00:00:00.000Z"));
    expect(addCalendarMonths(utc("2024-01-31T10:00:00.000Z"), 2)).toEqual(utc("2024-03-31T10:00:00.000Z")); // not Mar 29
    expect(addCalendarMonths(utc("2024-11-15T08:00:00.000Z"), 3)).toEqual(utc("2025-02-15T08:00:00.000Z")); // year
    expect(addCalendarMonths(utc("2024-01-15T08:00:00.000Z"), 120)).toEqual(utc("2034-01-15T08:00:00.000Z"));
  });
});

describe("decideCommissions, the one place the rules apply", () => {
  const program: Attribution["program"] = {
    commissionType: "percent",
    commissionRateBps: 2000,
    commissionFlatCents: 0,
    tier2RateBps: 500,
    maxCommissionMonths: null,
    maxCommissionPayments: null,
    holdDays: 30,
    attributionWindowDays: 60,
    fraud: defaultFraudSettings,
  };
  const partnership = (over: Partial<Attribution> = {}): Attribution => ({
    partnershipId: "ptn_a",
    referralCode: "AAA",
    status: "active",
    activeSponsorPartnershipId: null,
    program,
    commissionOverride: null,
    affiliateEmail: null,
    ...over,
  });
  const at = utc("2024-05-01T00:00:00.000Z");
  const payment = { amountCents: 10_000, occurredAt: at };
  const first = nextPayment(undefined, at);

  it("inherits each field the override leaves out", () => {
    const decided = decideCommissions(
      payment,
      partnership({
        program: { ...program, maxCommissionPayments: 2 },
        commissionOverride: { commissionRateBps: 4000 },
      }),
      undefined,
      { paymentNumber: 3, firstPaymentAt: at },
    );
    expect(decided).toEqual({ commissions: [], skipped: "max_commission_payments" }); // the program's limit
    const earned = decideCommissions(
      payment,
      partnership({ commissionOverride: { commissionRateBps: 4000 } }),
      undefined,
      first,
    );
    expect(earned.commissions[0]).toMatchObject({
      amountCents: 4000,
      rule: { source: "partnership", type: "percent", rateBps: 4000, flatCents: null },
    });
  });

  it("uses the program's source when the override only sets a limit, and an override's null limit lifts the program's", () => {
    const limited = partnership({
      program: { ...program, maxCommissionMonths: 1 },
      commissionOverride: { maxCommissionMonths: null },
    });
    const late = { amountCents: 10_000, occurredAt: addCalendarMonths(at, 30) };
    const decided = decideCommissions(late, limited, undefined, { paymentNumber: 31, firstPaymentAt: at });
    expect(decided.commissions[0]?.rule).toMatchObject({ source: "program", rateBps: 2000, paymentNumber: 31 });
  });

  it("caps a flat amount at the payment and pays level 2 at the sponsor's own tier2 rate", () => {
    const sponsor = partnership({
      partnershipId: "ptn_s",
      referralCode: "SSS",
      commissionOverride: { tier2RateBps: 1000 },
    });
    const decided = decideCommissions(
      { amountCents: 3000, occurredAt: at },
      partnership({ program: { ...program, commissionType: "flat", commissionFlatCents: 5000 } }),
      sponsor,
      first,
    );
    expect(
      decided.commissions.map((c) => [c.level, c.partnershipId, c.amountCents, c.rule.source, c.rule.type]),
    ).toEqual([
      [1, "ptn_a", 3000, "program", "flat"],
      [2, "ptn_s", 300, "partnership", "percent"],
    ]);
    expect(decided.commissions[0]?.rule).toMatchObject({ flatCents: 5000, rateBps: null });
  });

  it("gives level 2 nothing where level 1 earned nothing, and an inactive partnership nothing with no reason", () => {
    const sponsor = partnership({ partnershipId: "ptn_s" });
    const limited = partnership({ program: { ...program, maxCommissionPayments: 1 } });
    expect(decideCommissions(payment, limited, sponsor, { paymentNumber: 2, firstPaymentAt: at })).toEqual({
      commissions: [],
      skipped: "max_commission_payments",
    });
    expect(decideCommissions(payment, partnership({ status: "removed" }), sponsor, first)).toEqual({
      commissions: [],
      skipped: null,
    });
  });

  it("knows a customer by provider id before email, and no customer without either", () => {
    expect(customerKey({ providerCustomerId: "cus_1", customerEmail: "a@example.com" })).toBe(
      customerKey({ providerCustomerId: "cus_1", customerEmail: "b@example.com" }),
    );
    expect(customerKey({ customerEmail: "a@example.com" })).not.toBe(
      customerKey({ providerCustomerId: "a@example.com" }),
    );
    expect(customerKey({})).toBeUndefined();
    expect(customerKey({ customerEmail: "a@example.com" })).not.toContain("example");
  });
});

/** A live payment for the customer, with the answer's first commission read back. */
async function pay(
  productId: string,
  code: string,
  customer: { customerEmail?: string; providerCustomerId?: string },
  amountCents: number,
  occurredAt?: Date,
  extra: { testMode?: boolean; externalId?: string } = {},
) {
  const { event } = await track(h, {
    productId,
    type: EventType.PAYMENT,
    referralCode: code,
    amountCents: BigInt(amountCents),
    externalId: extra.externalId ?? unique("ch"),
    occurredAt,
    testMode: extra.testMode ?? false,
    ...customer,
  });
  if (!event) throw new Error("no event");
  const levelOne = event.commissions.find((c) => c.level === 1);
  const commission = levelOne?.id
    ? (await h.ledger.getCommission({ productId, commissionId: levelOne.id })).commission
    : undefined;
  return { event, commission };
}

const ruleOf = (commission: Commission | PreviewedCommission | undefined) => {
  const rule = commission?.rule;
  return rule && { ...rule, firstPaymentAt: rule.firstPaymentAt && timestampDate(rule.firstPaymentAt) };
};

describe("a month limit", () => {
  it("earns less than N calendar months after the first payment, anchored on a month end, across a leap day", async () => {
    h.clock.now = utc("2025-02-20T00:00:00.000Z");
    const productId = await newProduct(h, { maxCommissionMonths: 1 });
    const aff = await newAffiliate(h, productId);
    const customer = { customerEmail: uniqueEmail() };
    const first = await pay(productId, aff.code, customer, 10_000, utc("2024-01-31T10:00:00.000Z"));
    expect(ruleOf(first.commission)).toMatchObject({
      source: RuleSource.PROGRAM,
      type: RuleType.PERCENT,
      rateBps: 2000,
      paymentNumber: 1,
      firstPaymentAt: utc("2024-01-31T10:00:00.000Z"),
    });
    // Jan 31 + 1 month = Feb 29 2024 (leap year, clamped): the last moment before it earns.
    const inside = await pay(productId, aff.code, customer, 10_000, utc("2024-02-29T09:59:59.999Z"));
    expect(inside.event.commissions).toHaveLength(1);
    expect(ruleOf(inside.commission)).toMatchObject({
      paymentNumber: 2,
      firstPaymentAt: utc("2024-01-31T10:00:00.000Z"),
    });
    const atEnd = await pay(productId, aff.code, customer, 10_000, utc("2024-02-29T10:00:00.000Z"));
    expect(atEnd.event.commissions).toEqual([]);
    expect(atEnd.event.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_MONTHS);
  });

  it("ends 12 months on, where the 13th monthly charge of a subscription started on the 31st falls", async () => {
    h.clock.now = utc("2025-02-20T00:00:00.000Z");
    const productId = await newProduct(h, { maxCommissionMonths: 12 });
    const aff = await newAffiliate(h, productId);
    const customer = { providerCustomerId: unique("cus") };
    const anchor = utc("2024-01-31T10:00:00.000Z");
    const earned: number[] = [];
    for (let month = 0; month <= 12; month++) {
      const { event } = await pay(productId, aff.code, customer, 1000, addCalendarMonths(anchor, month));
      if (event.commissions.length > 0) earned.push(month);
      else expect(event.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_MONTHS);
    }
    expect(earned).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]); // Jan 31 2024 … Dec 31 2024
  });

  it("keeps its anchor when the first payment is refunded in full", async () => {
    h.clock.now = utc("2025-02-20T00:00:00.000Z");
    const productId = await newProduct(h, { maxCommissionMonths: 2 });
    const aff = await newAffiliate(h, productId);
    const customer = { customerEmail: uniqueEmail() };
    const first = await pay(productId, aff.code, customer, 10_000, utc("2024-10-15T00:00:00.000Z"));
    await h.ledger.refund({ productId, identification: { case: "commissionId", value: first.commission?.id ?? "" } });
    const later = await pay(productId, aff.code, customer, 10_000, utc("2024-12-15T00:00:00.000Z"));
    expect(later.event.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_MONTHS);
    const between = await pay(productId, aff.code, customer, 10_000, utc("2024-12-14T23:59:59.000Z"));
    expect(ruleOf(between.commission)).toMatchObject({
      paymentNumber: 3,
      firstPaymentAt: utc("2024-10-15T00:00:00.000Z"),
    });
  });
});

describe("a payment limit", () => {
  it("earns for the first N payments of a customer, then stores, attributes and counts the rest, and says why", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 2, holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const customer = { providerCustomerId: unique("cus"), customerEmail: uniqueEmail() };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await pay(productId, aff.code, customer, 5000));
    expect(answers.map((a) => a.event.commissions.length)).toEqual([1, 1, 0]);
    expect(answers.map((a) => a.event.commissionSkipped)).toEqual([
      CommissionSkipped.UNSPECIFIED,
      CommissionSkipped.UNSPECIFIED,
      CommissionSkipped.MAX_COMMISSION_PAYMENTS,
    ]);
    expect(answers[2]?.event.partnershipId).toBe(aff.id);
    // Another email with the same provider id is the same customer; another provider id is not.
    const sameCustomer = await pay(productId, aff.code, { ...customer, customerEmail: uniqueEmail() }, 5000);
    expect(sameCustomer.event.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_PAYMENTS);
    const other = await pay(productId, aff.code, { customerEmail: customer.customerEmail }, 5000);
    expect(ruleOf(other.commission)?.paymentNumber).toBe(1);
    // A payment with neither id nor email is its own first payment, every time.
    for (let i = 0; i < 3; i++) expect((await pay(productId, aff.code, {}, 5000)).event.commissions).toHaveLength(1);

    const stats = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id] });
    expect(stats.stats[aff.id]?.conversions).toBe(8n); // every payment converted, earning or not
    const summary = await h.ledger.getStats({ productId, period: 2 });
    expect(summary.current?.revenueCents).toBe(40_000n);
    expect(summary.current?.commissionsCents).toBe(6000n); // 6 earning payments x 1000
  });

  it("answers a replayed skipped payment with its reason, and counts it once", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 1 });
    const aff = await newAffiliate(h, productId);
    const customer = { customerEmail: uniqueEmail() };
    await pay(productId, aff.code, customer, 5000);
    const externalId = unique("ch");
    const skipped = await pay(productId, aff.code, customer, 5000, undefined, { externalId });
    const replayed = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 5000n,
      externalId,
      ...customer,
    });
    expect(replayed.replayed).toBe(true);
    expect(replayed.event?.id).toBe(skipped.event.id);
    expect(replayed.event?.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_PAYMENTS);
    const [counter] = await h.sql<{ payments: number }[]>`
      select payments from customer_payment_counters where product_id = ${productId}`;
    expect(counter?.payments).toBe(2);
  });

  it("gives exactly N commissions to payments of one customer racing for the last numbers", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 3 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const customer = { customerEmail: uniqueEmail() };
    const racing = await Promise.all(Array.from({ length: 12 }, () => pay(productId, aff.code, customer, 1000)));
    expect(racing.filter((r) => r.event.commissions.length > 0)).toHaveLength(3);
    expect(racing.filter((r) => r.event.commissionSkipped === CommissionSkipped.MAX_COMMISSION_PAYMENTS)).toHaveLength(
      9,
    );
    expect(racing.flatMap((r) => r.event.commissions.map((c) => c.level)).sort()).toEqual([1, 1, 1, 2, 2, 2]);
    const numbers = racing.flatMap((r) => (r.commission?.rule ? [r.commission.rule.paymentNumber] : []));
    expect(numbers.sort()).toEqual([1, 2, 3]);
  });

  it("numbers the payments of a batch mixing customers in order, each customer on its own", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 2 });
    const aff = await newAffiliate(h, productId);
    const [a, b] = [uniqueEmail("a"), uniqueEmail("b")];
    await pay(productId, aff.code, { customerEmail: a }, 1000); // a's first, recorded before
    const order = [a, b, a, b, b, a];
    const { results } = await trackBatch(
      h,
      order.map((customerEmail) => ({
        productId,
        type: EventType.PAYMENT,
        referralCode: aff.code,
        customerEmail,
        amountCents: 1000n,
        externalId: unique("ch"),
      })),
    );
    const events = results.map((r) => (r.outcome.case === "tracked" ? r.outcome.value.event : undefined));
    expect(events.map((e) => e?.commissions.length)).toEqual([1, 1, 0, 1, 0, 0]);
    expect(events.map((e) => e?.commissionSkipped)).toEqual([0, 0, 2, 0, 2, 2]);
    const counters = await h.sql<{ payments: number }[]>`
      select payments from customer_payment_counters where product_id = ${productId} order by payments`;
    expect(counters.map((c) => c.payments)).toEqual([3, 4]);
  });
});

describe("frozen rules", () => {
  it("refunds a commission made before a rate change by scaling its own amount", async () => {
    const productId = await newProduct(h, { commissionRateBps: 2000 });
    const aff = await newAffiliate(h, productId);
    const { commission } = await pay(productId, aff.code, { customerEmail: uniqueEmail() }, 10_000);
    await h.partners.updateProgram({
      productId,
      commissionRateBps: 5000,
      commissionType: CommissionType.FLAT,
      commissionFlatCents: 7n,
    });
    const { result } = await h.ledger.refund({
      productId,
      identification: { case: "commissionId", value: commission?.id ?? "" },
      refundAmountCents: 5000n,
    });
    expect(result?.newCommissionCents).toBe(1000n); // 2000 x 5000/10000, not 5000 x …
    const after = (await h.ledger.getCommission({ productId, commissionId: commission?.id ?? "" })).commission;
    expect(ruleOf(after)).toMatchObject({ type: RuleType.PERCENT, rateBps: 2000 });
    expect(after?.rule?.flatCents).toBeUndefined();
  });

  it("caps a flat amount at the payment and keeps the amount it was capped from", async () => {
    const productId = await newProduct(h, { commissionType: CommissionType.FLAT, commissionFlatCents: 5000n });
    const aff = await newAffiliate(h, productId);
    const small = await pay(productId, aff.code, { customerEmail: uniqueEmail() }, 3000);
    expect(small.commission?.amountCents).toBe(3000n);
    expect(ruleOf(small.commission)).toMatchObject({ type: RuleType.FLAT, flatCents: 5000n });
    expect(small.commission?.rule?.rateBps).toBeUndefined();
    const large = await pay(productId, aff.code, { customerEmail: uniqueEmail() }, 100_000);
    expect(large.commission?.amountCents).toBe(5000n);
  });

  it("inherits the override field by field and names the partnership as the source", async () => {
    const productId = await newProduct(h, { commissionRateBps: 2000, maxCommissionPayments: 1 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    await h.partners.updatePartnership({
      productId,
      partnershipId: aff.id,
      commissionOverrideChange: { case: "setCommissionOverride", value: { commissionRateBps: 4000 } },
    });
    await h.partners.updatePartnership({
      productId,
      partnershipId: sponsor.id,
      commissionOverrideChange: { case: "setCommissionOverride", value: { tier2RateBps: 1500 } },
    });
    const customer = { customerEmail: uniqueEmail() };
    const { event, commission } = await pay(productId, aff.code, customer, 10_000);
    expect(event.commissions.map((c) => c.amountCents)).toEqual([4000n, 1500n]);
    expect(ruleOf(commission)).toMatchObject({ source: RuleSource.PARTNERSHIP, rateBps: 4000 });
    const levelTwo = (await h.ledger.getCommission({ productId, commissionId: event.commissions[1]?.id ?? "" }))
      .commission;
    expect(ruleOf(levelTwo)).toMatchObject({
      source: RuleSource.PARTNERSHIP,
      type: RuleType.PERCENT,
      rateBps: 1500,
      paymentNumber: 1,
    });
    // The payment limit is still the program's.
    expect((await pay(productId, aff.code, customer, 10_000)).event.commissionSkipped).toBe(
      CommissionSkipped.MAX_COMMISSION_PAYMENTS,
    );
  });
});

describe("previews", () => {
  /** Previews a payment, records it, and expects the recorded commissions to be exactly the preview's. */
  async function previewThenRecord(
    productId: string,
    code: string,
    customer: { customerEmail?: string; providerCustomerId?: string },
    amountCents: number,
    occurredAt?: Date,
  ) {
    const payment = {
      productId,
      type: EventType.PAYMENT,
      referralCode: code,
      amountCents: BigInt(amountCents),
      occurredAt: occurredAt && { seconds: BigInt(Math.floor(occurredAt.getTime() / 1000)), nanos: 0 },
      externalId: unique("ignored"),
      ...customer,
    };
    const preview = await h.ledger.previewCommissions({ payment });
    const { event } = await h.ledger.track(payment);
    const recorded = await Promise.all(
      (event?.commissions ?? []).map(
        async (c) => (await h.ledger.getCommission({ productId, commissionId: c.id })).commission,
      ),
    );
    expect(
      recorded.map((c) => ({
        level: c?.level,
        partnershipId: c?.partnershipId,
        amountCents: c?.amountCents,
        rule: ruleOf(c),
      })),
    ).toEqual(
      preview.commissions.map((c) => ({
        level: c.level,
        partnershipId: c.partnershipId,
        amountCents: c.amountCents,
        rule: ruleOf(c),
      })),
    );
    expect(event?.commissionSkipped).toBe(preview.commissionSkipped);
    expect(event?.partnershipId).toBe(preview.partnershipId);
    return preview;
  }

  it("equals what the payment recorded next earns, across rule kinds", async () => {
    h.clock.now = utc("2025-02-20T00:00:00.000Z");
    const productId = await newProduct(h, { maxCommissionMonths: 3, maxCommissionPayments: 3 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const customer = { providerCustomerId: unique("cus") };
    const first = await previewThenRecord(productId, aff.code, customer, 10_000, utc("2024-10-31T12:00:00.000Z"));
    expect(first.commissions).toHaveLength(2);
    await h.partners.updatePartnership({
      productId,
      partnershipId: aff.id,
      commissionOverrideChange: {
        case: "setCommissionOverride",
        value: { commissionType: CommissionType.FLAT, commissionFlatCents: 2500n },
      },
    });
    const flat = await previewThenRecord(productId, aff.code, customer, 2000, utc("2024-11-30T12:00:00.000Z"));
    expect(flat.commissions[0]?.amountCents).toBe(2000n); // capped
    const pastMonths = await previewThenRecord(productId, aff.code, customer, 2000, utc("2025-01-31T12:00:00.000Z"));
    expect(pastMonths.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_MONTHS);
    const pastPayments = await previewThenRecord(productId, aff.code, customer, 2000, utc("2025-01-30T12:00:00.000Z"));
    expect(pastPayments.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_PAYMENTS);
    const unattributed = await h.ledger.previewCommissions({
      payment: { productId, type: EventType.PAYMENT, amountCents: 100n, customerEmail: uniqueEmail() },
    });
    expect(unattributed).toMatchObject({ partnershipId: "", commissions: [], commissionSkipped: 0 });
  });

  it("writes nothing and refuses what is not a valid live payment", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 1 });
    const aff = await newAffiliate(h, productId);
    const payment = {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 100n,
      customerEmail: uniqueEmail(),
    };
    const written = async () =>
      (
        await h.sql<{ events: number; counters: number; outbox: number }[]>`
          select (select count(*) from tracking_events where product_id = ${productId})::int as events,
                 (select count(*) from customer_payment_counters where product_id = ${productId})::int as counters,
                 (select count(*) from outbox)::int as outbox`
      )[0];
    const before = await written();
    for (let i = 0; i < 3; i++) {
      expect((await h.ledger.previewCommissions({ payment })).commissions).toHaveLength(1);
    }
    expect(await written()).toEqual(before);
    expect(before).toMatchObject({ events: 0, counters: 0 });
    expect((await failure(h.ledger.previewCommissions({ payment: { ...payment, type: EventType.CLICK } })))?.code).toBe(
      Code.InvalidArgument,
    );
    expect((await failure(h.ledger.previewCommissions({ payment: { ...payment, amountCents: 0n } })))?.code).toBe(
      Code.InvalidArgument,
    );
    expect((await failure(h.ledger.previewCommissions({ payment: { ...payment, testMode: true } })))?.code).toBe(
      Code.InvalidArgument,
    );
  });

  it("sandbox payments preview against the live history and count toward no limit", async () => {
    const productId = await newProduct(h, { maxCommissionPayments: 1 });
    const aff = await newAffiliate(h, productId);
    const customer = { customerEmail: uniqueEmail() };
    for (let i = 0; i < 2; i++) {
      const sandbox = await pay(productId, aff.code, customer, 1000, undefined, { testMode: true });
      expect(sandbox.event.commissions.map((c) => [c.id, c.amountCents])).toEqual([["", 200n]]);
    }
    const live = await pay(productId, aff.code, customer, 1000);
    expect(ruleOf(live.commission)?.paymentNumber).toBe(1); // the sandbox payments counted nothing
    const sandboxAfter = await pay(productId, aff.code, customer, 1000, undefined, { testMode: true });
    expect(sandboxAfter.event.commissions).toEqual([]);
    expect(sandboxAfter.event.commissionSkipped).toBe(CommissionSkipped.MAX_COMMISSION_PAYMENTS);
    const [counter] = await h.sql<{ payments: number }[]>`
      select payments from customer_payment_counters where product_id = ${productId}`;
    expect(counter?.payments).toBe(1);
  });
});
