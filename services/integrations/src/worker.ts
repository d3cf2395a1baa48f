import { type JobWorker, startJobWorker } from "@affiliate/platform";
import { applyStoredEvent } from "./domain/apply-event.js";
import type { ApplyDeps } from "./domain/applying.js";
import type { EventJob } from "./store/events.js";

/**
 * The apply worker: stored events are its jobs. One customer's events are applied one at a time,
 * over every replica, in the order received (its signup before its payment); others in parallel.
 */
export function startApplyWorker(deps: ApplyDeps & { concurrency?: number; pollMs?: number }): JobWorker {
  return startJobWorker<EventJob>({
    sql: deps.sql,
    schema: "integrations",
    table: "stripe_events",
    logger: deps.logger,
    clock: deps.clock,
    perGroup: { column: "apply_group", maxInFlight: 1 },
    ...(deps.concurrency ? { concurrency: deps.concurrency } : {}),
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    run: (job) => applyStoredEvent(deps, job),
  });
}
