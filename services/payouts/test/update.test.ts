import { fieldErrorsOf, newId } from "@affiliate/platform";
import { PayoutAction, PayoutStatus } from "@affiliate/proto/payouts";
import { Code, type ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { reserveDrafts } from "../src/domain/generate-payouts.js";
import { adjustmentsOf, linksOf, pendingPayout, unappliedAdjustment } from "./fixtures.js";
import { failure, type Harness, invariantViolations, outboxEvents, startHarness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  expect(await invariantViolations(h)).toEqual([]);
});
afterAll(() => h.close());

type State = "pending" | "approved" | "failed" | "completed" | "processing";
type Action = "approve" | "reject" | "mark_paid" | "mark_failed";

const actions: Record<Action, PayoutAction> = {
  approve: PayoutAction.APPROVE,
  reject: PayoutAction.REJECT,
  mark_paid: PayoutAction.MARK_PAID,
  mark_failed: PayoutAction.MARK_FAILED,
};

/** A fresh payout brought to `state` through the RPCs (processing has no RPC into it: set directly). */
async function payoutIn(state: State) {
  const created = await pendingPayout(h);
  const { productId, payoutId } = created;
  const act = (action: Action, reference?: string) =>
    h.payouts.updatePayout({ productId, payoutId, action: actions[action], reference });
  if (state === "approved" || state === "failed" || state === "completed") await act("approve");
  if (state === "failed") await act("mark_failed", "bank refused");
  if (state === "completed") await act("mark_paid", "tr_9");
  if (state === "processing") await h.sql`update payouts set status = 'processing' where id = ${payoutId}`;
  return created;
}

const refusals: Record<Action, string> = {
  approve: "Payout must be in pending or failed state to approve",
  reject: "Payout must be in pending state to reject",
  mark_paid: "Payout must be in approved state to mark as paid",
  mark_failed: "Payout must be in approved state to mark as failed",
};

/** Spec 3.2 and contract 8: what each action does from each state (undefined: refused). */
const transitions: Record<State, Partial<Record<Action, PayoutStatus | "deleted">>> = {
  pending: { approve: PayoutStatus.APPROVED, reject: "deleted" },
  approved: { mark_paid: PayoutStatus.COMPLETED, mark_failed: PayoutStatus.FAILED },
  failed: { approve: PayoutStatus.APPROVED },
  completed: {},
  processing: {},
};

describe("every action from every state", () => {
  const cases = (Object.keys(transitions) as State[]).flatMap((state) =>
    (Object.keys(actions) as Action[]).map((action) => {
      const expected = transitions[state][action];
      const outcome = expected === undefined ? "refused" : expected === "deleted" ? "deleted" : PayoutStatus[expected];
      return [state, action, outcome, expected] as const;
    }),
  );

  it.each(cases)("%s + %s -> %s", async (state, action, _outcome, expected) => {
    const { productId, payoutId } = await payoutIn(state);
    const before = (await h.sql`select * from payouts where id = ${payoutId}`)[0];
    const eventsBefore = (await outboxEvents(h, payoutId)).length;

    const call = h.payouts.updatePayout({ productId, payoutId, action: actions[action] });

    if (expected === undefined) {
      const error = await failure(call);
      expect(error?.code).toBe(Code.FailedPrecondition);
      expect(error?.rawMessage).toBe(refusals[action]);
      expect((await h.sql`select * from payouts where id = ${payoutId}`)[0]).toEqual(before);
      expect(await outboxEvents(h, payoutId)).toHaveLength(eventsBefore);
    } else if (expected === "deleted") {
      const { deleted, payout } = await call;
      expect(deleted).toBe(true);
      expect(payout?.id).toBe(payoutId);
    } else {
      const { deleted, payout } = await call;
      expect(deleted).toBe(false);
      expect(payout?.status).toBe(expected);
      expect((await h.payouts.getPayout({ productId, payoutId })).payout?.status).toBe(expected);
    }
  });
});

