/**
 * What end-to-end tests start and use: the mesh on free ports of its own, a product made with the
 * operator CLI, the repository's tools run to completion. `@affiliate/mesh/testing` for the tests
 * of other packages (the client's), test/helpers.ts for the mesh's own.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { freePort } from "@affiliate/testing";
import { type Mesh, startMesh } from "./mesh.js";
import { repositoryRoot, services } from "./services.js";

/** A free port: the testing package hands them out, never one twice in a test process. */
export { freePort };

/** The instance names of a mesh with `replicas`: `ledger`, `ledger-2`… (see MeshOptions.replicas). */
function instanceNames(replicas: Record<string, number> = {}): { name: string; protocol: "rpc" | "http" }[] {
  return services.flatMap((service) =>
    Array.from({ length: replicas[service.name] ?? 1 }, (_, i) => ({
      name: i === 0 ? service.name : `${service.name}-${i + 1}`,
      protocol: service.protocol,
    })),
  );
}

/**
 * A free port for every internal service instance (and every gateway after the first, which
 * listens on the mesh's `port`), so that runs side by side never meet on a default port.
 */
export async function freeServicePorts(replicas?: Record<string, number>): Promise<Record<string, number>> {
  const ports: Record<string, number> = {};
  for (const { name, protocol } of instanceNames(replicas)) {
    if (protocol === "rpc" || name !== "gateway") ports[name] = await freePort();
  }
  return ports;
}

/**
 * A free metrics port for every instance. The launcher's own fallback (the default if free, else
 * any) checks before the service binds, so two meshes starting side by side can still race for
 * a default; tests name theirs.
 */
export async function freeMetricsPorts(replicas?: Record<string, number>): Promise<Record<string, number>> {
  const ports: Record<string, number> = {};
  for (const { name } of instanceNames(replicas)) ports[name] = await freePort();
  return ports;
}

/**
 * The mesh as `npm start` starts it, on free ports of its own (public, RPC and metrics, so runs
 * side by side never meet), its output piped: what every end-to-end test starts. `env` reaches
 * every service; Postgres and NATS default to the test run's; `replicas` runs several processes
 * of a service (MeshOptions.replicas).
 */
export async function startTestMesh(options: {
  databaseUrl: string;
  natsUrl?: string;
  env: Record<string, string>;
  replicas?: Record<string, number>;
  /** Receives the launcher's lines (MeshOptions.report). */
  report?: (line: string) => void;
}): Promise<Mesh> {
  return startMesh({
    databaseUrl: options.databaseUrl,
    natsUrl: options.natsUrl ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222",
    host: "127.0.0.1",
    port: await freePort(),
    servicePorts: await freeServicePorts(options.replicas),
    metricsPorts: await freeMetricsPorts(options.replicas),
    output: "pipe",
    env: options.env,
    ...(options.replicas ? { replicas: options.replicas } : {}),
    ...(options.report ? { report: options.report } : {}),
  });
}

/** What `admin products create` prints: the product's id and its live and sandbox keys. */
export interface CreatedProduct {
  product_id: string;
  secret_key: string;
  test_secret_key: string;
  publishable_key: string;
  test_publishable_key: string;
}

/** A product made with the operator CLI against the mesh's partners, as a merchant's first step. */
export async function createProduct(mesh: Mesh, name: string): Promise<CreatedProduct> {
  const created = await runTool("admin", ["products", "create", "--name", name], { PARTNERS_URL: mesh.urls.partners });
  if (created.code !== 0) throw new Error(`admin products create exited ${created.code}: ${created.stderr}`);
  return JSON.parse(created.stdout) as CreatedProduct;
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
