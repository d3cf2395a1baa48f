import { fieldErrorsOf } from "@affiliate/platform";
import { CommissionStatus } from "@affiliate/proto/ledger";
import { PartnershipStatus } from "@affiliate/proto/partners";
import { Code, type ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  day,
  EventType,
  failure,
  type Harness,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  unique,
  uniqueEmail,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const ago = (ms: number) => new Date(h.clock.now.getTime() - ms);

describe("clicks", () => {
  it("records a click by referral code, any case, and issues a visitor id", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const { event, replayed } = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code.toLowerCase(),
    });
    expect(replayed).toBe(false);
    expect(event).toMatchObject({ partnershipId: aff.id, testMode: false, commissions: [] });
    expect(event?.id).toMatch(/^evt_/);
    expect(event?.visitorId).toMatch(/^vis_[0-9a-f]{24}$/);
  });

  it("keeps a given visitor id", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const { event } = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code,
      visitorId: "visitor-1",
    });
    expect(event?.visitorId).toBe("visitor-1");
  });

  it("answers not found for an unknown code, another product's code, and non-active partnerships", async () => {
    const productId = await newProduct(h, { autoApprove: false });
    const pending = await newAffiliate(h, productId);
    const rejected = await newAffiliate(h, productId);
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: rejected.id,
      status: PartnershipStatus.REJECTED,
    });
    const removed = await newAffiliate(h, productId);
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: removed.id,
      status: PartnershipStatus.ACTIVE,
    });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: removed.id,
      status: PartnershipStatus.REMOVED,
    });
    const foreign = await newAffiliate(h, await newProduct(h));
    for (const referralCode of ["NOPE1234", pending.code, rejected.code, removed.code, foreign.code]) {
      const error = await failure(track(h, { productId, type: EventType.CLICK, referralCode }));
      expect(error?.code).toBe(Code.NotFound);
    }
    // Back to active: its link works again.
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: removed.id,
      status: PartnershipStatus.ACTIVE,
    });
    expect(
      (await track(h, { productId, type: EventType.CLICK, referralCode: removed.code })).event?.partnershipId,
    ).toBe(removed.id);
  });

  it("refuses a click without a referral code, with the field named", async () => {
    const productId = await newProduct(h);
    const error = await failure(track(h, { productId, type: EventType.CLICK }));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("referral_code");
  });
});

