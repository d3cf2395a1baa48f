import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createLogger, type Logger } from "../src/logger.js";

/** A logger that writes nothing: the tests assert on behaviour, not on log lines. */
export const silentLogger = createLogger("platform-test", "silent");

/**
 * Polls `condition` until it returns a truthy value and returns that value. The deadline only
 * bounds a broken run: it is generous and never what a test asserts.
 */
export async function eventually<T>(
  description: string,
  condition: () => Promise<T> | T,
  { timeoutMs = 15_000, intervalMs = 50 } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${description}`);
    await sleep(intervalMs);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A temporary directory of migration files; `remove()` deletes it. */
export async function migrationsDirectory(files: Record<string, string> = {}) {
  const path = await mkdtemp(join(tmpdir(), "platform-migrations-"));
  const write = async (name: string, text: string) => writeFile(join(path, name), text);
  for (const [name, text] of Object.entries(files)) await write(name, text);
  return { path, write, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** A logger that keeps its lines in memory, for tests that wait for something to be logged. */
export function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: "debug", formatters: { level: (label) => ({ level: label }) } },
    { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  );
  return { logger, lines };
}
