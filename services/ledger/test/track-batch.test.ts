import { connectErrorOfStatus, errorInfoOf, fieldErrorsOf } from "@affiliate/platform";
import { CommissionStatus, type TrackBatchResult, type TrackResponse } from "@affiliate/proto/ledger";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  day,
  EventType,
  failure,
  type Harness,
  invariantViolations,
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

const ago = (ms: number) => new Date(h.clock.now.getTime() - ms);

/** What a caller learns from an error: code, message, field errors, reason and details. */
const errorParts = (error: ConnectError | undefined) =>
  error && {
    code: error.code,
    message: error.rawMessage,
    fields: fieldErrorsOf(error),
    info: errorInfoOf(error),
  };

/** A batch result as the response or the error its own Track call would have answered. */
function asAlone(result: TrackBatchResult | undefined): TrackResponse | ConnectError {
  if (result?.outcome.case === "tracked") return result.outcome.value;
  if (result?.outcome.case === "error") return connectErrorOfStatus(result.outcome.value);
  throw new Error("a batch result without an outcome");
}

const tracked = (result: TrackBatchResult | undefined): TrackResponse => {
  const answer = asAlone(result);
  if (answer instanceof ConnectError) throw answer;
  return answer;
};

describe("a batch answers each event as it would have been answered alone", () => {
  it("mixes recorded, invalid, replayed and unknown-code events without one failing another", async () => {
    const productId = await newProduct(h, { holdDays: 30 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const knownExternalId = unique("ch");
    const original = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      externalId: knownExternalId,
    });

    const invalid = [
      { productId, type: EventType.UNSPECIFIED },
      { productId, type: EventType.CLICK },
      { productId, type: EventType.PAYMENT, referralCode: aff.code },
      { productId, type: EventType.SIGNUP, occurredAt: new Date(h.clock.now.getTime() + 6 * 60_000) },
      { productId, type: EventType.CLICK, referralCode: aff.code, amountCents: 5n, customerEmail: "not-an-email" },
    ];
    const unknownCode = { productId, type: EventType.CLICK, referralCode: "NO-SUCH-CODE" };
    const replay = {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 999n,
      externalId: knownExternalId,
    };
    const { results } = await trackBatch(h, [
      { productId, type: EventType.CLICK, referralCode: aff.code, visitorId: "v-1" },
      invalid[0] ?? {},
      unknownCode,
      { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1234n, externalId: unique("ch") },
      invalid[1] ?? {},
      replay,
      invalid[2] ?? {},
      { productId, type: EventType.SIGNUP, customerEmail: uniqueEmail(), visitorId: "v-1" },
      invalid[3] ?? {},
      invalid[4] ?? {},
    ]);
    expect(results).toHaveLength(10);

    // The errors are exactly those of Track alone.
    for (const [position, request] of [
      [1, invalid[0]],
      [2, unknownCode],
      [4, invalid[1]],
      [6, invalid[2]],
      [8, invalid[3]],
      [9, invalid[4]],
    ] as const) {
      const inBatch = asAlone(results[position]);
      expect(inBatch).toBeInstanceOf(ConnectError);
      const alone = await failure(track(h, request ?? { productId }));
      expect(errorParts(inBatch as ConnectError)).toEqual(errorParts(alone));
    }
    expect((asAlone(results[2]) as ConnectError).code).toBe(Code.NotFound);
    expect(errorParts(asAlone(results[9]) as ConnectError)?.fields?.fieldErrors).toEqual({
      customer_email: ["Invalid email address", "Not accepted on a click"],
      amount_cents: ["Not accepted on a click"],
    });

    // The replay is the original, as Track alone answers it.
    expect(tracked(results[5])).toEqual({ ...original, replayed: true });
    expect(await track(h, replay)).toEqual(tracked(results[5]));

    // The valid events are recorded, the payment with both levels; the signup is credited
    // through the click before it in the batch.
    expect(tracked(results[0]).event).toMatchObject({ partnershipId: aff.id, visitorId: "v-1", commissions: [] });
    const payment = tracked(results[3]);
    expect(payment.replayed).toBe(false);
    expect(payment.event?.commissions).toEqual([
      expect.objectContaining({ level: 1, amountCents: 247n, status: CommissionStatus.PENDING }),
      expect.objectContaining({ level: 2, amountCents: 62n, status: CommissionStatus.PENDING }),
    ]);
    const stored = await h.ledger.getCommission({ productId, commissionId: payment.event?.commissions[1]?.id ?? "" });
    expect(stored.commission).toMatchObject({ partnershipId: sponsor.id, level: 2 });
    expect(tracked(results[7]).event?.partnershipId).toBe(aff.id);

    const rows = await h.sql<{ eventType: string }[]>`
      select event_type from tracking_events where product_id = ${productId} order by event_type`;
    expect(rows.map((r) => r.eventType)).toEqual(["click", "payment", "payment", "signup"]);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("attributes in order: an event sees the signups and clicks before it in the batch, not after", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const early = uniqueEmail();
    const late = uniqueEmail();
    const { results } = await trackBatch(h, [
      { productId, type: EventType.CLICK, referralCode: aff.code, visitorId: "v-order", occurredAt: ago(3 * day) },
      { productId, type: EventType.SIGNUP, visitorId: "v-order", customerEmail: early, occurredAt: ago(2 * day) },
      { productId, type: EventType.PAYMENT, customerEmail: early.toUpperCase(), amountCents: 5000n },
      // Reported before its signup: alone, it would have found none.
      { productId, type: EventType.PAYMENT, customerEmail: late, amountCents: 5000n },
      { productId, type: EventType.SIGNUP, referralCode: aff.code, customerEmail: late, occurredAt: ago(day) },
    ]);
    expect(results.map((r) => tracked(r).event?.partnershipId)).toEqual([aff.id, aff.id, aff.id, "", aff.id]);
    expect(tracked(results[2]).event?.commissions).toHaveLength(1);
    expect(tracked(results[3]).event?.commissions).toEqual([]);
  });

  it("the same external_id twice in one batch is one payment: the second is a replay of the first", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const externalId = unique("ch");
    const { results } = await trackBatch(h, [
      { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1000n, externalId },
      { productId, type: EventType.PAYMENT, amountCents: 7n, externalId },
    ]);
    const [first, second] = results.map(tracked);
    expect(first?.replayed).toBe(false);
    expect(second).toEqual({ ...first, replayed: true });
    const events = await h.sql`select id from tracking_events where product_id = ${productId}`;
    expect(events).toHaveLength(1);
    expect(await h.sql`select id from commissions where event_id = ${events[0]?.id as string}`).toHaveLength(1);
  });

  it("refuses 0 and over 500 events as a whole", async () => {
    const productId = await newProduct(h);
    expect((await failure(trackBatch(h, [])))?.code).toBe(Code.InvalidArgument);
    const tooMany = Array.from({ length: 501 }, () => ({ productId, type: EventType.SIGNUP }));
    const error = await failure(trackBatch(h, tooMany));
    expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("events");
    expect(await h.sql`select id from tracking_events where product_id = ${productId}`).toHaveLength(0);
  });

  it("records 500 events in one call", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const { results } = await trackBatch(
      h,
      Array.from({ length: 500 }, (_, i) =>
        i % 2 === 0
          ? { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt: ago(i * 3600_000) }
          : {
              productId,
              type: EventType.PAYMENT,
              referralCode: aff.code,
              amountCents: BigInt(100 + i),
              externalId: unique("ch"),
              occurredAt: ago(i * 3600_000),
            },
      ),
    );
    expect(results.filter((r) => r.outcome.case !== "tracked")).toEqual([]);
    const [counts] = await h.sql<{ events: number; commissions: number }[]>`
      select (select count(*) from tracking_events where product_id = ${productId})::int8 as events,
             (select count(*) from commissions where product_id = ${productId} and status = 'approved')::int8 as commissions`;
    expect(counts).toEqual({ events: 500, commissions: 250 });
    const outbox = await h.sql`
      select id from outbox where subject = 'ledger.commission.created'
        and position(convert_to(${aff.id}, 'UTF8') in payload) > 0`;
    expect(outbox).toHaveLength(250);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });
});