describe("attribution", () => {
  it("credits a signup to the visitor's click and a later payment to that signup by email", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const click = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code,
      occurredAt: ago(3 * day),
    });
    const email = uniqueEmail();
    const signup = await track(h, {
      productId,
      type: EventType.SIGNUP,
      visitorId: click.event?.visitorId,
      customerEmail: `  ${email.toUpperCase()} `,
      occurredAt: ago(2 * day),
    });
    expect(signup.event?.partnershipId).toBe(aff.id);
    const payment = await track(h, { productId, type: EventType.PAYMENT, customerEmail: email, amountCents: 10_000n });
    expect(payment.event?.partnershipId).toBe(aff.id);
    const [row] = await h.sql<
      { customerEmail: string }[]
    >`select customer_email from tracking_events where id = ${signup.event?.id ?? ""}`;
    expect(row?.customerEmail).toBe(email);
  });

  it("credits a signup dated in a whole second to the visitor's click stamped later in that second, not one 1.5 s after", async () => {
    // A provider's time is a whole second rounded down (Stripe's `created`); our click is stamped to the millisecond.
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const second = new Date(Math.floor(ago(day).getTime() / 1000) * 1000);
    /** Who a signup at `second` is credited to, its visitor's click stamped `clickAfterMs` later. */
    const creditedWithClickAfter = async (clickAfterMs: number) => {
      const visitorId = unique("vis");
      const occurredAt = new Date(second.getTime() + clickAfterMs);
      await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, visitorId, occurredAt });
      const signup = await track(h, { productId, type: EventType.SIGNUP, visitorId, occurredAt: second });
      return signup.event?.partnershipId ?? "";
    };
    expect(await creditedWithClickAfter(400)).toBe(aff.id);
    expect(await creditedWithClickAfter(1500)).toBe("");
  });

  it("credits a payment to the signup with the same provider_customer_id", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const customer = unique("cus");
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: aff.code,
      providerCustomerId: customer,
      occurredAt: ago(day),
    });
    const payment = await track(h, {
      productId,
      type: EventType.PAYMENT,
      providerCustomerId: customer,
      amountCents: 500n,
    });
    expect(payment.event?.partnershipId).toBe(aff.id);
  });

  it("uses the latest signup not after the payment", async () => {
    const productId = await newProduct(h);
    const [first, second, later] = [
      await newAffiliate(h, productId),
      await newAffiliate(h, productId),
      await newAffiliate(h, productId),
    ];
    const customer = unique("cus");
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: first.code,
      providerCustomerId: customer,
      occurredAt: ago(5 * day),
    });
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: second.code,
      providerCustomerId: customer,
      occurredAt: ago(3 * day),
    });
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: later.code,
      providerCustomerId: customer,
      occurredAt: ago(1000),
    });
    const payment = await track(h, {
      productId,
      type: EventType.PAYMENT,
      providerCustomerId: customer,
      amountCents: 500n,
      occurredAt: ago(day),
    });
    expect(payment.event?.partnershipId).toBe(second.id);
  });

  it("first match wins: a referral code beats the signup, the signup beats the click", async () => {
    const productId = await newProduct(h);
    const [byCode, bySignup, byClick] = [
      await newAffiliate(h, productId),
      await newAffiliate(h, productId),
      await newAffiliate(h, productId),
    ];
    const email = uniqueEmail();
    const click = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: byClick.code,
      occurredAt: ago(2 * day),
    });
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: bySignup.code,
      customerEmail: email,
      occurredAt: ago(day),
    });
    const visitorId = click.event?.visitorId;
    const coded = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: byCode.code,
      customerEmail: email,
      visitorId,
      amountCents: 100n,
    });
    expect(coded.event?.partnershipId).toBe(byCode.id);
    const signed = await track(h, {
      productId,
      type: EventType.PAYMENT,
      customerEmail: email,
      visitorId,
      amountCents: 100n,
    });
    expect(signed.event?.partnershipId).toBe(bySignup.id);
    const clicked = await track(h, {
      productId,
      type: EventType.PAYMENT,
      customerEmail: uniqueEmail(),
      visitorId,
      amountCents: 100n,
    });
    expect(clicked.event?.partnershipId).toBe(byClick.id);
  });

  it("a code no partnership has is no match: the next rule applies", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const click = await track(h, { productId, type: EventType.CLICK, referralCode: aff.code });
    const payment = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: "GONE-CODE",
      visitorId: click.event?.visitorId,
      amountCents: 100n,
    });
    expect(payment.event?.partnershipId).toBe(aff.id);
  });

  it("honours the attribution window to the millisecond", async () => {
    const productId = await newProduct(h, { attributionWindowDays: 10 });
    const aff = await newAffiliate(h, productId);
    const inside = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code,
      occurredAt: ago(10 * day),
    });
    const atEdge = await track(h, {
      productId,
      type: EventType.SIGNUP,
      visitorId: inside.event?.visitorId,
      occurredAt: h.clock.now,
    });
    expect(atEdge.event?.partnershipId).toBe(aff.id);
    const outside = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code,
      occurredAt: ago(10 * day + 1),
    });
    const late = await track(h, {
      productId,
      type: EventType.SIGNUP,
      visitorId: outside.event?.visitorId,
      occurredAt: h.clock.now,
    });
    expect(late.event?.partnershipId).toBe("");
  });

  it("ignores clicks after the event and stores unattributed events with no partnership", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const click = await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt: h.clock.now });
    const earlier = await track(h, {
      productId,
      type: EventType.SIGNUP,
      visitorId: click.event?.visitorId,
      occurredAt: ago(60_000),
    });
    expect(earlier.event?.partnershipId).toBe("");
    const [row] = await h.sql<
      { partnershipId: string | null }[]
    >`select partnership_id from tracking_events where id = ${earlier.event?.id ?? ""}`;
    expect(row?.partnershipId).toBeNull();
  });
});

