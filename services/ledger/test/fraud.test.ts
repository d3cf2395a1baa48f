import { defaultFraudSettings } from "@affiliate/contract-rules";
import { newId } from "@affiliate/platform";
import {
  CommissionFlaggedSchema,
  CommissionReviewedSchema,
  CommissionStatus,
  HoldReason,
  Period,
  ReviewDecision,
} from "@affiliate/proto/ledger";
import { FraudAction } from "@affiliate/proto/partners";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveDueCommissions } from "../src/domain/approve-due-commissions.js";
import { bot, duplicateClick, refundRate, selfReferral } from "../src/domain/fraud/signals.js";
import {
  EventType,
  failure,
  type Harness,
  invariantViolations,
  newProduct,
  startHarness,
  track,
  trackBatch,
  unique,
  uniqueEmail,
} from "./harness.js";

const minute = 60_000;
const chrome =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

describe("the signals, each with its evidence (pure)", () => {
  const at = new Date("2026-05-01T12:00:00.000Z");

  it("self_referral: the same email, or the same non-public domain; not another address at a public domain", () => {
    expect(selfReferral({ customerEmail: "ann@acme-corp.io", visitorId: null }, { email: "ann@acme-corp.io" })).toEqual(
      {
        signal: "self_referral",
        evidence: { match: "email" },
      },
    );
    expect(selfReferral({ customerEmail: "bob@acme-corp.io", visitorId: null }, { email: "ann@acme-corp.io" })).toEqual(
      {
        signal: "self_referral",
        evidence: { match: "email_domain", domain: "acme-corp.io" },
      },
    );
    expect(
      selfReferral({ customerEmail: "bob@gmail.com", visitorId: null }, { email: "ann@gmail.com" }),
    ).toBeUndefined();
    expect(
      selfReferral({ customerEmail: "bob@example.com", visitorId: null }, { email: "ann@example.com" }),
    ).toBeUndefined();
    expect(
      selfReferral(
        { customerEmail: null, visitorId: "vis_portal" },
        { email: "ann@gmail.com", portalVisitorIds: ["vis_portal"] },
      ),
    ).toEqual({ signal: "self_referral", evidence: { match: "portal_visitor", visitor_id: "vis_portal" } });
  });

  it("duplicate_click: the same visitor or address hash within the hour before; not 61 minutes later", () => {
    const counted = { id: "evt_first", visitorId: "vis_a", ipHash: "h1", occurredAt: at };
    const later = (minutes: number) => new Date(at.getTime() + minutes * minute);
    expect(duplicateClick({ visitorId: "vis_a", ipHash: null, occurredAt: later(59) }, [counted])).toEqual({
      signal: "duplicate_click",
      evidence: {
        matched_on: "visitor_id",
        counted_click_id: "evt_first",
        counted_click_at: at.toISOString(),
        window_minutes: 60,
      },
    });
    expect(duplicateClick({ visitorId: "vis_b", ipHash: "h1", occurredAt: later(30) }, [counted])?.evidence).toEqual(
      expect.objectContaining({ matched_on: "ip_hash" }),
    );
    expect(duplicateClick({ visitorId: "vis_a", ipHash: null, occurredAt: later(61) }, [counted])).toBeUndefined();
    expect(duplicateClick({ visitorId: "vis_b", ipHash: "h2", occurredAt: later(1) }, [counted])).toBeUndefined();
  });

  it("bot: crawlers, headless browsers and HTTP libraries; not a browser", () => {
    expect(bot("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")).toEqual({
      signal: "bot",
      evidence: { user_agent_token: "googlebot" },
    });
    expect(
      bot("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36"),
    ).toEqual({ signal: "bot", evidence: { user_agent_token: "headlesschrome" } });
    expect(bot("curl/8.5.0")?.evidence).toEqual({ user_agent_token: "curl" });
    expect(bot(chrome)).toBeUndefined();
    expect(
      bot("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"),
    ).toBeUndefined();
    expect(bot(null)).toBeUndefined();
  });

  it("refund_rate: above the threshold, exactly; not at it", () => {
    expect(refundRate({ paymentsCents: 10_000n, refundedCents: 5_001n }, 5000)).toEqual({
      signal: "refund_rate",
      evidence: {
        window_days: 30,
        payments_cents: "10000",
        refunded_cents: "5001",
        refund_rate_bps: 5001,
        threshold_bps: 5000,
      },
    });
    expect(refundRate({ paymentsCents: 10_000n, refundedCents: 5_000n }, 5000)).toBeUndefined();
    expect(refundRate({ paymentsCents: 0n, refundedCents: 0n }, 1)).toBeUndefined();
  });
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function affiliateWith(productId: string, email: string) {
  const { partnership } = await h.partners.registerAffiliate({ productId, registration: { email }, notify: false });
  return { id: partnership?.id ?? "", code: partnership?.referralCode ?? "" };
}

const pay = (productId: string, code: string, customerEmail: string, amountCents = 10_000n) =>
  track(h, {
    productId,
    type: EventType.PAYMENT,
    referralCode: code,
    amountCents,
    externalId: unique("pi"),
    customerEmail,
    occurredAt: new Date(h.clock.now.getTime() - 1000),
  });

const commission = async (productId: string, commissionId: string) =>
  (await h.ledger.getCommission({ productId, commissionId })).commission;

const payable = async (productId: string) =>
  (await h.ledger.listPayableBalances({ productId })).balances.map((b) => [b.partnershipId, Number(b.amountCents)]);

const review = (productId: string, commissionId: string, decision: ReviewDecision, note = "looked at it") =>
  h.ledger.reviewCommission({ productId, commissionId, decision, note, key: "sk_live_…abcd" });

const outboxOf = async (subject: string, commissionIds: string[]) => {
  const rows = await h.sql<
    { payload: Uint8Array }[]
  >`select payload from outbox where subject = ${subject} order by seq`;
  const schema = subject.endsWith("flagged") ? CommissionFlaggedSchema : CommissionReviewedSchema;
  return rows
    .map((row) => fromBinary(schema, row.payload))
    .filter((e) => commissionIds.includes(e.commission?.id ?? ""));
};

describe("a self-referral held for review (contract section 18)", () => {
  it("is pending with its flag, survives the sweep and payouts untouched, and is paid only after approval", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const email = `${unique("ann")}@acme-corp.io`;
    const aff = await affiliateWith(productId, email);
    const { event } = await pay(productId, aff.code, email);
    const id = event?.commissions[0]?.id ?? "";
    expect(event?.commissions.map((c) => c.status)).toEqual([CommissionStatus.PENDING]);

    const held = await commission(productId, id);
    expect([held?.status, held?.holdReason, held?.review]).toEqual([
      CommissionStatus.PENDING,
      HoldReason.REVIEW,
      undefined,
    ]);
    expect(held?.flags.map((f) => [f.signal, JSON.parse(f.evidenceJson)])).toEqual([
      ["self_referral", { match: "email" }],
    ]);

    await approveDueCommissions(h.sql, new Date(h.clock.now.getTime() + 400 * 24 * 3600 * 1000));
    expect((await commission(productId, id))?.status).toBe(CommissionStatus.PENDING);
    expect(await payable(productId)).toEqual([]);
    const claimed = await h.ledger.claimCommissions({
      productId,
      claims: [{ partnershipId: aff.id, payoutId: newId("po") }],
    });
    expect(claimed.commissions).toEqual([]);

    const queue = await h.ledger.listCommissions({ productId, flagged: true, pageSize: 100 });
    expect(queue.commissions.map((c) => c.id)).toEqual([id]);

    const approved = (await review(productId, id, ReviewDecision.APPROVE, "a real customer")).commission;
    expect([
      approved?.status,
      approved?.holdReason,
      approved?.review?.decision,
      approved?.review?.note,
      approved?.review?.key,
    ]).toEqual([
      CommissionStatus.APPROVED,
      HoldReason.UNSPECIFIED,
      ReviewDecision.APPROVE,
      "a real customer",
      "sk_live_…abcd",
    ]);
    expect(approved?.flags.map((f) => f.signal)).toEqual(["self_referral"]);
    expect(await payable(productId)).toEqual([[aff.id, 2000]]);
    expect((await h.ledger.listCommissions({ productId, flagged: true, pageSize: 100 })).commissions).toEqual([]);

    expect((await outboxOf("ledger.commission.flagged", [id])).map((e) => e.commission?.flags[0]?.signal)).toEqual([
      "self_referral",
    ]);
    const reviewed = await outboxOf("ledger.commission.reviewed", [id]);
    // The note is free text: it stays out of the stream.
    expect(reviewed.map((e) => [e.commission?.review?.decision, e.commission?.review?.note])).toEqual([
      [ReviewDecision.APPROVE, ""],
    ]);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("is never paid once rejected (with its level-2 child); the payment stays recorded", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await affiliateWith(productId, uniqueEmail("sponsor"));
    const email = `${unique("ann")}@acme-corp.io`;
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email, sponsorReferralCode: sponsor.code },
      notify: false,
    });
    // A colleague at the affiliate's company pays: the domain matches.
    const { event } = await pay(productId, partnership?.referralCode ?? "", `${unique("bob")}@ACME-corp.io`);
    const [levelOne, levelTwo] = (event?.commissions ?? []).map((c) => c.id);
    const child = await commission(productId, levelTwo ?? "");
    expect([child?.holdReason, JSON.parse(child?.flags[0]?.evidenceJson ?? "{}")]).toEqual([
      HoldReason.REVIEW,
      { match: "email_domain", domain: "acme-corp.io" },
    ]);

    const rejected = (await review(productId, levelOne ?? "", ReviewDecision.REJECT, "own purchase")).commission;
    expect([rejected?.status, rejected?.reason, rejected?.review?.decision]).toEqual([
      CommissionStatus.REJECTED,
      "own purchase",
      ReviewDecision.REJECT,
    ]);
    expect((await commission(productId, levelTwo ?? ""))?.status).toBe(CommissionStatus.REJECTED);
    await approveDueCommissions(h.sql, new Date(h.clock.now.getTime() + 400 * 24 * 3600 * 1000));
    expect(await payable(productId)).toEqual([]);
    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_7D });
    expect([
      Number(stats.current?.conversions),
      Number(stats.current?.revenueCents),
      Number(stats.current?.commissionsCents),
    ]).toEqual([1, 10_000, 0]);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("refuses a review of a commission that is not flagged (naming its state) and a second review (with the first decision)", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const email = `${unique("ann")}@acme-corp.io`;
    const aff = await affiliateWith(productId, email);
    // Another address at a public domain is no self-referral: approved at once.
    const clean = await pay(productId, aff.code, `${unique("bob")}@gmail.com`);
    const cleanId = clean.event?.commissions[0]?.id ?? "";
    expect(clean.event?.commissions[0]?.status).toBe(CommissionStatus.APPROVED);
    const notFlagged = await failure(review(productId, cleanId, ReviewDecision.APPROVE));
    expect([notFlagged?.code, notFlagged?.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `Commission ${cleanId} is not flagged for review: it is approved`,
    ]);

    const flagged = (await pay(productId, aff.code, email)).event?.commissions[0]?.id ?? "";
    await review(productId, flagged, ReviewDecision.REJECT, "first");
    const again = await failure(review(productId, flagged, ReviewDecision.APPROVE, "second"));
    expect(again?.code).toBe(Code.AlreadyExists);
    expect(again?.rawMessage).toMatch(new RegExp(`^Commission ${flagged} was already reviewed: reject \\(`));
    expect((await commission(productId, flagged))?.review?.note).toBe("first");
    // PATCH approve does not bypass the review.
    const patched = await failure(h.ledger.updateCommission({ productId, commissionId: flagged, action: 1 }));
    expect(patched?.code).toBe(Code.FailedPrecondition);
  });

  it("rejects at once when the program says reject, and checks nothing when it says off", async () => {
    const productId = await newProduct(h, { holdDays: 0, fraud: { selfReferral: FraudAction.REJECT } });
    const email = `${unique("ann")}@acme-corp.io`;
    const aff = await affiliateWith(productId, email);
    const { event } = await pay(productId, aff.code, email);
    const rejected = await commission(productId, event?.commissions[0]?.id ?? "");
    expect([rejected?.status, rejected?.holdReason, rejected?.reason, rejected?.flags.map((f) => f.signal)]).toEqual([
      CommissionStatus.REJECTED,
      HoldReason.UNSPECIFIED,
      "Rejected by the fraud checks: self_referral",
      ["self_referral"],
    ]);

    await h.partners.updateProgram({ productId, fraud: { selfReferral: FraudAction.OFF } });
    const off = await pay(productId, aff.code, email);
    expect(off.event?.commissions.map((c) => c.status)).toEqual([CommissionStatus.APPROVED]);
  });
});

