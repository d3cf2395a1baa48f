import http from "node:http";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * The mesh as an orchestrator keeps it: a service that dies comes back by itself while the others
 * keep serving, and a gateway told to stop (SIGTERM) drains its keep-alive clients without
 * breaking a single request.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let key: string;

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    // The load below must meet the drain, not the rate limit.
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", RATE_LIMIT_PER_MINUTE: "1000000" },
  });
  key = (await createProduct(mesh, "Supervision")).secret_key;
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

const status = async (path: string) =>
  (await fetch(mesh.gatewayUrl + path, { headers: { "x-api-key": key } }).then((res) => res.status)) as number;

/** Kills the service with SIGKILL and waits until the supervisor reports it back, ready. */
async function killAndAwaitReturn(name: string): Promise<string> {
  const before = mesh.pids[name] ?? 0;
  process.kill(before, "SIGKILL");
  await eventually(async () => {
    const pid = mesh.pids[name];
    expect(pid).not.toBe(before);
    expect(mesh.recentOutput()).toContain(`${name} is back (pid ${pid})`);
  }, 60_000);
  return mesh.recentOutput().findLast((line) => line.startsWith(`${name} exited`)) ?? "";
}

describe("supervision", () => {
  it("restarts a killed service after 1 s, saying so, while the rest of the mesh keeps serving", async () => {
    expect(await status("/api/v1/stats?period=7d")).toBe(200);
    const ledger = mesh.pids.ledger ?? 0;
    process.kill(ledger, "SIGKILL");
    // Partners answers through the gateway while the ledger is down.
    expect(await status("/api/v1/program")).toBe(200);
    await eventually(async () => expect(mesh.pids.ledger).not.toBe(ledger), 30_000);
    await eventually(async () => expect(await status("/api/v1/stats?period=7d")).toBe(200), 30_000);
    expect(mesh.recentOutput()).toContain(
      "ledger exited (signal SIGKILL); restarting ledger in 1 s (crash 1 in a row)",
    );
  });

  it("doubles the delay for each crash in a row, and says when a service keeps dying", async () => {
    expect(await killAndAwaitReturn("payouts")).toBe(
      "payouts exited (signal SIGKILL); restarting payouts in 1 s (crash 1 in a row)",
    );
    expect(await killAndAwaitReturn("payouts")).toBe(
      "payouts exited (signal SIGKILL); restarting payouts in 2 s (crash 2 in a row)",
    );
    expect(await killAndAwaitReturn("payouts")).toBe(
      "payouts exited (signal SIGKILL); restarting payouts in 4 s (crash 3 in a row: it keeps dying, see its log above)",
    );
    expect(await status("/api/v1/payouts")).toBe(200);
  });
});

describe("the gateway on SIGTERM", () => {
  it("drains 20 keep-alive connections under load: every request answered, none 5xx, no reset", async () => {
    const statuses = new Map<number, number>();
    const failures = new Map<string, number>();
    const count = <K>(map: Map<K, number>, item: K) => map.set(item, (map.get(item) ?? 0) + 1);
    const { hostname, port } = new URL(mesh.gatewayUrl);
    // Each client owns one keep-alive connection and sends its next request as soon as it has an
    // answer, until the stopped gateway refuses a new connection.
    const client = async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (;;) {
        const outcome = await new Promise<number | string>((resolve) => {
          http
            .get({ hostname, port, path: "/api/v1/program", headers: { "x-api-key": key }, agent }, (response) => {
              response.resume();
              response.on("end", () => resolve(response.statusCode ?? 0));
            })
            .on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        });
        if (typeof outcome === "number") count(statuses, outcome);
        else count(failures, outcome);
        if (outcome === "ECONNREFUSED") break;
      }
      agent.destroy();
    };
    const clients = Array.from({ length: 20 }, client);
    await eventually(async () => expect(statuses.get(200) ?? 0).toBeGreaterThanOrEqual(500), 30_000);

    await mesh.stopService("gateway");
    await Promise.all(clients);
    expect([...statuses.keys()]).toEqual([200]);
    expect(failures).toEqual(new Map([["ECONNREFUSED", 20]]));

    await mesh.startService("gateway");
    expect(await status("/api/v1/program")).toBe(200);
  });
});
