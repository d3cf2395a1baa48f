import { spawn } from "node:child_process";
import net from "node:net";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricsPortVariable, portVariable, repositoryRoot, services } from "../src/services.js";
import { eventually, freePort, runTool } from "./helpers.js";

/**
 * `npm start` itself, as an operator runs it: its start-up errors, and its stop by the signals a
 * terminal (Ctrl-C reaches the whole process group), a process manager or a container runtime
 * (one signal to the process it started) sends.
 */
let database: TestDatabase;
let namespace: TestNamespace;

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
});

afterAll(async () => {
  await namespace?.cleanup();
  await database?.drop();
});

/** Whether nothing accepts connections on the port any more. */
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

interface ServiceLogLine {
  name?: string;
  msg?: string;
  signal?: string;
}

/** `npm start` in a process group of its own, on free ports, awaited until the gateway is ready. */
async function npmStart() {
  const ports: Record<string, number> = {};
  for (const service of services) {
    ports[portVariable(service)] = await freePort();
    ports[metricsPortVariable(service)] = await freePort();
  }
  const child = spawn("npm", ["start"], {
    cwd: repositoryRoot,
    env: {
      ...process.env,
      ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
      DATABASE_URL: database.url,
      EVENTS_NAMESPACE: namespace.namespace,
      // The services' own shutdown lines are info.
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const pid = child.pid ?? 0;
  const started = {
    pid,
    ports: Object.values(ports),
    exited,
    stderr: () => stderr,
    /** The services' JSON log lines. */
    serviceLogs: () =>
      stdout.split("\n").flatMap((line): ServiceLogLine[] => {
        try {
          return line.startsWith("{") ? [JSON.parse(line) as ServiceLogLine] : [];
        } catch {
          return [];
        }
      }),
    /** Whatever happens in a test: the launcher's group, then (if a test failed) its services drain by themselves. */
    kill() {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // Already gone, as it should be.
      }
    },
  };
  try {
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${ports.PORT}/readyz`);
      expect(res.status).toBe(200);
    }, 120_000);
  } catch (error) {
    started.kill();
    throw new Error(`npm start was not ready: ${String(error)}\n${stderr}`);
  }
  return started;
}

describe("npm start's launcher", () => {
  it("fails within seconds with one line naming an unreachable Postgres", async () => {
    const url = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
    const result = await runTool("mesh", [], { DATABASE_URL: url, PORT: String(await freePort()) });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^cannot reach Postgres at ${url.replaceAll(".", "\\.")} .*nothing accepts connections on .*start Postgres`,
      ),
    );
  });

  it("refuses to start a service on a port something else holds, in one line", async () => {
    const holder = net.createServer();
    const taken = await freePort();
    await new Promise<void>((resolve) => holder.listen(taken, "127.0.0.1", resolve));
    try {
      const result = await runTool("mesh", [], {
        DATABASE_URL: database.url,
        EVENTS_NAMESPACE: namespace.namespace,
        PORT: String(await freePort()),
        PARTNERS_RPC_PORT: String(taken),
      });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split("\n").at(-1)).toBe(
        `port ${taken} for partners is already in use (another mesh?); stop it or set PARTNERS_RPC_PORT`,
      );
    } finally {
      holder.close();
    }
  });

  it("fails with one line naming an unreachable NATS", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const result = await runTool("mesh", [], {
      DATABASE_URL: database.url,
      NATS_URL: url,
      PORT: String(await freePort()),
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cannot reach NATS at nats:\/\/127\.0\.0\.1:\d+ .*nats-server/);
  });

  // Ctrl-C in a terminal signals the whole foreground group (npm and the launcher; npm forwards
  // it once more); a process manager or `kill` signals the npm process alone.
  it.each([
    { how: "Ctrl-C (SIGINT to the process group)", group: true, signal: "SIGINT" as const },
    { how: "SIGTERM to the npm start process alone", group: false, signal: "SIGTERM" as const },
    { how: "SIGINT to the npm start process alone", group: false, signal: "SIGINT" as const },
  ])(
    "$how drains every service exactly once and stops them all",
    { timeout: 180_000 }, // npm start builds first: a cold turbo cache on two busy cores takes a while
    async ({ group, signal }) => {
      const started = await npmStart();
      try {
        process.kill(group ? -started.pid : started.pid, signal);
        await started.exited;
        expect(started.stderr()).toContain(`${signal}: stopping the mesh`);
        expect(started.stderr()).toContain("mesh stopped");
        const logs = started.serviceLogs();
        for (const { name } of services) {
          const own = logs.filter((line) => line.name === name);
          expect(own.filter((line) => line.msg === "shutting down").map((line) => line.signal)).toEqual(["SIGTERM"]);
          expect(own.filter((line) => line.msg === "stopped")).toHaveLength(1);
        }
        expect(logs.filter((line) => line.msg?.includes("second signal"))).toEqual([]);
        for (const port of started.ports) expect(await refuses(port)).toBe(true);
      } finally {
        started.kill();
      }
    },
  );
});
