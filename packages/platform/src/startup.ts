import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError } from "./db.js";
import type { Logger } from "./logger.js";

/**
 * NATS errors that say the broker is not there yet or not answering yet (a node starting, a
 * JetStream leader being elected under load), as opposed to a configuration it refuses.
 */
const brokerNotYetCodes = new Set([
  "TIMEOUT",
  "CONNECTION_REFUSED",
  "CONNECTION_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DRAINING",
  "DISCONNECT",
  // No responders: the JetStream API has no server answering it yet.
  "503",
]);

/** Whether a start-up step failed because a dependency is not reachable yet, so trying again may succeed. */
export function isDependencyNotYetAvailable(error: unknown): boolean {
  if (isConnectionError(error)) return true;
  const code = String((error as { code?: unknown } | undefined)?.code ?? "");
  if (brokerNotYetCodes.has(code)) return true;
  // JetStream's own "temporarily unavailable" (10008) while its meta leader is elected.
  return /temporarily unavailable|no suitable peers|leader/i.test(error instanceof Error ? error.message : "");
}

export interface StartupRetryOptions {
  /** How long to keep trying before the start-up fails (the process exits and is restarted). */
  giveUpAfterMs?: number;
  /** The first pause; each failure doubles it, up to maxDelayMs. */
  firstDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs a start-up step that needs a dependency (connecting to NATS, creating a stream or a
 * durable consumer, applying migrations) until it succeeds, pausing with back-off after each
 * failure that says the dependency is not reachable yet (isDependencyNotYetAvailable) and saying
 * so in one warning per attempt. A NATS that answers TIMEOUT under load, or a Postgres that comes
 * up a few seconds after the services, then delays the start rather than ending the process.
 * Any other error, or the same one past `giveUpAfterMs`, is thrown: the process exits, and its
 * supervisor restarts it with its own back-off.
 */
export async function retryStartup<T>(
  logger: Pick<Logger, "warn">,
  what: string,
  step: () => Promise<T>,
  options: StartupRetryOptions = {},
): Promise<T> {
  const giveUpAt = Date.now() + (options.giveUpAfterMs ?? 60_000);
  let delayMs = options.firstDelayMs ?? 250;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!isDependencyNotYetAvailable(error) || Date.now() + delayMs > giveUpAt) throw error;
      logger.warn({ err: error, attempt, retryInMs: delayMs }, `${what}: dependency not available yet; trying again`);
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 2, options.maxDelayMs ?? 5000);
    }
  }
}
