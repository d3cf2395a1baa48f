import { type TrackDeps, trackBatch } from "./track-batch.js";
import type { TrackInput, TrackResult } from "./types.js";

/**
 * Records one click, signup or payment (contract section 5): a batch of one, so a single event
 * and a batched one cannot be told apart (see trackBatch). A live attributed payment to an active
 * partnership also creates its level-1 commission, and a level-2 one for an active sponsor, in
 * the same transaction as the event, the rollups and the commission.created events. Sandbox
 * events (test keys) are stored apart and only say what they would have created.
 */
export async function trackEvent(deps: TrackDeps, input: TrackInput): Promise<TrackResult> {
  const [outcome] = await trackBatch(deps, [input]);
  if (!outcome?.result) throw outcome?.error ?? new Error("trackBatch answered no outcome");
  return outcome.result;
}
