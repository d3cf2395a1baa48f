import type { Logger, Queryable, Sql } from "@affiliate/platform";
import { enqueuePayoutEvents } from "../events/outbox.js";
import { unapplyAdjustments } from "../store/adjustments.js";
import { insertLinks } from "../store/links.js";
import {
  type Draft,
  deletePayouts,
  existingPayoutIds,
  lockDrafts,
  lockStaleDrafts,
  markPending,
  recomputePayouts,
} from "../store/payouts.js";
import { addPendingUnlinks, pendingUnlinks, removePendingUnlinks } from "../store/pending-unlinks.js";
import type { ClaimedCommission, Ledger, Partners } from "./ports.js";
import type { Payout } from "./types.js";

export interface PayoutDeps {
  sql: Sql;
  ledger: Ledger;
  partners: Partners;
  logger: Logger;
  clock: () => Date;
}

/** A draft younger than this may still be finished by the generation that created it. */
export const draftRecoveryAgeMs = 30_000;

/**
 * Drafts made, claimed and finished together. A batch costs a few statements and one claim
 * call whatever its size, so large batches spread that cost thin (one at a time, a payout cost
 * ~20 ms of CPU across the services and Postgres); 500 keeps each transaction's locks, the
 * statements' arrays and the ledger's answer moderate, stays under the ledger's 1000 claims per
 * call, and a failure leaves at most 500 drafts for recovery.
 */
export const payoutBatchSize = 500;

/** Whether a net amount makes a payout: above 0 and at least the program's minimum (contract 8). */
export const qualifies = (netCents: bigint, minimumCents: bigint) => netCents > 0n && netCents >= minimumCents;

/** What finishing a set of drafts did: payouts made pending, and drafts whose claim the ledger must unlink. */
interface Finished {
  created: Payout[];
  toUnlink: Draft[];
}

/**
 * Step B of creating payouts, in the caller's transaction with the drafts locked: links what the
 * ledger claimed for them, sums links and the adjustments taken in step A, makes the drafts
 * whose net qualifies pending with their payout.created events, and drops the others (things
 * changed since the balances were read). Drafts must share a product (`minimumCents` is its).
 */
async function completeLockedDrafts(
  tx: Queryable,
  drafts: Draft[],
  claimed: ClaimedCommission[],
  minimumCents: bigint,
): Promise<Finished> {
  if (drafts.length === 0) return { created: [], toUnlink: [] };
  const ids = new Set(drafts.map((draft) => draft.id));
  const links = claimed.filter((commission) => ids.has(commission.payoutId));
  await insertLinks(tx, links);
  const totals = await recomputePayouts(tx, [...ids]);
  const qualifying = new Set(
    totals.filter((p) => p.commissionCount > 0 && qualifies(p.amountCents, minimumCents)).map((p) => p.id),
  );
  const dropped = drafts.filter((draft) => !qualifying.has(draft.id));
  await dropDrafts(tx, dropped);
  const created = await markPending(tx, [...qualifying]);
  await enqueuePayoutEvents(tx, "payoutCreated", created);
  return { created, toUnlink: dropped };
}

/**
 * Drafts that will not become payouts: their adjustments are free again, the rows go, and a
 * pending unlink records, in the same transaction, that the ledger must unlink their claims.
 */
async function dropDrafts(tx: Queryable, drafts: Draft[]): Promise<void> {
  const ids = drafts.map((draft) => draft.id);
  await unapplyAdjustments(tx, ids);
  await deletePayouts(tx, ids);
  await addPendingUnlinks(tx, drafts);
}

/**
 * Finishes a generation's drafts, all of one product, whose commissions the ledger claimed. A
 * draft that is no longer one was finished by a recovery, or abandoned by one, possibly before
 * this claim linked its commissions again: those are unlinked once more (idempotent), so
 * nothing stays linked to a payout that does not exist. Returns the payouts created.
 */
export async function finishClaimedDrafts(
  deps: PayoutDeps,
  drafts: Draft[],
  claimed: ClaimedCommission[],
  minimumCents: bigint,
): Promise<Payout[]> {
  const finished = await deps.sql.begin(async (tx): Promise<Finished> => {
    const ids = drafts.map((draft) => draft.id);
    const locked = await lockDrafts(tx, ids);
    const outcome = await completeLockedDrafts(tx, locked, claimed, minimumCents);
    const abandoned = await abandonedDrafts(tx, drafts, locked);
    await addPendingUnlinks(tx, abandoned);
    return { created: outcome.created, toUnlink: [...outcome.toUnlink, ...abandoned] };
  });
  await unlinkNow(deps, finished.toUnlink);
  return finished.created;
}

