import { afterEach, describe, expect, it, vi } from "vitest";
import type { Logger } from "../src/logger.js";
import { startPeriodicJob } from "../src/periodic.js";

/** A logger that keeps its warnings, for asserting what a failed run reported. */
function recordingLogger() {
  const warnings: { fields: unknown; message: string }[] = [];
  const logger = { warn: (fields: unknown, message: string) => warnings.push({ fields, message }) };
  return { logger: logger as unknown as Logger, warnings };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("startPeriodicJob", () => {
  it("runs at once and then every interval", async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    let runs = 0;
    const stop = startPeriodicJob(logger, "counting", 1000, async () => {
      runs++;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(3000);
    expect(runs).toBe(4);
    await stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(runs).toBe(4);
  });

  it("never starts a run while the last one is still going", async () => {
    vi.useFakeTimers();
    const { logger } = recordingLogger();
    let running = 0;
    let mostAtOnce = 0;
    let runs = 0;
    const stop = startPeriodicJob(logger, "slow", 1000, async () => {
      runs++;
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      running--;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(mostAtOnce).toBe(1);
    // Started at 0, 3000, 6000, 9000: the ticks at 1000, 2000, ... during a run are skipped.
    expect(runs).toBe(4);
    const stopped = stop();
    await vi.advanceTimersByTimeAsync(2500);
    await stopped;
    expect(running).toBe(0);
  });

  it("logs a failed run and runs again at the next tick", async () => {
    vi.useFakeTimers();
    const { logger, warnings } = recordingLogger();
    let runs = 0;
    const stop = startPeriodicJob(logger, "flaky", 1000, async () => {
      runs++;
      if (runs === 1) throw new Error("database down");
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    expect(warnings).toEqual([
      {
        fields: { err: expect.objectContaining({ message: "database down" }), job: "flaky" },
        message: expect.any(String),
      },
    ]);
    await stop();
  });
});
