/**
 * What a seeder needs to write the ledger's rows directly, as recording writes them: the row
 * shapes, the commission arithmetic, a recorded event's rollup changes and the fold of rollup
 * deltas. The bench seeds a year of traffic with it (bench/src/lib/seed.ts); the service never
 * imports it.
 */
export { commissionAmount } from "./domain/money.js";
export { RollupChanges } from "./domain/rollup-changes.js";
export { addEventToRollups } from "./domain/track-batch.js";
export type { CommissionStatus } from "./domain/types.js";
export type { NewCommission } from "./store/commissions.js";
export { foldActivityDeltas, foldPartnershipDeltas } from "./store/rollups.js";
export type { EventRow } from "./store/tracking-events.js";
