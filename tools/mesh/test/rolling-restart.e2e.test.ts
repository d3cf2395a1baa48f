import http from "node:http";
import {
  createTestDatabase,
  createTestNamespace,
  type FrontBalancer,
  startFrontBalancer,
  type TestDatabase,
  type TestNamespace,
} from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * A rolling restart, as Kubernetes does one for a new release (issue 13): two replicas of the
 * ledger and two of the gateway, a balancer in front of the gateways, 20 keep-alive clients
 * recording payments and reading stats and affiliates without pause, and each replica in turn
 * stopped (SIGTERM, drained) and started again. No request may fail: the gateways send calls a
 * draining ledger refused to the other ledger, and a draining gateway closes its connections
 * with its last answers, so clients reconnect, through the balancer, to the other gateway.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let front: FrontBalancer;
let db: postgres.Sql;
let key: string;
const code = "ROLLING";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  db = postgres(database.url, { max: 2, onnotice: () => {} });
  mesh = await startTestMesh({
    databaseUrl: database.url,
    replicas: { ledger: 2, gateway: 2 },
    // The load below must meet the restarts, not the rate limits.
    env: {
      EVENTS_NAMESPACE: namespace.namespace,
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000",
      TRACKING_RATE_LIMIT_PER_MINUTE: "1000000",
    },
  });
  front = await startFrontBalancer(mesh.gatewayUrls);
  key = (await createProduct(mesh, "Rolling")).secret_key;
  const registered = await fetch(`${front.url}/api/v1/affiliates`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ email: "rolling@example.com", referralCode: code }),
  });
  expect(registered.status).toBe(201);
});

afterAll(async () => {
  await front?.close();
  await mesh?.stop();
  await db?.end();
  await namespace?.cleanup();
  await database?.drop();
});

interface Outcome {
  what: string;
  /** The instance being restarted when the answer came, or "steady". */
  during?: string;
  status?: number;
  body?: string;
  error?: string;
}

/** One request on the client's own keep-alive connection; a failure to get an answer is an outcome too. */
function send(agent: http.Agent, method: string, path: string, body?: unknown): Promise<Outcome> {
  const { hostname, port } = new URL(front.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const what = `${method} ${path}`;
  return new Promise((resolve) => {
    const request = http.request(
      {
        hostname,
        port,
        method,
        path,
        agent,
        headers: { "x-api-key": key, ...(payload ? { "content-type": "application/json" } : {}) },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () => resolve({ what, status: response.statusCode ?? 0, body: text }));
        response.on("error", (error: NodeJS.ErrnoException) => resolve({ what, error: error.code ?? error.message }));
      },
    );
    request.on("error", (error: NodeJS.ErrnoException) => resolve({ what, error: error.code ?? error.message }));
    request.end(payload);
  });
}

describe("a rolling restart of two ledgers and two gateways under 20-connection load", () => {
  it("fails no request, and stores each payment once", async () => {
    const outcomes: Outcome[] = [];
    const paymentIds: string[] = [];
    let stop = false;
    let during = "steady";
    const record = (outcome: Outcome) => outcomes.push({ ...outcome, during });
    // Each client owns one keep-alive connection and sends its next request as soon as it has an
    // answer: a payment, then the 7-day stats, then a page of affiliates, round and round.
    const client = async (index: number) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (let n = 0; !stop; n++) {
        const externalId = `roll_${index}_${n}`;
        paymentIds.push(externalId);
        record(
          await send(agent, "POST", "/events", {
            type: "payment",
            referral_code: code,
            amount_cents: 1000,
            external_id: externalId,
          }),
        );
        record(await send(agent, "GET", "/api/v1/stats?period=7d"));
        record(await send(agent, "GET", "/api/v1/affiliates?limit=10"));
      }
      agent.destroy();
    };
    const clients = Array.from({ length: 20 }, (_, i) => client(i));

    const answeredDuring: Record<string, number> = {};
    const pidsBefore = { ...mesh.pids };
    try {
      await eventually(async () => expect(outcomes.length).toBeGreaterThanOrEqual(200), 30_000);
      for (const instance of ["ledger", "ledger-2", "gateway", "gateway-2"]) {
        const before = outcomes.length;
        during = `stopping ${instance}`;
        await mesh.stopService(instance);
        during = `starting ${instance}`;
        await mesh.startService(instance);
        answeredDuring[instance] = outcomes.length - before;
        during = "steady";
        await sleep(500);
      }
    } finally {
      stop = true;
      await Promise.all(clients);
    }

    // The load really met every restart, and every replica was replaced.
    for (const instance of ["ledger", "ledger-2", "gateway", "gateway-2"]) {
      expect(answeredDuring[instance], instance).toBeGreaterThan(20);
      expect(mesh.pids[instance], instance).not.toBe(pidsBefore[instance]);
    }
    for (const gateway of mesh.gatewayUrls) expect(front.accepted[gateway]).toBeGreaterThan(0);

    // Every replica stopped because it was told to: none crashed and was restarted by the launcher.
    // On failure, the services' last words (warnings and errors) say why.
    const lastWords = mesh.recentOutput().slice(-40).join("\n");
    expect(
      mesh.recentOutput().filter((line) => / exited \(/.test(line)),
      lastWords,
    ).toEqual([]);
    const failed = outcomes.filter((o) => o.error !== undefined || (o.status !== 200 && o.status !== 201));
    expect(failed, lastWords).toEqual([]);
    expect(outcomes.filter((o) => o.what === "POST /events").every((o) => o.status === 201)).toBe(true);

    const stored = await db<{ externalId: string; count: number }[]>`
      select external_id as "externalId", count(*)::int as count from ledger.tracking_events
      where external_id like 'roll\\_%' group by external_id`;
    expect(stored).toHaveLength(paymentIds.length);
    expect(stored.filter((row) => row.count !== 1)).toEqual([]);
  });
});
