import { newId } from "@affiliate/platform";
import { claimUnappliedAdjustments, unappliedAdjustmentTotals } from "../store/adjustments.js";
import { type Draft, insertDraft } from "../store/payouts.js";
import { finishDraft, finishDrafts, type PayoutDeps, qualifies } from "./finish-drafts.js";
import type { Payout } from "./types.js";

/**
 * Creates the product's payouts (contract 8): for each active partnership whose approved
 * commissions not in a payout plus its unapplied (negative) adjustments reach the program's
 * minimum and are above 0, one pending payout links them and payout.created is emitted.
 * Returns the payouts this call created.
 *
 * Safe to run concurrently and on several replicas: the ledger links a commission to one payout
 * id atomically, adjustments are taken by a conditional update, and a payout that ends up below
 * the minimum (another run took its commissions) is dropped and its claim released.
 */
export async function generatePayouts(deps: PayoutDeps, productId: string): Promise<Payout[]> {
  try {
    await finishDrafts(deps);
  } catch (error) {
    deps.logger.warn({ err: error }, "draft recovery failed; generating anyway");
  }
  const minimumCents = await deps.partners.payoutMinimumCents(productId);
  const balances = await deps.ledger.listPayableBalances(productId);
  const adjustments = await unappliedAdjustmentTotals(deps.sql, productId);

  const commissions = new Map(balances.map((b) => [b.partnershipId, b.amountCents]));
  const candidates = [...new Set([...commissions.keys(), ...adjustments.keys()])].sort();
  const netOf = (id: string) => (commissions.get(id) ?? 0) + (adjustments.get(id) ?? 0);
  const qualifying = candidates.filter((id) => qualifies(netOf(id), minimumCents));
  const active = await deps.partners.activePartnerships(productId, qualifying);

  // Partnerships are independent (each step is safe under concurrency), so a few run at once:
  // each costs three round trips, and one at a time 10,000 partnerships would take minutes.
  const queue = qualifying.filter((id) => active.has(id));
  const created: (Payout | undefined)[] = new Array(queue.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < queue.length; index = next++) {
      const partnershipId = queue[index] as string;
      created[index] = await createPayout(deps, { id: newId("po"), productId, partnershipId }, minimumCents);
    }
  };
  await Promise.all(Array.from({ length: Math.min(generationConcurrency, queue.length) }, worker));
  return created.filter((payout): payout is Payout => payout !== undefined);
}

/** Partnerships processed at once by one generation; bounded so a large product cannot exhaust the pool. */
const generationConcurrency = 8;

/**
 * Step A: reserves the payout id as a draft and takes the partnership's unapplied adjustments,
 * in one transaction. Exported for tests that stop a generation half-way.
 */
export async function reserveDraft(deps: Pick<PayoutDeps, "sql">, draft: Draft): Promise<void> {
  await deps.sql.begin(async (tx) => {
    await insertDraft(tx, draft);
    await claimUnappliedAdjustments(tx, draft);
  });
}

/** One payout: reserve (A), let the ledger claim the commissions, finish (B). */
async function createPayout(deps: PayoutDeps, draft: Draft, minimumCents: number): Promise<Payout | undefined> {
  await reserveDraft(deps, draft);
  const claimed = await deps.ledger.claimCommissions(draft.productId, draft.partnershipId, draft.id);
  return finishDraft(deps, draft, claimed, minimumCents);
}