describe("concurrent batches", () => {
  it("the same external_ids in concurrent batches, in opposite orders, are one payment each", async () => {
    const productId = await newProduct(h);
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const externalIds = Array.from({ length: 20 }, () => unique("ch"));
    const batchOf = (ids: string[]) =>
      ids.map((externalId) => ({
        productId,
        type: EventType.PAYMENT,
        referralCode: aff.code,
        amountCents: 2000n,
        externalId,
      }));
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        trackBatch(h, batchOf(i % 2 === 0 ? externalIds : [...externalIds].reverse())),
      ),
    );
    const eventIdOf = new Map<string, Set<string>>();
    let recorded = 0;
    for (const [i, { results }] of answers.entries()) {
      const ids = i % 2 === 0 ? externalIds : [...externalIds].reverse();
      for (const [position, result] of results.entries()) {
        const answer = tracked(result);
        if (!answer.replayed) recorded++;
        const externalId = ids[position] ?? "";
        eventIdOf.set(externalId, new Set([...(eventIdOf.get(externalId) ?? []), answer.event?.id ?? ""]));
      }
    }
    expect(recorded).toBe(20);
    expect([...eventIdOf.values()].every((ids) => ids.size === 1)).toBe(true);
    const [counts] = await h.sql<{ events: number; commissions: number }[]>`
      select (select count(*) from tracking_events where product_id = ${productId})::int8 as events,
             (select count(*) from commissions where product_id = ${productId})::int8 as commissions`;
    expect(counts).toEqual({ events: 20, commissions: 40 });
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("concurrent batches and single events of one affiliate all commit, rollups equal to the rows", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const payment = (i: number) => ({
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: BigInt(1000 + i),
      occurredAt: ago((i % 5) * day),
    });
    const settled = await Promise.allSettled([
      ...Array.from({ length: 8 }, (_, b) =>
        trackBatch(
          h,
          Array.from({ length: 25 }, (_, i) => payment(b * 25 + i)),
        ),
      ),
      ...Array.from({ length: 20 }, (_, i) => track(h, payment(1000 + i))),
    ]);
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id, sponsor.id] });
    expect(stats[aff.id]?.conversions).toBe(220n);
    expect(stats[sponsor.id]?.approvedCount).toBe(220n);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });
});

