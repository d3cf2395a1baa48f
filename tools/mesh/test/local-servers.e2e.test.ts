import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricsPortVariable, portVariable, repositoryRoot, services } from "../src/services.js";
import { freePort, runScript } from "./helpers.js";

/**
 * `npm start` on a machine where nothing answers on the default addresses of Postgres and NATS,
 * as on a fresh laptop: the defaults are moved to ports nothing listens on, and the data folder
 * is this test's own (LOCAL_POSTGRES_PORT, LOCAL_NATS_PORT, LOCAL_SERVERS_DIR).
 */
let directory: string;
let ports: { postgres: number; nats: number };

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), "local-servers-"));
  ports = { postgres: await freePort(), nats: await freePort() };
});

/** Launchers still running: a test that fails half-way leaves none behind (nor their servers). */
const running = new Set<{ child: ChildProcess; exited: Promise<number | null> }>();

afterAll(async () => {
  for (const launched of running) await stop(launched.child, launched.exited);
  rmSync(directory, { recursive: true, force: true });
});

/** Whether nothing accepts connections on the port. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

/** The launcher as `npm start` runs it (after its build), with DATABASE_URL and NATS_URL unset. */
async function launch(extraEnv: Record<string, string> = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  const gatewayPort = await freePort();
  for (const service of services) {
    if (service.protocol === "rpc") env[portVariable(service)] = String(await freePort());
    env[metricsPortVariable(service)] = String(await freePort());
  }
  const child = spawn(process.execPath, [join(repositoryRoot, "tools", "mesh", "dist", "main.js")], {
    cwd: repositoryRoot,
    env: {
      ...env,
      PORT: String(gatewayPort),
      LOCAL_SERVERS_DIR: directory,
      LOCAL_POSTGRES_PORT: String(ports.postgres),
      LOCAL_NATS_PORT: String(ports.nats),
      LOG_LEVEL: "warn",
      ...extraEnv,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const entry = { child, exited };
  running.add(entry);
  void exited.then(() => running.delete(entry));
  return {
    child,
    exited,
    stderr: () => stderr,
    gatewayUrl: `http://127.0.0.1:${gatewayPort}`,
    partnersUrl: `http://127.0.0.1:${env.PARTNERS_RPC_PORT}`,
  };
}

/** Resolves once the launcher says the mesh is ready; fails with its output if it exits first. */
async function ready(launched: Awaited<ReturnType<typeof launch>>): Promise<void> {
  let exitCode: number | null | undefined;
  void launched.exited.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + meshStartMs - 20_000;
  while (!launched.stderr().includes("mesh ready:")) {
    if (exitCode !== undefined) throw new Error(`npm start exited ${exitCode}:\n${launched.stderr()}`);
    if (Date.now() > deadline) throw new Error(`npm start not ready in time:\n${launched.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  return exited;
}

/** Two starts of the whole mesh on a loaded machine: minutes, not the default minute. */
const meshStartMs = 300_000;

describe("npm start with no Postgres or NATS answering", () => {
  it("without a nats-server, says in one line how to get one, and starts nothing", async () => {
    const launched = await launch({ NATS_SERVER_BIN: join(directory, "no-nats-server-here") });
    expect(await launched.exited).toBe(1);
    const lines = launched.stderr().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`nothing answers on nats://127.0.0.1:${ports.nats}`);
    expect(lines[0]).toContain("apt install nats-server");
    expect(lines[0]).toContain("brew install nats-server");
    expect(lines[0]).toContain("docker run");
    // Not half-way: no embedded Postgres was created or left running.
    expect(existsSync(join(directory, "postgres"))).toBe(false);
    expect(await refuses(ports.postgres)).toBe(true);
  });

  let productKey = "";

  it(
    "starts an embedded Postgres and nats-server, and the walk-through's first steps answer",
    async () => {
      const launched = await launch();
      try {
        await ready(launched);
        expect(launched.stderr()).toContain(
          `no Postgres answered on 127.0.0.1:${ports.postgres}: started the embedded Postgres 15 there (data in ${join(directory, "postgres")}`,
        );
        expect(launched.stderr()).toContain(`no NATS answered on 127.0.0.1:${ports.nats}: started`);
        expect(launched.stderr()).toContain("set DATABASE_URL to use your own");
        // The embedded Postgres runs autovacuum, as production does: no warning.
        expect(launched.stderr()).not.toContain("autovacuum = off");

        // Steps 1 to 3 of the README's walk-through: a product, its program, two affiliates.
        const readme = await readFile(join(repositoryRoot, "README.md"), "utf8");
        const block = /^## Walk-through\n[\s\S]*?^```sh\n([\s\S]*?)^```$/m.exec(readme)?.[1] ?? "";
        const firstSteps = block.slice(0, block.indexOf("\n# 4."));
        expect(firstSteps).toContain("# 3.");
        const result = await runScript(firstSteps, { API: launched.gatewayUrl, PARTNERS_URL: launched.partnersUrl });
        expect(result.code, result.stderr).toBe(0);
        const answers = result.stdout
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line));
        productKey = answers.find((answer) => answer.secret_key)?.secret_key ?? "";
        expect(productKey).toMatch(/^sk_live_/);
        expect(answers.find((answer) => answer.partnership?.referralCode === "ADA")).toBeDefined();
        expect(answers.find((answer) => answer.summary)?.summary).toMatchObject({ created: 1, failed: 1 });
      } finally {
        await stop(launched.child, launched.exited);
      }
      expect(await launched.exited, launched.stderr()).toBe(0);
      // Stopped with the mesh.
      expect(await refuses(ports.postgres)).toBe(true);
      expect(await refuses(ports.nats)).toBe(true);
    },
    meshStartMs + 60_000,
  );

  it(
    "a second start reuses the data: the product and affiliates of the first are there",
    async () => {
      expect(productKey).not.toBe("");
      const launched = await launch();
      try {
        await ready(launched);
        expect(launched.stderr()).toContain("data kept from the last run");
        const headers = { "x-api-key": productKey };
        const program = await fetch(`${launched.gatewayUrl}/api/v1/program`, { headers });
        expect(program.status).toBe(200);
        expect(((await program.json()) as { data: unknown }).data).toMatchObject({
          commission_rate_bps: 2500,
          hold_days: 14,
        });
        const affiliates = await fetch(`${launched.gatewayUrl}/api/v1/affiliates`, { headers });
        expect(affiliates.status).toBe(200);
        const listed = (await affiliates.json()) as { data: unknown[] };
        expect(listed.data).toHaveLength(2);
        expect(JSON.stringify(listed.data)).toContain('"ADA"');
      } finally {
        await stop(launched.child, launched.exited);
      }
      expect(await launched.exited, launched.stderr()).toBe(0);
    },
    meshStartMs + 60_000,
  );
});
