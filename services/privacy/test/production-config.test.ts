import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * Starts the built privacy service as its image does (deploy/Dockerfile's entrypoint) with
 * NODE_ENV=production, and answers its exit code and output. Whatever else the environment
 * holds, DATABASE_URL and NATS_URL point nowhere: a process that got past its configuration
 * would fail later, on another line.
 */
async function startInProduction(env: Record<string, string>) {
  const { NODE_OPTIONS: _, ERASURE_HASH_KEY: __, ...inherited } = process.env;
  const child = spawn(process.execPath, ["--import", "@affiliate/platform/instrumentation", "dist/main.js"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    env: {
      ...inherited,
      NODE_ENV: "production",
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
      NATS_URL: "nats://127.0.0.1:1",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { code, stdout, stderrLines: stderr.split("\n").filter((line) => line !== "") };
}

describe("privacy started in production", () => {
  it("exits 1 at start with one line naming ERASURE_HASH_KEY when the Secret lacks it", async () => {
    const { code, stdout, stderrLines } = await startInProduction({});
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderrLines).toEqual([
      "configuration error: ERASURE_HASH_KEY: must be set when NODE_ENV=production (32+ random characters)",
    ]);
  });

  it("exits 1 the same way when ERASURE_HASH_KEY is the public development value", async () => {
    const { code, stderrLines } = await startInProduction({
      ERASURE_HASH_KEY: "local-development-erasure-hash-key-change-me",
    });
    expect(code).toBe(1);
    expect(stderrLines).toEqual([
      "configuration error: ERASURE_HASH_KEY: is the public development value: set one of your own when NODE_ENV=production",
    ]);
  });
});