/** Those of `drafts` that were not locked as drafts and no longer exist at all. */
async function abandonedDrafts(tx: Queryable, drafts: Draft[], locked: Draft[]): Promise<Draft[]> {
  const lockedIds = new Set(locked.map((draft) => draft.id));
  const gone = drafts.filter((draft) => !lockedIds.has(draft.id));
  const goneIds = gone.map((draft) => draft.id);
  const existing = await existingPayoutIds(tx, goneIds);
  return gone.filter((draft) => !existing.has(draft.id));
}

/** Payout ids per ReleaseCommissions call: the ledger's maximum. */
export const maxUnlinksPerCall = 1000;

/**
 * Asks the ledger to unlink payout ids' commissions: one call per product and 1000 ids (two
 * generations racing over a large program can drop thousands of drafts at once), then forgets
 * those pending unlinks. On a failure their rows stay for the next sweep.
 */
async function unlinkNow(deps: PayoutDeps, payouts: { id: string; productId: string }[]): Promise<void> {
  const byProduct = new Map<string, { id: string }[]>();
  for (const payout of payouts) byProduct.set(payout.productId, [...(byProduct.get(payout.productId) ?? []), payout]);
  for (const [productId, ofProduct] of byProduct) {
    for (let start = 0; start < ofProduct.length; start += maxUnlinksPerCall) {
      const payoutIds = ofProduct.slice(start, start + maxUnlinksPerCall).map((payout) => payout.id);
      try {
        await deps.ledger.unlinkCommissions(productId, payoutIds);
        await removePendingUnlinks(deps.sql, payoutIds);
      } catch (error) {
        deps.logger.warn({ err: error, payoutIds }, "ledger unlink failed; will retry");
      }
    }
  }
}

/**
 * Recovers generations that stopped between reserving drafts (step A) and finishing them
 * (step B): takes batches of drafts older than draftRecoveryAgeMs that no one holds (SKIP
 * LOCKED), each of one product, claims again (idempotent per payout id) and completes step B
 * while holding the drafts' locks. Then retries the ledger unlinks still owed. A batch that
 * fails is left for the next run and does not block the others. Returns how many drafts it
 * finished or abandoned.
 */
export async function recoverStaleDrafts(deps: PayoutDeps): Promise<number> {
  const before = new Date(deps.clock().getTime() - draftRecoveryAgeMs);
  const failed: string[] = [];
  let finished = 0;
  for (;;) {
    // Set inside the transaction, read after it: which drafts this attempt is about.
    const attempt: { drafts: Draft[] } = { drafts: [] };
    try {
      const outcome = await deps.sql.begin(async (tx) => {
        attempt.drafts = await lockStaleDrafts(tx, before, failed, payoutBatchSize);
        return recoverLockedDrafts(deps, tx, attempt.drafts);
      });
      if (!outcome) break;
      finished += attempt.drafts.length;
      await unlinkNow(deps, outcome.toUnlink);
      deps.logger.info(
        { created: outcome.created.map((payout) => payout.id), dropped: outcome.toUnlink.length },
        "recovered payout drafts",
      );
    } catch (error) {
      if (attempt.drafts.length === 0) throw error;
      deps.logger.warn(
        { err: error, payoutIds: attempt.drafts.map((draft) => draft.id) },
        "could not finish payout drafts; will retry",
      );
      failed.push(...attempt.drafts.map((draft) => draft.id));
    }
  }
  await unlinkNow(deps, await pendingUnlinks(deps.sql, maxUnlinksPerCall));
  return finished;
}

/** Claims again for locked stale drafts of one product and completes them; undefined when there are none. */
async function recoverLockedDrafts(deps: PayoutDeps, tx: Queryable, drafts: Draft[]): Promise<Finished | undefined> {
  const [first] = drafts;
  if (!first) return undefined;
  const minimumCents = await deps.partners.payoutMinimumCents(first.productId);
  const claimed = await deps.ledger.claimCommissions(
    first.productId,
    drafts.map((draft) => ({ partnershipId: draft.partnershipId, payoutId: draft.id })),
  );
  return completeLockedDrafts(tx, drafts, claimed, minimumCents);
}
