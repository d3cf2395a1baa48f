import type { Logger } from "./logger.js";

/**
 * Runs `job` now and then every `everyMs`, never two runs at once (a slow run is not stacked on).
 * A failure is logged and the job runs again at the next tick. Returns a stop function that
 * waits for the run in progress.
 */
export function startPeriodicJob(
  logger: Logger,
  name: string,
  everyMs: number,
  job: () => Promise<unknown>,
): () => Promise<void> {
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running) return;
    running = job()
      .catch((error: unknown) => logger.warn({ err: error, job: name }, "background job failed; will retry"))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, everyMs);
  tick();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