describe("effects of the actions", () => {
  it("approve sets approved_at and emits payout.approved", async () => {
    const { productId, payoutId } = await payoutIn("pending");
    const { payout } = await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
    expect(payout?.approvedAt).toBeDefined();
    const events = await outboxEvents(h, payoutId);
    expect(events.map((e) => e.subject)).toEqual(["payouts.payout.created", "payouts.payout.approved"]);
    expect(events[1]?.payout).toEqual(payout);
  });

  it("approve from failed keeps the failure reason and approves again", async () => {
    const { productId, payoutId } = await payoutIn("failed");
    const failed = (await h.payouts.getPayout({ productId, payoutId })).payout;
    expect(failed).toMatchObject({ status: PayoutStatus.FAILED, failureReason: "bank refused" });
    const { payout } = await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
    expect(payout).toMatchObject({ status: PayoutStatus.APPROVED, failureReason: "bank refused" });
    expect((await outboxEvents(h, payoutId)).map((e) => e.subject)).toEqual([
      "payouts.payout.created",
      "payouts.payout.approved",
      "payouts.payout.approved",
    ]);
  });

  it("mark_paid completes with paid_at and the transfer reference, and emits payout.completed", async () => {
    const { productId, payoutId } = await payoutIn("approved");
    const { payout } = await h.payouts.updatePayout({
      productId,
      payoutId,
      action: PayoutAction.MARK_PAID,
      reference: "tr_1Abc",
    });
    expect(payout).toMatchObject({ status: PayoutStatus.COMPLETED, gatewayTransferId: "tr_1Abc", amountCents: 6000n });
    expect(payout?.paidAt).toBeDefined();
    const events = await outboxEvents(h, payoutId);
    expect(events.at(-1)).toEqual({ subject: "payouts.payout.completed", payout });
  });

  it("mark_paid without a reference leaves the transfer id empty", async () => {
    const { productId, payoutId } = await payoutIn("approved");
    const { payout } = await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID });
    expect(payout).toMatchObject({ status: PayoutStatus.COMPLETED, gatewayTransferId: "" });
  });

  it("mark_failed stores the reason and emits nothing", async () => {
    const { productId, payoutId } = await payoutIn("approved");
    const { payout } = await h.payouts.updatePayout({
      productId,
      payoutId,
      action: PayoutAction.MARK_FAILED,
      reference: "account closed",
    });
    expect(payout).toMatchObject({ status: PayoutStatus.FAILED, failureReason: "account closed" });
    expect((await outboxEvents(h, payoutId)).map((e) => e.subject)).toEqual([
      "payouts.payout.created",
      "payouts.payout.approved",
    ]);
  });

  it("reject deletes the payout and its links, frees its adjustments and emits payout.rejected as it was", async () => {
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 9000);
    const adjustment = await unappliedAdjustment(h, productId, partnershipId, -2500);
    const [created] = (await h.payouts.generatePayouts({ productId })).payouts;
    const payoutId = created?.id ?? "";
    expect(created).toMatchObject({ amountCents: 6500n, adjustmentCents: -2500n });

    const { payout, deleted } = await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.REJECT });

    expect(deleted).toBe(true);
    expect(payout).toEqual(created);
    expect((await failure(h.payouts.getPayout({ productId, payoutId })))?.code).toBe(Code.NotFound);
    expect(await linksOf(h, payoutId)).toEqual([]);
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ id: adjustment, payoutId: null }]);
    const events = await outboxEvents(h, payoutId);
    expect(events.at(-1)).toEqual({ subject: "payouts.payout.rejected", payout: created });
    // A second reject finds nothing.
    const again = await failure(h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.REJECT }));
    expect(again?.code).toBe(Code.NotFound);

    // Once the ledger consumed payout.rejected, the next payout takes both again.
    h.ledger.unlink(productId, payoutId);
    const [next] = (await h.payouts.generatePayouts({ productId })).payouts;
    expect(next).toMatchObject({ amountCents: 6500n, adjustmentCents: -2500n, commissionCount: 1n });
    expect(h.ledger.get(commission).payoutId).toBe(next?.id);
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ id: adjustment, payoutId: next?.id }]);
  });
});