describe("refund_rate", () => {
  it("flags a partnership whose refunded share of the last 30 days is above the threshold; not at it", async () => {
    const productId = await newProduct(h, { holdDays: 0, fraud: { refundRateThresholdBps: 5000 } });
    const aff = await affiliateWith(productId, uniqueEmail("aff"));
    const first = await pay(productId, aff.code, uniqueEmail());
    const second = await pay(productId, aff.code, uniqueEmail());
    expect([first, second].map((p) => p.event?.commissions[0]?.status)).toEqual([
      CommissionStatus.APPROVED,
      CommissionStatus.APPROVED,
    ]);
    // One of two refunded in full: 50% is not above 50%.
    await h.ledger.refund({
      productId,
      identification: { case: "commissionId", value: first.event?.commissions[0]?.id ?? "" },
    });
    const atThreshold = await pay(productId, aff.code, uniqueEmail());
    expect(atThreshold.event?.commissions[0]?.status).toBe(CommissionStatus.APPROVED);
    // 10,000 of 30,000, then 5,001 more: 15,001 of 30,000 is above 50%.
    await h.ledger.refund({
      productId,
      identification: { case: "commissionId", value: second.event?.commissions[0]?.id ?? "" },
      refundAmountCents: 5001n,
    });
    const over = await pay(productId, aff.code, uniqueEmail());
    const flagged = await commission(productId, over.event?.commissions[0]?.id ?? "");
    expect([flagged?.holdReason, flagged?.flags.map((f) => [f.signal, JSON.parse(f.evidenceJson)])]).toEqual([
      HoldReason.REVIEW,
      [
        [
          "refund_rate",
          {
            window_days: 30,
            payments_cents: "30000",
            refunded_cents: "15001",
            refund_rate_bps: 5000,
            threshold_bps: 5000,
          },
        ],
      ],
    ]);
  });
});