describe("commissions from payments", () => {
  it("creates a level-1 commission at the program's rate, and a level-2 one for an active sponsor", async () => {
    const productId = await newProduct(h, { holdDays: 30 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const occurredAt = ago(1000);
    const { event } = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1234n,
      occurredAt,
    });
    const [levelOne, levelTwo] = event?.commissions ?? [];
    expect(levelOne).toMatchObject({ level: 1, amountCents: 247n, status: CommissionStatus.PENDING });
    expect(levelTwo).toMatchObject({ level: 2, amountCents: 62n, status: CommissionStatus.PENDING });
    const read = await h.ledger.getCommission({ productId, commissionId: levelTwo?.id ?? "" });
    expect(read.commission).toMatchObject({
      partnershipId: sponsor.id,
      parentCommissionId: levelOne?.id,
      referralCode: sponsor.code,
      paymentAmountCents: 1234n,
      payoutId: "",
    });
    const parent = await h.ledger.getCommission({ productId, commissionId: levelOne?.id ?? "" });
    expect(parent.commission?.parentCommissionId).toBe("");
    expect(parent.commission?.holdUntil?.seconds).toBe(BigInt(Math.floor((occurredAt.getTime() + 30 * day) / 1000)));
  });

  it("gives no level-2 commission when the sponsor is no longer active", async () => {
    const productId = await newProduct(h);
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: sponsor.id,
      status: PartnershipStatus.REMOVED,
    });
    const { event } = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
    });
    expect(event?.commissions.map((c) => c.level)).toEqual([1]);
  });

  it("rounds 1 cent at 20% to a commission of 0", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const { event } = await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1n });
    expect(event?.commissions[0]?.amountCents).toBe(0n);
  });

  it("approves at once when the hold has already ended", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const { event } = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
    });
    expect(event?.commissions[0]?.status).toBe(CommissionStatus.APPROVED);
    const old = await newProduct(h, { holdDays: 5 });
    const oldAff = await newAffiliate(h, old);
    const past = await track(h, {
      productId: old,
      type: EventType.PAYMENT,
      referralCode: oldAff.code,
      amountCents: 1000n,
      occurredAt: ago(6 * day),
    });
    expect(past.event?.commissions[0]?.status).toBe(CommissionStatus.APPROVED);
  });

  it("a removed partnership's attributed payment is recorded but earns nothing", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const customer = unique("cus");
    await track(h, {
      productId,
      type: EventType.SIGNUP,
      referralCode: aff.code,
      providerCustomerId: customer,
      occurredAt: ago(day),
    });
    await h.partners.updatePartnershipStatus({ productId, partnershipId: aff.id, status: PartnershipStatus.REMOVED });
    const { event } = await track(h, {
      productId,
      type: EventType.PAYMENT,
      providerCustomerId: customer,
      amountCents: 1000n,
    });
    expect(event).toMatchObject({ partnershipId: aff.id, commissions: [] });
  });

  it("applies program changes to commissions created afterwards", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const before = await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1000n });
    await h.partners.updateProgram({ productId, commissionRateBps: 5000 });
    const after = await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1000n });
    expect([before.event?.commissions[0]?.amountCents, after.event?.commissions[0]?.amountCents]).toEqual([200n, 500n]);
  });

  it("writes commission.created for each commission in the payment's transaction", async () => {
    const productId = await newProduct(h);
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1000n });
    const rows = await h.sql`select subject from outbox where subject = 'ledger.commission.created'`;
    expect(rows.length).toBeGreaterThanOrEqual(2);
  });
});

describe("replays", () => {
  it("a payment with a known external_id answers the original and creates nothing", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const externalId = unique("ch");
    const first = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      externalId,
    });
    const again = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 9999n,
      externalId,
    });
    expect(again.replayed).toBe(true);
    expect(again.event).toEqual(first.event);
    expect(await h.sql`select id from commissions where event_id = ${first.event?.id ?? ""}`).toHaveLength(1);
  });

  it("concurrent identical payments create exactly one event and one set of commissions", async () => {
    const productId = await newProduct(h);
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const externalId = unique("ch");
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 5000n, externalId }),
      ),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.event?.id)).size).toBe(1);
    const events =
      await h.sql`select id from tracking_events where product_id = ${productId} and external_id = ${externalId}`;
    expect(events).toHaveLength(1);
    const commissions = await h.sql`select id from commissions where event_id = ${events[0]?.id as string}`;
    expect(commissions).toHaveLength(2);
  });

  it("the same external_id in another product is another payment", async () => {
    const externalId = unique("ch");
    const [a, b] = [await newProduct(h), await newProduct(h)];
    const first = await track(h, { productId: a, type: EventType.PAYMENT, amountCents: 100n, externalId });
    const second = await track(h, { productId: b, type: EventType.PAYMENT, amountCents: 100n, externalId });
    expect([first.replayed, second.replayed]).toEqual([false, false]);
  });
});

