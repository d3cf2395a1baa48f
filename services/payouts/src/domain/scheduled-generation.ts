import { claimScheduledRun } from "../store/schedule.js";
import type { PayoutDeps } from "./finish-drafts.js";
import { generatePayouts } from "./generate-payouts.js";

/**
 * The payout schedule (contract 8, PAYOUT_INTERVAL_MS): when a run is due, the replica that
 * claims it generates payouts for every product. A product that fails is logged and retried at
 * the next run; the others go on. Returns how many payouts were created, or undefined when no
 * run was due.
 */
export async function runScheduledGeneration(deps: PayoutDeps, intervalMs: number): Promise<number | undefined> {
  if (!(await claimScheduledRun(deps.sql, "generate_payouts", deps.clock(), intervalMs))) return undefined;
  let created = 0;
  for (const productId of await deps.partners.listProductIds()) {
    try {
      created += (await generatePayouts(deps, productId)).length;
    } catch (error) {
      deps.logger.warn({ err: error, productId }, "scheduled payout generation failed for a product");
    }
  }
  return created;
}
