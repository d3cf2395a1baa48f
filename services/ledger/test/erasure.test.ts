import { newId } from "@affiliate/platform";
import { CommissionCreatedSchema, CommissionRefundedSchema } from "@affiliate/proto/ledger";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { erasureBatchSize } from "../src/domain/erase-customer.js";
import {
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

const counts = (response: { stores: { store: string; records: bigint }[] }) =>
  Object.fromEntries(response.stores.map(({ store, records }) => [store, Number(records)]));
const erase = async (productId: string, email: string, erasureId = newId("ers")) =>
  counts(await h.erasure.eraseCustomer({ productId, email, erasureId }));
const find = async (productId: string, email: string) => counts(await h.erasure.findCustomer({ productId, email }));

/** A product with hold 0 and a sponsored affiliate (payments earn two levels). */
async function program() {
  const productId = await newProduct(h, { holdDays: 0 });
  const sponsor = await newAffiliate(h, productId);
  const affiliate = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
  return { productId, code: affiliate.code, partnershipId: affiliate.id };
}

async function payment(p: { productId: string; code: string }, customerEmail: string, amount = 10_000) {
  const externalId = unique("ch");
  const { event } = await track(h, {
    productId: p.productId,
    type: EventType.PAYMENT,
    referralCode: p.code,
    amountCents: BigInt(amount),
    externalId,
    customerEmail,
    providerCustomerId: unique("cus"),
    ip: "203.0.113.7",
    userAgent: "Mozilla/5.0 (erasure test)",
    visitorId: unique("vis"),
  });
  return { externalId, eventId: event?.id ?? "", commissionIds: event?.commissions.map((c) => c.id) ?? [] };
}

interface EventRow {
  id: string;
  eventType: string;
  partnershipId: string | null;
  customerEmail: string | null;
  providerCustomerId: string | null;
  ip: string | null;
  userAgent: string | null;
  visitorId: string | null;
  amountCents: number | null;
  externalId: string | null;
  occurredAt: Date;
  anonymizedAt: Date | null;
}
const eventsOf = (productId: string, table = "tracking_events") =>
  h.sql<EventRow[]>`
    select id, event_type, partnership_id, customer_email, provider_customer_id, ip, user_agent, visitor_id,
           amount_cents, external_id, occurred_at, anonymized_at
    from ${h.sql(table)} where product_id = ${productId} order by id`;
const commissionsOf = (productId: string) =>
  h.sql<{ id: string; amountCents: number; status: string; reason: string | null }[]>`
    select id, amount_cents, status, reason from commissions where product_id = ${productId} order by id`;

describe("EraseCustomer on the ledger", () => {
  it("anonymises the customer's events as spec 4.11's table says, keeping money, ids and links", async () => {
    const p = await program();
    const email = uniqueEmail();
    await track(h, { productId: p.productId, type: EventType.SIGNUP, referralCode: p.code, customerEmail: email });
    const paid = await payment(p, email);
    const before = await eventsOf(p.productId);
    const commissionsBefore = await commissionsOf(p.productId);

    expect(await erase(p.productId, email)).toEqual({
      tracking_events: 2,
      sandbox_events: 0,
      commissions: 2,
      refunds: 0,
      idempotency_keys: 0,
    });

    const after = await eventsOf(p.productId);
    expect(after).toHaveLength(2);
    after.forEach((event, i) => {
      const original = before[i] as EventRow;
      expect(event).toEqual({
        ...original,
        customerEmail: null,
        providerCustomerId: null,
        ip: null,
        userAgent: null,
        visitorId: expect.stringMatching(/^anon_[0-9a-f]{32}$/),
        anonymizedAt: expect.any(Date),
      });
    });
    expect(after[0]?.visitorId).not.toBe(after[1]?.visitorId);
    expect(await commissionsOf(p.productId)).toEqual(commissionsBefore);
    const { commission } = await h.ledger.getCommission({
      productId: p.productId,
      commissionId: paid.commissionIds[0] ?? "",
    });
    expect(commission?.customerEmail).toBeUndefined();
    expect(commission?.amountCents).toBe(2000n);
  });

  it("replaces the email in refund and commission reasons and audit metadata, whatever its capitals", async () => {
    const p = await program();
    const email = uniqueEmail();
    const paid = await payment(p, email);
    await h.ledger.refund({
      productId: p.productId,
      identification: { case: "emailAndAmount", value: { email, paymentAmountCents: 10_000n } },
      refundAmountCents: 1000n,
      reason: `Chargeback: ${email.toUpperCase()} asked, cc ${email}`,
      idempotencyKey: unique("key"),
    });
    await h.sql`update tracking_events set metadata = ${h.sql.json({ note: `merged from ${email}` })}
                where id = ${paid.eventId}`;
    const other = await payment(p, uniqueEmail("other"));
    await h.sql`update tracking_events set metadata = ${h.sql.json({ duplicate: email })} where id = ${other.eventId}`;

    expect(await find(p.productId, email)).toMatchObject({ tracking_events: 2, refunds: 1, commissions: 2 });
    expect(await erase(p.productId, email)).toMatchObject({ tracking_events: 2, refunds: 1, commissions: 4 });

    const [refund] = await h.sql<{ reason: string }[]>`select reason from refunds where product_id = ${p.productId}`;
    expect(refund?.reason).toBe("Chargeback: [erased] asked, cc [erased]");
    expect((await commissionsOf(p.productId)).filter((c) => c.reason !== null).map((c) => c.reason)).toEqual([
      "Chargeback: [erased] asked, cc [erased]",
      "Chargeback: [erased] asked, cc [erased]",
    ]);
    const metadata = await h.sql<{ metadata: unknown }[]>`
      select metadata from tracking_events where product_id = ${p.productId} and metadata <> '{}' order by id`;
    expect(metadata.map((row) => row.metadata)).toEqual([{ note: "merged from [erased]" }, { duplicate: "[erased]" }]);
    expect(Object.values(await find(p.productId, email))).toEqual([0, 0, 0, 0, 0]);
  });

  it("finds nothing on a repeat, answers a repeated erasure id's whole count, and leaves other products alone", async () => {
    const p = await program();
    const elsewhere = await program();
    const email = uniqueEmail();
    await payment(p, email);
    await payment(elsewhere, email);
    await track(h, { productId: p.productId, type: EventType.SIGNUP, customerEmail: email, testMode: true });

    const erasureId = newId("ers");
    const first = await erase(p.productId, email, erasureId);
    expect(first).toMatchObject({ tracking_events: 1, sandbox_events: 1, commissions: 2 });
    expect(await erase(p.productId, email, erasureId)).toEqual(first);
    expect(await erase(p.productId, email)).toMatchObject({ tracking_events: 0, sandbox_events: 0, commissions: 0 });

    expect((await eventsOf(elsewhere.productId)).map((event) => event.customerEmail)).toEqual([email]);
    expect(await find(elsewhere.productId, email)).toMatchObject({ tracking_events: 1, commissions: 2 });
  });

  it("afterwards a refund by email is 404, while external_id and commission_id still find the payment", async () => {
    const p = await program();
    const email = uniqueEmail();
    const first = await payment(p, email);
    const second = await payment(p, email, 20_000);
    await erase(p.productId, email);

    const byEmail = await failure(
      h.ledger.refund({
        productId: p.productId,
        identification: { case: "emailAndAmount", value: { email, paymentAmountCents: 10_000n } },
      }),
    );
    expect(byEmail?.code).toBe(Code.NotFound);
    const byExternalId = await h.ledger.refund({
      productId: p.productId,
      identification: { case: "externalId", value: first.externalId },
    });
    expect(byExternalId.result?.fullyRefunded).toBe(true);
    const byCommission = await h.ledger.refund({
      productId: p.productId,
      identification: { case: "commissionId", value: second.commissionIds[0] ?? "" },
    });
    expect(byCommission.result?.newCommissionCents).toBe(0n);
  });

  it("erases a big customer in batches and counts every event", async () => {
    const p = await program();
    const email = uniqueEmail("big");
    const total = erasureBatchSize * 2 + 17;
    await h.sql`
      insert into tracking_events (id, product_id, event_type, customer_email, ip, occurred_at)
      select 'evt_big_' || n, ${p.productId}, 'click', ${email}, '198.51.100.1', now()
      from generate_series(1, ${total}) as n`;
    expect(await erase(p.productId, email)).toMatchObject({ tracking_events: total });
    expect(await find(p.productId, email)).toMatchObject({ tracking_events: 0 });
  });

  it("races payments of the same customer without a deadlock: each is erased or recorded after the erasure", async () => {
    const p = await program();
    const email = uniqueEmail("race");
    for (let i = 0; i < 20; i++) await payment(p, email, 1000 + i);
    const erasureId = newId("ers");
    const [, racing] = await Promise.all([
      erase(p.productId, email, erasureId),
      Promise.all(Array.from({ length: 10 }, (_, i) => payment(p, email, 5000 + i))),
    ]);
    expect(racing).toHaveLength(10);
    const [finished] = await h.sql<{ updatedAt: Date }[]>`
      select max(updated_at) as updated_at from erasure_counts where erasure_id = ${erasureId}`;
    const left = await h.sql<{ createdAt: Date }[]>`
      select created_at from tracking_events where product_id = ${p.productId} and customer_email is not null`;
    // What the erasure did not reach was recorded after its last batch committed.
    for (const event of left)
      expect(event.createdAt.getTime()).toBeGreaterThanOrEqual(finished?.updatedAt.getTime() ?? 0);
    expect(await erase(p.productId, email, erasureId)).toMatchObject({ tracking_events: 30 });
  });

  it("refuses an email that is not normalised rather than erase the wrong records", async () => {
    const p = await program();
    const error = await failure(
      h.erasure.eraseCustomer({ productId: p.productId, email: " Someone@Example.com", erasureId: newId("ers") }),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
  });
});

describe("events without personal data", () => {
  it("commission.created and commission.refunded carry ids and figures, never the email or the reason", async () => {
    const p = await program();
    const email = uniqueEmail("events");
    const paid = await payment(p, email);
    const { result } = await h.ledger.refund({
      productId: p.productId,
      identification: { case: "externalId", value: paid.externalId },
      reason: `refund for ${email}`,
    });
    const rows = await h.sql<{ subject: string; payload: Buffer }[]>`
      select subject, payload from outbox order by seq`;
    const ours = rows.filter((row) => row.payload.includes(Buffer.from(paid.commissionIds[0] ?? "")));
    // Each level's created event (the level-2 one names its parent), then each level's refund.
    expect(ours.map((row) => row.subject)).toEqual([
      "ledger.commission.created",
      "ledger.commission.created",
      "ledger.commission.refunded",
      "ledger.commission.refunded",
    ]);
    for (const row of rows) expect(row.payload.includes(Buffer.from(email))).toBe(false);

    const created = fromBinary(CommissionCreatedSchema, ours[0]?.payload ?? new Uint8Array());
    expect(created.commission?.customerEmail).toBeUndefined();
    const refunded = fromBinary(CommissionRefundedSchema, ours[2]?.payload ?? new Uint8Array());
    expect(refunded.commission?.reason).toBe("");
    expect(refunded.refundId).toMatch(/^rfd_/);
    const [stored] = await h.sql<{ reason: string; commissionId: string }[]>`
      select reason, commission_id from refunds where id = ${refunded.refundId}`;
    expect(stored).toEqual({ reason: `refund for ${email}`, commissionId: result?.commissionId });
  });
});