describe("duplicate and bot clicks: stored as such, counted nowhere", () => {
  const clicksOf = async (productId: string) =>
    Number((await h.ledger.getStats({ productId, period: Period.PERIOD_7D })).current?.clicks);

  it("a second click of one visitor within the hour is a duplicate; 61 minutes later it counts", async () => {
    const productId = await newProduct(h);
    const aff = await affiliateWith(productId, uniqueEmail("aff"));
    const visitorId = unique("vis");
    const start = new Date(h.clock.now.getTime() - 3 * 3600 * 1000);
    const click = (minutes: number, extra: { visitorId?: string; userAgent?: string } = {}) =>
      track(h, {
        productId,
        type: EventType.CLICK,
        referralCode: aff.code,
        visitorId,
        userAgent: chrome,
        occurredAt: new Date(start.getTime() + minutes * minute),
        ...extra,
      });
    const first = await click(0);
    expect(first.event?.flags).toEqual([]);
    const duplicate = await click(59);
    expect(duplicate.event?.flags.map((f) => [f.signal, JSON.parse(f.evidenceJson)])).toEqual([
      [
        "duplicate_click",
        {
          matched_on: "visitor_id",
          counted_click_id: first.event?.id,
          counted_click_at: new Date(start.getTime()).toISOString(),
          window_minutes: 60,
        },
      ],
    ]);
    expect((await click(61)).event?.flags).toEqual([]);
    // Another visitor is another click; a bot is counted nowhere.
    expect((await click(62, { visitorId: unique("vis") })).event?.flags).toEqual([]);
    const crawler = await click(63, { visitorId: unique("vis"), userAgent: "Mozilla/5.0 (compatible; bingbot/2.0)" });
    expect(crawler.event?.flags.map((f) => [f.signal, JSON.parse(f.evidenceJson)])).toEqual([
      ["bot", { user_agent_token: "bingbot" }],
    ]);
    expect(await clicksOf(productId)).toBe(3);
    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id] });
    expect(Number(stats[aff.id]?.clicks)).toBe(3);
    const stored = await h.sql`select count(*)::int as n from tracking_events where product_id = ${productId}`;
    expect(stored).toEqual([{ n: 5 }]);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("a flood of 10,000 duplicate clicks from one visitor leaves the clicks unchanged", async () => {
    const productId = await newProduct(h);
    const aff = await affiliateWith(productId, uniqueEmail("aff"));
    const visitorId = unique("vis");
    await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, visitorId });
    expect(await clicksOf(productId)).toBe(1);
    for (let batch = 0; batch < 20; batch++) {
      const { results } = await trackBatch(
        h,
        Array.from({ length: 500 }, () => ({ productId, type: EventType.CLICK, referralCode: aff.code, visitorId })),
      );
      const flagged = results.filter(
        (r) => r.outcome.case === "tracked" && r.outcome.value.event?.flags[0]?.signal === "duplicate_click",
      );
      expect(flagged).toHaveLength(500);
    }
    expect(await clicksOf(productId)).toBe(1);
    const stored = await h.sql`
      select count(*) filter (where flags is not null)::int as duplicates from tracking_events
      where product_id = ${productId} and event_type = 'click'`;
    expect(stored).toEqual([{ duplicates: 10_000 }]);
    // A generous bound for a loaded machine: the assertion is the count, not the time.
  }, 180_000);

  it("follows the settings: off counts every click", async () => {
    const productId = await newProduct(h, {
      fraud: { duplicateClick: FraudAction.OFF, bot: FraudAction.OFF },
    });
    const aff = await affiliateWith(productId, uniqueEmail("aff"));
    const visitorId = unique("vis");
    for (let i = 0; i < 2; i++) {
      const { event } = await track(h, {
        productId,
        type: EventType.CLICK,
        referralCode: aff.code,
        visitorId,
        userAgent: "curl/8.5.0",
      });
      expect(event?.flags).toEqual([]);
    }
    expect(await clicksOf(productId)).toBe(2);
  });
});

describe("the settings", () => {
  it("default to flag, refund_rate without a threshold; a click signal cannot reject", async () => {
    const productId = await newProduct(h);
    const { program } = await h.partners.getProgram({ productId });
    expect(program?.fraud).toEqual(
      expect.objectContaining({
        selfReferral: FraudAction.FLAG,
        duplicateClick: FraudAction.FLAG,
        bot: FraudAction.FLAG,
        refundRate: FraudAction.FLAG,
        refundRateThresholdBps: 0,
      }),
    );
    expect(defaultFraudSettings.refundRateThresholdBps).toBeNull();
    const refused = await failure(
      h.partners.updateProgram({ productId, fraud: { bot: FraudAction.REJECT, refundRateThresholdBps: 10_001 } }),
    );
    expect(refused?.code).toBe(Code.InvalidArgument);
    expect(refused?.rawMessage).toBe("Validation failed");
    const { program: unchanged } = await h.partners.getProgram({ productId });
    expect(unchanged?.fraud?.bot).toBe(FraudAction.FLAG);
  });
});
