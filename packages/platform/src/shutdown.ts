import { trace } from "@opentelemetry/api";
import type { Logger } from "./logger.js";

export type ShutdownStep = [name: string, run: () => Promise<unknown> | unknown];

/**
 * On SIGTERM or SIGINT, runs the steps in order (stop accepting, finish in-flight work, drain
 * consumers, flush the outbox, close connections) and exits 0. A step that fails is logged and
 * the rest still run. A second signal, or 20 s without finishing, exits 1 at once.
 *
 * A process started by a supervisor with an IPC channel (`npm start`'s launcher) also drains when
 * that channel closes: the supervisor is gone, and nothing would ever stop the process otherwise.
 */
export function onShutdown(logger: Logger, steps: ShutdownStep[]): void {
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) {
      logger.warn({ signal }, "second signal; exiting now");
      process.exit(1);
    }
    shuttingDown = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => {
      logger.error("shutdown took longer than 20 s; exiting");
      process.exit(1);
    }, 20_000).unref();
    for (const [name, run] of steps) {
      try {
        await run();
      } catch (error) {
        logger.warn({ err: error, step: name }, "shutdown step failed");
      }
    }
    await flushSpans();
    logger.info("stopped");
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
  // Unlike a second signal, losing the supervisor mid-drain is no reason to cut the drain short.
  if (process.channel) {
    process.once("disconnect", () => {
      if (!shuttingDown) void shutdown("supervisor gone");
    });
  }
}

/** Exports the spans still buffered: process.exit skips the SDK's own exit hook. */
async function flushSpans(): Promise<void> {
  const proxy = trace.getTracerProvider() as { getDelegate?: () => unknown };
  const provider = proxy.getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined;
  await provider?.forceFlush?.().catch(() => undefined);
}

/**
 * A failure nothing handled (a port in use at start-up, a lost connection during boot) ends the
 * process with one JSON log line naming the cause and exit code 1, not a raw stack trace on
 * stderr. Install right after the logger exists.
 */
export function exitOnUnhandledFailure(logger: Logger): void {
  const fail = (error: unknown) => {
    logger.fatal({ err: error }, "unhandled failure; exiting");
    process.exit(1);
  };
  process.once("uncaughtException", fail);
  process.once("unhandledRejection", fail);
}