describe("refusals", () => {
  it("answers another product's payout, an unknown one and a draft like a missing one", async () => {
    const { payoutId, partnershipId, productId } = await payoutIn("pending");
    const otherProduct = h.partners.product();
    const draft = newId("po");
    await reserveDrafts(h.deps, [{ id: draft, productId, partnershipId }]);
    for (const [product, id] of [
      [otherProduct, payoutId],
      [productId, "po_missing"],
      [productId, draft],
    ] as const) {
      expect((await failure(h.payouts.getPayout({ productId: product, payoutId: id })))?.code).toBe(Code.NotFound);
      const update = await failure(
        h.payouts.updatePayout({ productId: product, payoutId: id, action: PayoutAction.APPROVE }),
      );
      expect(update?.code).toBe(Code.NotFound);
    }
    expect((await h.payouts.getPayout({ productId, payoutId })).payout?.status).toBe(PayoutStatus.PENDING);
    await h.sql`delete from payouts where id = ${draft}`;
  });

  it("refuses a reference over 500 characters on the reference field, and a missing action", async () => {
    const { productId, payoutId } = await payoutIn("approved");
    const long = await failure(
      h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID, reference: "x".repeat(501) }),
    );
    expect(long?.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(long as ConnectError)?.fieldErrors).toHaveProperty("reference");
    const noAction = await failure(h.payouts.updatePayout({ productId, payoutId }));
    expect(noAction?.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(noAction as ConnectError)?.fieldErrors).toHaveProperty("action");

    const { payout } = await h.payouts.updatePayout({
      productId,
      payoutId,
      action: PayoutAction.MARK_PAID,
      reference: "x".repeat(500),
    });
    expect(payout?.gatewayTransferId).toHaveLength(500);
  });
});

describe("listing payouts", () => {
  it("pages newest first with filters and signed page tokens, never showing drafts", async () => {
    const productId = h.partners.product(1000);
    const [a, b, c] = [0, 1, 2].map(() => h.partners.partnership(productId));
    for (const p of [a, b, c]) h.ledger.add(productId, p ?? "", 2000);
    const { payouts } = await h.payouts.generatePayouts({ productId });
    const ids = payouts
      .map((p) => p.id)
      .sort()
      .reverse();
    await h.payouts.updatePayout({ productId, payoutId: ids[0] ?? "", action: PayoutAction.APPROVE });
    const draft = newId("po");
    await reserveDrafts(h.deps, [{ id: draft, productId, partnershipId: a ?? "" }]);

    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await h.payouts.listPayouts({ productId, pageSize: 2, pageToken });
      seen.push(...page.payouts.map((p) => p.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(seen).toEqual(ids);

    const approved = await h.payouts.listPayouts({ productId, pageSize: 10, status: PayoutStatus.APPROVED });
    expect(approved.payouts.map((p) => p.id)).toEqual([ids[0]]);
    const pending = await h.payouts.listPayouts({ productId, pageSize: 10, status: PayoutStatus.PENDING });
    expect(pending.payouts.map((p) => p.id)).toEqual(ids.slice(1));
    const ofB = await h.payouts.listPayouts({ productId, pageSize: 10, partnershipId: b });
    expect(ofB.payouts.map((p) => p.partnershipId)).toEqual([b]);
    expect((await h.payouts.listPayouts({ productId: h.partners.product(), pageSize: 10 })).payouts).toEqual([]);

    const { nextPageToken } = await h.payouts.listPayouts({ productId, pageSize: 1 });
    const crossFilter = await failure(
      h.payouts.listPayouts({ productId, pageSize: 1, pageToken: nextPageToken, status: PayoutStatus.PENDING }),
    );
    expect(fieldErrorsOf(crossFilter as ConnectError)?.fieldErrors).toHaveProperty("cursor");
    for (const pageSize of [0, 101]) {
      const bad = await failure(h.payouts.listPayouts({ productId, pageSize }));
      expect(fieldErrorsOf(bad as ConnectError)?.fieldErrors).toHaveProperty("limit");
    }
    await h.sql`delete from payouts where id = ${draft}`;
  });
});