describe("sandbox", () => {
  it("test-mode events are stored apart, create nothing, and show what they would create", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const externalId = unique("ch");
    const { event } = await track(h, {
      productId,
      testMode: true,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      externalId,
    });
    expect(event).toMatchObject({ testMode: true, partnershipId: aff.id });
    expect(event?.commissions).toEqual([
      expect.objectContaining({ id: "", level: 1, amountCents: 200n, status: CommissionStatus.APPROVED }),
    ]);
    expect(await h.sql`select id from tracking_events where product_id = ${productId}`).toHaveLength(0);
    expect(await h.sql`select id from commissions where product_id = ${productId}`).toHaveLength(0);
    expect(await h.sql`select id from outbox where payload::text like ${`%${aff.id}%`}`).toHaveLength(0);
    const replay = await track(h, { productId, testMode: true, type: EventType.PAYMENT, amountCents: 5n, externalId });
    expect(replay).toMatchObject({ replayed: true, event: { id: event?.id, commissions: event?.commissions } });
    // A live payment with the same external_id is not a replay of the sandbox one.
    const live = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      externalId,
    });
    expect(live.replayed).toBe(false);
  });

  it("sandbox attribution uses sandbox clicks only", async () => {
    const productId = await newProduct(h);
    const aff = await newAffiliate(h, productId);
    const liveClick = await track(h, {
      productId,
      type: EventType.CLICK,
      referralCode: aff.code,
      visitorId: "shared-visitor",
    });
    expect(liveClick.event?.partnershipId).toBe(aff.id);
    const sandboxSignup = await track(h, {
      productId,
      testMode: true,
      type: EventType.SIGNUP,
      visitorId: "shared-visitor",
    });
    expect(sandboxSignup.event?.partnershipId).toBe("");
  });
});

describe("validation", () => {
  it("refuses occurred_at too far ahead or back", async () => {
    const productId = await newProduct(h);
    for (const occurredAt of [new Date(h.clock.now.getTime() + 6 * 60_000), ago(401 * day)]) {
      const error = await failure(track(h, { productId, type: EventType.SIGNUP, occurredAt }));
      expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("occurred_at");
    }
  });

  it("refuses an unspecified type and a payment without an amount", async () => {
    const productId = await newProduct(h);
    expect((await failure(track(h, { productId, type: EventType.UNSPECIFIED })))?.code).toBe(Code.InvalidArgument);
    const error = await failure(track(h, { productId, type: EventType.PAYMENT }));
    expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("amount_cents");
  });

  it("takes a payment of at most 100,000,000,000 cents (contract section 5)", async () => {
    const productId = await newProduct(h);
    const { code: referralCode } = await newAffiliate(h, productId);
    const atLimit = await track(h, { productId, type: EventType.PAYMENT, referralCode, amountCents: 100_000_000_000n });
    expect(atLimit.event?.commissions[0]?.amountCents).toBe(20_000_000_000n);
    const over = await failure(
      track(h, { productId, type: EventType.PAYMENT, referralCode, amountCents: 100_000_000_001n }),
    );
    expect(fieldErrorsOf(over as ConnectError)?.fieldErrors).toEqual({
      amount_cents: ["Must be an integer from 1 to 100,000,000,000 cents"],
    });
  });

  it("counts lengths in characters: 128 emoji are a valid visitor_id, 129 are not", async () => {
    const productId = await newProduct(h);
    const emoji = "\u{1F600}";
    const tracked = await track(h, { productId, type: EventType.SIGNUP, visitorId: emoji.repeat(128) });
    expect(tracked.event?.visitorId).toBe(emoji.repeat(128));
    const error = await failure(track(h, { productId, type: EventType.SIGNUP, visitorId: emoji.repeat(129) }));
    expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toEqual({ visitor_id: ["Must be 1-128 characters"] });
  });
});
