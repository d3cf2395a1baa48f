import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { connect } from "nats";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * Webhooks through the whole mesh, each service its own process as `npm start` runs them: what
 * only the real producers, the real relay and a real notifier process can show. The trace of the
 * API call reaches the receiver; no stream message or outbox row of these flows carries personal
 * data; a notifier killed with SIGKILL between two attempts makes the next one after its
 * restart, and one killed during an attempt leaves it to the next claim once its lease has
 * ended: never two at once.
 */

interface Arrival {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An answer to one request; `hold` never answers (the request stays open until its sender goes). */
type Answer = { status: number; headers?: Record<string, string> } | { hold: true };

/**
 * The merchant's receiver: records every request, answers each path's programmed answers in turn
 * (then 200), holds each answer a moment so overlapping attempts would overlap here, and counts
 * the requests of a path in flight at once.
 */
class Receiver {
  readonly arrivals: Arrival[] = [];
  private readonly plans = new Map<string, Answer[]>();
  private readonly inFlight = new Map<string, number>();
  readonly maxInFlight = new Map<string, number>();
  private server!: Server;
  private port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const path = req.url ?? "/";
      const now = (this.inFlight.get(path) ?? 0) + 1;
      this.inFlight.set(path, now);
      this.maxInFlight.set(path, Math.max(now, this.maxInFlight.get(path) ?? 0));
      res.on("close", () => this.inFlight.set(path, (this.inFlight.get(path) ?? 1) - 1));
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8");
      });
      req.on("end", () => {
        this.arrivals.push({ path, headers: req.headers, body });
        const answer = this.plans.get(path)?.shift() ?? { status: 200 };
        if ("hold" in answer) return;
        setTimeout(() => res.writeHead(answer.status, answer.headers ?? {}).end("ok"), 200);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  program(path: string, answers: Answer[]): void {
    this.plans.set(path, [...answers]);
  }

  at(path: string): Arrival[] {
    return this.arrivals.filter((arrival) => arrival.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let receiver: Receiver;
let key: string;
let referralCode: string;
const affiliateEmail = `affiliate-${randomBytes(4).toString("hex")}@example.com`;

beforeAll(async () => {
  receiver = await new Receiver().start();
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  await captureOutboxRows();
  key = (await createProduct(mesh, "Webhooks")).secret_key;
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
  await receiver?.close();
});

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** A webhook on the receiver's `path` (the mesh allows private targets, as `npm start` does). */
async function webhook(path: string, events?: string[]): Promise<{ id: string }> {
  const created = await api("POST", "/api/v1/webhooks", { url: receiver.url(path), ...(events ? { events } : {}) });
  expect(created.status).toBe(201);
  return { id: created.json.data.id };
}

/** The affiliate every payment is attributed to, registered once (with a welcome email). */
async function affiliateCode(): Promise<string> {
  if (!referralCode) {
    const registered = await api("POST", "/api/v1/affiliates", { email: affiliateEmail, name: "Ada Affiliate" });
    expect(registered.status).toBe(201);
    referralCode = registered.json.partnership.referralCode;
  }
  return referralCode;
}

/** A live payment attributed to the affiliate: one level-1 commission, so one commission.created. */
async function payment(fields: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const paid = await api(
    "POST",
    "/events",
    {
      type: "payment",
      referral_code: await affiliateCode(),
      amount_cents: 10_000,
      external_id: `ch_${randomBytes(6).toString("hex")}`,
      ...fields,
    },
    headers,
  );
  expect(paid.status).toBe(201);
  return { commissionId: paid.json.data.commissions[0].id as string };
}

/**
 * The relay deletes an outbox row in the transaction that publishes it, so a scan afterwards
 * would find the tables empty whatever they had held. A trigger in this run's database keeps a
 * copy of every row any service writes to its outbox, for the scan below.
 */
async function captureOutboxRows(): Promise<void> {
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table public.captured_outbox (schema text, subject text, payload bytea, headers text)`;
    await sql`
      create function public.capture_outbox() returns trigger language plpgsql as $$
      begin
        insert into public.captured_outbox values (tg_table_schema, new.subject, new.payload, new.headers::text);
        return new;
      end $$`;
    const schemas = await sql<{ schema: string }[]>`
      select table_schema as schema from information_schema.tables where table_name = 'outbox'`;
    expect(schemas.map((s) => s.schema)).toEqual(expect.arrayContaining(["partners", "ledger", "payouts", "notifier"]));
    for (const { schema } of schemas) {
      await sql`create trigger capture after insert on ${sql(schema)}.outbox
                for each row execute function public.capture_outbox()`;
    }
  } finally {
    await sql.end();
  }
}

interface Found {
  where: string;
  needle: string;
}

/** Which needles occur in any outbox row written so far or any message retained in the run's streams. */
async function scanOutboxesAndStreams(needles: string[]): Promise<{ found: Found[]; rows: number; messages: number }> {
  const found: Found[] = [];
  const search = (where: string, bytes: Uint8Array) => {
    const haystack = Buffer.from(bytes);
    for (const needle of needles) if (haystack.includes(Buffer.from(needle))) found.push({ where, needle });
  };
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  let rows = 0;
  try {
    for (const row of await sql<{ schema: string; subject: string; payload: Buffer; headers: string }[]>`
      select schema, subject, payload, headers from public.captured_outbox`) {
      rows += 1;
      search(`outbox ${row.schema}: ${row.subject}`, Buffer.concat([row.payload, Buffer.from(row.headers)]));
    }
  } finally {
    await sql.end();
  }
  const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  let messages = 0;
  try {
    const jsm = await nc.jetstreamManager();
    for await (const stream of jsm.streams.list()) {
      if (!stream.config.name.startsWith(`${namespace.namespace.toUpperCase()}_`)) continue;
      for (let seq = stream.state.first_seq; stream.state.messages > 0 && seq <= stream.state.last_seq; seq++) {
        const message = await jsm.streams.getMessage(stream.config.name, { seq });
        messages += 1;
        const headers = [...(message.header?.keys() ?? [])].map((k) => `${k}: ${message.header.get(k)}`).join("\n");
        search(`stream ${message.subject}`, Buffer.concat([Buffer.from(message.data), Buffer.from(headers)]));
      }
    }
  } finally {
    await nc.close();
  }
  return { found, rows, messages };
}

const deliveriesOf = async (webhookId: string) =>
  (await api("GET", `/api/v1/webhooks/${webhookId}/deliveries`)).json.data as {
    id: string;
    event_type: string;
    status: string;
    attempts: number;
  }[];

describe("webhooks through the mesh", () => {
  it("the receiver gets a traceparent in the trace of the API call that caused the event", async () => {
    await webhook("/traced", ["commission.created"]);
    const traceId = randomBytes(16).toString("hex");
    const { commissionId } = await payment({}, { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` });

    const [arrival] = await eventually(async () => {
      const arrived = receiver.at("/traced");
      expect(arrived).toHaveLength(1);
      return arrived;
    }, 30_000);
    // The commission in its REST shape, with the rule it was made with (contract section 12).
    expect(JSON.parse(arrival?.body ?? "{}")).toMatchObject({
      type: "commission.created",
      data: { id: commissionId, rule: { source: "program", type: "percent", payment_number: 1 } },
    });
    const traceparent = String(arrival?.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(traceparent.split("-")[1]).toBe(traceId);
  });

  it("no outbox row or stream message of a registration, a payment or a refund carries personal data", async () => {
    const everything = await webhook("/everything");
    const customerEmail = `customer-${randomBytes(4).toString("hex")}@example.com`;
    const reason = `Reason ${randomBytes(4).toString("hex")}: the customer moved to a cheaper plan`;
    const { commissionId } = await payment({ customer_email: customerEmail });
    const refunded = await api("POST", "/api/v1/refunds", { commission_id: commissionId, reason });
    expect(refunded.status).toBe(200);

    // The flows ran to the end: the webhooks arrived, carrying the personal data from its owners.
    const bodies = await eventually(async () => {
      const delivered = await deliveriesOf(everything.id);
      expect(delivered.filter((d) => d.status === "succeeded").map((d) => d.event_type)).toEqual(
        expect.arrayContaining(["commission.created", "commission.refunded"]),
      );
      return receiver.at("/everything").map((arrival) => arrival.body);
    }, 30_000);
    const refundBody = bodies.find((body) => body.includes('"commission.refunded"')) ?? "";
    for (const needle of [customerEmail, affiliateEmail, reason]) expect(refundBody).toContain(needle);

    const scan = await scanOutboxesAndStreams([customerEmail, affiliateEmail, reason]);
    // The scan saw the flows' events (the registration's, the payment's, the refund's)…
    expect(scan.rows).toBeGreaterThanOrEqual(3);
    expect(scan.messages).toBeGreaterThanOrEqual(3);
    // …and none of them carries an email or the reason.
    expect(scan.found).toEqual([]);
  });

  it("a notifier killed (SIGKILL) between two attempts makes the next one once restarted, never two at once", async () => {
    // The first answer asks for a retry in 15 s: time enough to kill and restart the notifier
    // before it is due, however busy the machine.
    receiver.program("/killed", [{ status: 503, headers: { "retry-after": "15" } }]);
    const { id } = await webhook("/killed", ["commission.created"]);
    await payment();
    const [delivery] = await eventually(async () => {
      const delivered = await deliveriesOf(id);
      expect(delivered).toMatchObject([{ status: "pending", attempts: 1 }]);
      return delivered;
    }, 30_000);
    expect(receiver.at("/killed")).toHaveLength(1);

    // Killed as a crash would kill it; the mesh's supervisor restarts it, as an orchestrator would.
    const notifierPid = mesh.pids.notifier ?? 0;
    process.kill(notifierPid, "SIGKILL");
    await eventually(async () => {
      const pid = mesh.pids.notifier;
      expect(pid).not.toBe(notifierPid);
      expect(mesh.recentOutput()).toContain(`notifier is back (pid ${pid})`);
    }, 30_000);
    expect(mesh.recentOutput()).toContain(
      "notifier exited (signal SIGKILL); restarting notifier in 1 s (crash 1 in a row)",
    );
    expect(receiver.at("/killed")).toHaveLength(1);

    const detail = await eventually(async () => {
      const read = await api("GET", `/api/v1/webhooks/${id}/deliveries/${delivery?.id}`);
      expect(read.json.data.status).toBe("succeeded");
      return read.json.data as { attempts: { status_code: number | null }[] };
    }, 45_000);
    expect(detail.attempts.map((attempt) => attempt.status_code)).toEqual([503, 200]);
    const arrivals = receiver.at("/killed");
    expect(arrivals).toHaveLength(2);
    expect(new Set(arrivals.map((arrival) => arrival.headers["webhook-id"])).size).toBe(1);
    expect(receiver.maxInFlight.get("/killed")).toBe(1);
  });

  it("a notifier killed during an attempt leaves it to the next claim once that claim's lease has ended, never two at once", async () => {
    // The first request is never answered: the notifier dies with it open.
    receiver.program("/cut", [{ hold: true }]);
    const { id } = await webhook("/cut", ["commission.created"]);
    await payment();
    await eventually(async () => expect(receiver.at("/cut")).toHaveLength(1), 30_000);

    const notifierPid = mesh.pids.notifier ?? 0;
    process.kill(notifierPid, "SIGKILL");
    await eventually(async () => {
      const pid = mesh.pids.notifier;
      expect(pid).not.toBe(notifierPid);
      expect(mesh.recentOutput()).toContain(`notifier is back (pid ${pid})`);
    }, 30_000);
    // The dead worker's lease (60 s) still holds the delivery: the restarted notifier waits it
    // out instead of sending while the first attempt might still be running.
    const [delivery] = await deliveriesOf(id);
    expect(delivery).toMatchObject({ status: "pending", attempts: 0 });
    expect(receiver.at("/cut")).toHaveLength(1);

    const detail = await eventually(async () => {
      const read = await api("GET", `/api/v1/webhooks/${id}/deliveries/${delivery?.id}`);
      expect(read.json.data.status).toBe("succeeded");
      return read.json.data as { attempts: { status_code: number | null }[] };
    }, 90_000);
    // The killed attempt recorded nothing; the receiver saw it, so at-least-once holds.
    expect(detail.attempts.map((attempt) => attempt.status_code)).toEqual([200]);
    const arrivals = receiver.at("/cut");
    expect(arrivals).toHaveLength(2);
    expect(new Set(arrivals.map((arrival) => arrival.headers["webhook-id"])).size).toBe(1);
    expect(receiver.maxInFlight.get("/cut")).toBe(1);
  }, 150_000);
});
