import { fieldErrorsOf } from "@affiliate/platform";
import { CommissionAction, CommissionStatus } from "@affiliate/proto/ledger";
import { Code, type ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveDueCommissions } from "../src/domain/approve-due-commissions.js";
import {
  day,
  EventType,
  failure,
  type Harness,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  uniqueEmail,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

/** A payment by a sponsored affiliate: returns the level-1 and level-2 commission ids. */
async function sponsoredPayment(productId: string, amountCents = 10_000n, occurredAt?: Date) {
  const sponsor = await newAffiliate(h, productId);
  const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
  const customerEmail = uniqueEmail();
  const { event } = await track(h, {
    productId,
    type: EventType.PAYMENT,
    referralCode: aff.code,
    amountCents,
    customerEmail,
    occurredAt,
  });
  return {
    parent: event?.commissions[0]?.id ?? "",
    child: event?.commissions[1]?.id ?? "",
    aff,
    sponsor,
    customerEmail,
  };
}

const statusOf = async (productId: string, commissionId: string) =>
  (await h.ledger.getCommission({ productId, commissionId })).commission?.status;

describe("reading commissions", () => {
  it("returns the commission with its payment, customer and linkage", async () => {
    const productId = await newProduct(h);
    const { parent, aff, customerEmail } = await sponsoredPayment(productId, 1234n);
    const { commission } = await h.ledger.getCommission({ productId, commissionId: parent });
    expect(commission).toMatchObject({
      id: parent,
      productId,
      partnershipId: aff.id,
      amountCents: 247n,
      status: CommissionStatus.PENDING,
      level: 1,
      referralCode: aff.code,
      customerEmail,
      paymentAmountCents: 1234n,
      payoutId: "",
    });
  });

  it("answers another product's commission like a missing one", async () => {
    const productId = await newProduct(h);
    const { parent } = await sponsoredPayment(await newProduct(h));
    for (const commissionId of [parent, "com_missing"]) {
      expect((await failure(h.ledger.getCommission({ productId, commissionId })))?.code).toBe(Code.NotFound);
    }
  });

  it("reads several by id in one call, leaving out unknown ids and another product's", async () => {
    const productId = await newProduct(h);
    const { parent, child } = await sponsoredPayment(productId);
    const foreign = await sponsoredPayment(await newProduct(h));
    const { commissions } = await h.ledger.batchGetCommissions({
      productId,
      commissionIds: [parent, child, parent, foreign.parent, "com_missing"],
    });
    expect(Object.keys(commissions).sort()).toEqual([parent, child].sort());
    // Each is the commission GetCommission reads.
    expect(commissions[parent]).toEqual((await h.ledger.getCommission({ productId, commissionId: parent })).commission);
    expect((await h.ledger.batchGetCommissions({ productId, commissionIds: [] })).commissions).toEqual({});
    const tooMany = await failure(
      h.ledger.batchGetCommissions({ productId, commissionIds: Array.from({ length: 101 }, (_, i) => `com_${i}`) }),
    );
    expect(fieldErrorsOf(tooMany as ConnectError)?.fieldErrors).toHaveProperty("commission_ids");
  });

  it("lists newest first with filters and signed page tokens", async () => {
    const productId = await newProduct(h);
    const first = await sponsoredPayment(productId);
    const second = await sponsoredPayment(productId);
    const ids: string[] = [];
    let pageToken = "";
    do {
      const page = await h.ledger.listCommissions({ productId, pageSize: 1, pageToken });
      ids.push(...page.commissions.map((c) => c.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(ids).toEqual([second.child, second.parent, first.child, first.parent]);

    const byPartnership = await h.ledger.listCommissions({ productId, pageSize: 10, partnershipId: first.sponsor.id });
    expect(byPartnership.commissions.map((c) => c.id)).toEqual([first.child]);
    await h.ledger.updateCommission({ productId, commissionId: first.parent, action: CommissionAction.REJECT });
    const rejected = await h.ledger.listCommissions({ productId, pageSize: 10, status: CommissionStatus.REJECTED });
    expect(rejected.commissions.map((c) => c.id).sort()).toEqual([first.parent, first.child].sort());

    const { nextPageToken } = await h.ledger.listCommissions({ productId, pageSize: 1 });
    const crossFilter = await failure(
      h.ledger.listCommissions({ productId, pageSize: 1, pageToken: nextPageToken, status: CommissionStatus.PENDING }),
    );
    expect(fieldErrorsOf(crossFilter as ConnectError)?.fieldErrors).toHaveProperty("cursor");
    const badSize = await failure(h.ledger.listCommissions({ productId, pageSize: 0 }));
    expect(fieldErrorsOf(badSize as ConnectError)?.fieldErrors).toHaveProperty("limit");
  });
});

describe("approving and rejecting", () => {
  it("approve ends the hold early, and the level-2 child follows", async () => {
    const productId = await newProduct(h);
    const { parent, child } = await sponsoredPayment(productId);
    const { commission } = await h.ledger.updateCommission({
      productId,
      commissionId: parent,
      action: CommissionAction.APPROVE,
    });
    expect(commission?.status).toBe(CommissionStatus.APPROVED);
    expect(await statusOf(productId, child)).toBe(CommissionStatus.APPROVED);
    const again = await failure(
      h.ledger.updateCommission({ productId, commissionId: parent, action: CommissionAction.APPROVE }),
    );
    expect(again?.code).toBe(Code.FailedPrecondition);
  });

  it("reject voids a pending commission with its child and stores the reason", async () => {
    const productId = await newProduct(h);
    const { parent, child } = await sponsoredPayment(productId);
    const { commission } = await h.ledger.updateCommission({
      productId,
      commissionId: parent,
      action: CommissionAction.REJECT,
      reason: "fraudulent signup",
    });
    expect(commission).toMatchObject({ status: CommissionStatus.REJECTED, reason: "fraudulent signup" });
    expect(await statusOf(productId, child)).toBe(CommissionStatus.REJECTED);
    const twice = await failure(
      h.ledger.updateCommission({ productId, commissionId: parent, action: CommissionAction.REJECT }),
    );
    expect(twice?.code).toBe(Code.FailedPrecondition);
  });

  it("reject takes an approved commission without a payout, and refuses one in a payout", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const free = await sponsoredPayment(productId);
    await h.ledger.updateCommission({ productId, commissionId: free.parent, action: CommissionAction.REJECT });
    expect(await statusOf(productId, free.parent)).toBe(CommissionStatus.REJECTED);
    const linked = await sponsoredPayment(productId);
    await h.sql`update commissions set payout_id = 'po_test' where id = ${linked.parent}`;
    const error = await failure(
      h.ledger.updateCommission({ productId, commissionId: linked.parent, action: CommissionAction.REJECT }),
    );
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(await statusOf(productId, linked.parent)).toBe(CommissionStatus.APPROVED);
  });

  it("refuses an unspecified action, an overlong reason and unknown commissions", async () => {
    const productId = await newProduct(h);
    const { parent } = await sponsoredPayment(productId);
    expect((await failure(h.ledger.updateCommission({ productId, commissionId: parent })))?.code).toBe(
      Code.InvalidArgument,
    );
    const long = await failure(
      h.ledger.updateCommission({
        productId,
        commissionId: parent,
        action: CommissionAction.REJECT,
        reason: "x".repeat(501),
      }),
    );
    expect(fieldErrorsOf(long as ConnectError)?.fieldErrors).toHaveProperty("reason");
    expect(await statusOf(productId, parent)).toBe(CommissionStatus.PENDING);
    const missing = await failure(
      h.ledger.updateCommission({ productId, commissionId: "com_x", action: CommissionAction.APPROVE }),
    );
    expect(missing?.code).toBe(Code.NotFound);
  });
});

describe("the hold sweep", () => {
  it("approves exactly the commissions whose hold has ended", async () => {
    const productId = await newProduct(h, { holdDays: 10 });
    const now = h.clock.now.getTime();
    const due = await sponsoredPayment(productId, 1000n, new Date(now - 10 * day + 60_000));
    const notYet = await sponsoredPayment(productId, 1000n, new Date(now - 9 * day));
    await approveDueCommissions(h.sql, new Date(now + 60_000));
    expect(await statusOf(productId, due.parent)).toBe(CommissionStatus.APPROVED);
    expect(await statusOf(productId, due.child)).toBe(CommissionStatus.APPROVED);
    expect(await statusOf(productId, notYet.parent)).toBe(CommissionStatus.PENDING);
  });

  it("several sweeps at once approve each commission once, with one event each", async () => {
    const productId = await newProduct(h, { holdDays: 1 });
    const past = new Date(h.clock.now.getTime() - 2 * day + 60_000);
    const payments = [];
    for (let i = 0; i < 5; i++) payments.push(await sponsoredPayment(productId, 1000n, past));
    // Created pending (the hold had not ended when tracked): push the hold into the past.
    await h.sql`update commissions set status = 'pending', hold_until = now() - interval '1 minute' where product_id = ${productId}`;
    const ids = payments.flatMap((p) => [p.parent, p.child]);
    const approvedBefore = await h.sql`select id from outbox where subject = 'ledger.commission.approved'`;
    const counts = await Promise.all(Array.from({ length: 4 }, () => approveDueCommissions(h.sql, new Date(), 3)));
    expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(ids.length);
    const approvedAfter = await h.sql<
      { payload: Uint8Array }[]
    >`select payload from outbox where subject = 'ledger.commission.approved'`;
    const newEvents = approvedAfter.length - approvedBefore.length;
    expect(newEvents).toBe(counts.reduce((a, b) => a + b, 0));
    for (const id of ids) expect(await statusOf(productId, id)).toBe(CommissionStatus.APPROVED);
  });
});
