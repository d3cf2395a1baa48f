import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { repositoryRoot, services } from "../src/services.js";

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** A free port for every internal service, so that runs side by side never meet on a default port. */
export async function freeServicePorts(): Promise<Record<string, number>> {
  const ports: Record<string, number> = {};
  for (const service of services.filter((s) => s.protocol === "rpc")) ports[service.name] = await freePort();
  return ports;
}

/**
 * A free metrics port for every service. The launcher's own fallback (the default if free, else
 * any) checks before the service binds, so two meshes starting side by side can still race for
 * a default; tests name theirs.
 */
export async function freeMetricsPorts(): Promise<Record<string, number>> {
  const ports: Record<string, number> = {};
  for (const service of services) ports[service.name] = await freePort();
  return ports;
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built tool of this repository (`tools/<name>/dist/main.js`) to completion. */
export function runTool(
  tool: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<CommandResult> {
  return run(process.execPath, [join(repositoryRoot, "tools", tool, "dist", "main.js"), ...args], env, timeoutMs);
}

/** Runs a bash script at the repository root, stopping at the first failing command. */
export function runScript(script: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<CommandResult> {
  return run("bash", ["-euo", "pipefail", "-c", script], env, timeoutMs);
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: repositoryRoot,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Retries `check` until it stops throwing, for effects that travel through the broker. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