describe("sandbox batches", () => {
  it("store sandbox events apart, mixed with live ones, and replay them by external_id", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const externalId = unique("ch");
    const sandboxPayment = {
      productId,
      testMode: true,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      externalId,
    };
    const { results } = await trackBatch(h, [
      sandboxPayment,
      { ...sandboxPayment, testMode: false },
      { ...sandboxPayment, amountCents: 5n },
    ]);
    const [sandbox, live, replay] = results.map(tracked);
    expect(sandbox).toMatchObject({ replayed: false, event: { testMode: true, partnershipId: aff.id } });
    expect(sandbox?.event?.commissions).toEqual([
      expect.objectContaining({ id: "", level: 1, amountCents: 200n, status: CommissionStatus.APPROVED }),
    ]);
    expect(live).toMatchObject({ replayed: false, event: { testMode: false } });
    expect(live?.event?.commissions[0]?.id).toMatch(/^com_/);
    expect(replay).toEqual({ ...sandbox, replayed: true });
    expect(await track(h, sandboxPayment)).toEqual({ ...sandbox, replayed: true });
    expect(await h.sql`select id from sandbox_events where product_id = ${productId}`).toHaveLength(1);
    expect(await h.sql`select id from tracking_events where product_id = ${productId}`).toHaveLength(1);
  });
});
