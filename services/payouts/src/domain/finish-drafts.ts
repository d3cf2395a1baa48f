import type { Logger, Queryable, Sql } from "@affiliate/platform";
import { enqueuePayoutEvent } from "../events/outbox.js";
import { unapplyAdjustments } from "../store/adjustments.js";
import { insertLinks } from "../store/links.js";
import {
  type Draft,
  deletePayout,
  lockDraft,
  lockStaleDraft,
  payoutExists,
  recomputePayout,
  setStatus,
} from "../store/payouts.js";
import { addPendingRelease, pendingReleases, removePendingRelease } from "../store/releases.js";
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

/** Whether a net amount makes a payout: above 0 and at least the program's minimum (contract 8). */
export const qualifies = (netCents: number, minimumCents: number) => netCents > 0 && netCents >= minimumCents;

type Outcome = { kind: "created"; payout: Payout } | { kind: "released" } | { kind: "finished_elsewhere" };

/**
 * Step B of a payout's creation, in the caller's transaction with the draft locked: links what
 * the ledger claimed, sums links and the adjustments taken in step A, and either makes the
 * payout pending with its payout.created event, or, when the net no longer qualifies (things
 * changed since the balances were read), frees the adjustments, deletes the draft and records
 * that the ledger must release the claimed commissions.
 */
async function completeLockedDraft(
  tx: Queryable,
  draft: Draft,
  claimed: ClaimedCommission[],
  minimumCents: number,
): Promise<Outcome> {
  await insertLinks(tx, draft.id, claimed);
  const totals = await recomputePayout(tx, draft.id);
  if (totals.commissionCount === 0 || !qualifies(totals.amountCents, minimumCents)) {
    await unapplyAdjustments(tx, draft.id);
    await deletePayout(tx, draft.id);
    await addPendingRelease(tx, { payoutId: draft.id, productId: draft.productId });
    return { kind: "released" };
  }
  const payout = await setStatus(tx, draft.id, { status: "pending" });
  await enqueuePayoutEvent(tx, "payoutCreated", payout);
  return { kind: "created", payout };
}

/**
 * Finishes a draft whose commissions the ledger claimed. When the draft is already gone, a
 * recovery abandoned it, possibly before this claim linked the commissions again: they are
 * released once more (idempotent), so nothing stays linked to a payout that does not exist.
 */
export async function finishDraft(
  deps: PayoutDeps,
  draft: Draft,
  claimed: ClaimedCommission[],
  minimumCents: number,
): Promise<Payout | undefined> {
  const outcome = await deps.sql.begin(async (tx): Promise<Outcome> => {
    const locked = await lockDraft(tx, draft.id);
    if (locked) return completeLockedDraft(tx, locked, claimed, minimumCents);
    if (await payoutExists(tx, draft.id)) return { kind: "finished_elsewhere" };
    await addPendingRelease(tx, { payoutId: draft.id, productId: draft.productId });
    return { kind: "released" };
  });
  if (outcome.kind === "released") await releaseNow(deps, draft);
  return outcome.kind === "created" ? outcome.payout : undefined;
}

/** Asks the ledger to release a payout id's commissions; on failure the pending row stays for the next sweep. */
async function releaseNow(deps: PayoutDeps, release: { id: string; productId: string }): Promise<boolean> {
  try {
    await deps.ledger.releaseCommissions(release.productId, release.id);
    await removePendingRelease(deps.sql, release.id);
    return true;
  } catch (error) {
    deps.logger.warn({ err: error, payoutId: release.id }, "ledger release failed; will retry");
    return false;
  }
}

/**
 * Recovers generations that stopped between reserving a draft (step A) and finishing it
 * (step B): takes each draft older than draftRecoveryAgeMs that no one holds (SKIP LOCKED, one
 * at a time), claims again (idempotent per payout id) and completes step B while holding the
 * draft's lock. Then retries the ledger releases still owed. A draft that fails is left for the
 * next run and does not block the others. Returns how many drafts it finished or abandoned.
 */
export async function finishDrafts(deps: PayoutDeps): Promise<number> {
  const before = new Date(deps.clock().getTime() - draftRecoveryAgeMs);
  const failed: string[] = [];
  let finished = 0;
  for (;;) {
    // Set inside the transaction, read after it: which draft this attempt is about.
    const attempt: { draft?: Draft } = {};
    try {
      const outcome = await deps.sql.begin(async (tx) => {
        const draft = await lockStaleDraft(tx, before, failed);
        if (!draft) return undefined;
        attempt.draft = draft;
        const minimumCents = await deps.partners.payoutMinimumCents(draft.productId);
        const claimed = await deps.ledger.claimCommissions(draft.productId, draft.partnershipId, draft.id);
        return completeLockedDraft(tx, draft, claimed, minimumCents);
      });
      if (!outcome || !attempt.draft) break;
      finished += 1;
      if (outcome.kind === "released") await releaseNow(deps, attempt.draft);
      else if (outcome.kind === "created") {
        deps.logger.info({ payoutId: outcome.payout.id }, "recovered a payout draft");
      }
    } catch (error) {
      if (!attempt.draft) throw error;
      deps.logger.warn({ err: error, payoutId: attempt.draft.id }, "could not finish payout draft; will retry");
      failed.push(attempt.draft.id);
    }
  }
  for (const release of await pendingReleases(deps.sql, 100)) {
    await releaseNow(deps, { id: release.payoutId, productId: release.productId });
  }
  return finished;
}
