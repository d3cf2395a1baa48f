import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { connect } from "nats";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, freePort, startTestMesh } from "./helpers.js";

/**
 * The canary (issue 11): one customer email pushed through every flow of the mesh, then erased.
 * Afterwards a scan of every text, json/jsonb and bytea column of every table in every schema of
 * the database, and of every message retained in every stream of the run's namespace, finds the
 * email only where it belongs to another product that was not erased. The scan knows no table
 * or stream by name, so every store a service adds (the notifier's) is covered by it.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
/** A webhook receiver that answers 200 to everything: deliveries are stored with their payloads. */
let receiver: Server;
let receiverUrl: string;
const keys: Record<"erased" | "kept", { key: string; productId: string }> = {
  erased: { key: "", productId: "" },
  kept: { key: "", productId: "" },
};
const email = `canary-${randomBytes(4).toString("hex")}@example.com`;

beforeAll(async () => {
  receiver = createServer((req, res) => req.resume().on("end", () => res.end()));
  const receiverPort = await freePort();
  await new Promise<void>((resolve) => receiver.listen(receiverPort, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${receiverPort}/hooks`;
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  for (const which of ["erased", "kept"] as const) {
    const product = await createProduct(mesh, `Canary ${which}`);
    keys[which] = { key: product.secret_key, productId: product.product_id };
  }
});

afterAll(async () => {
  await mesh?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  await namespace?.cleanup();
  await database?.drop();
});

async function api(which: keyof typeof keys, method: string, path: string, body?: unknown, headers = {}) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: {
      "x-api-key": keys[which].key,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Every flow that can carry the customer's email, in one product. */
async function pushThroughEveryFlow(which: keyof typeof keys) {
  expect((await api(which, "PATCH", "/api/v1/program", { hold_days: 0, payout_minimum_cents: 100 })).status).toBe(200);
  // Every event type: stored delivery payloads carry the commission's customer_email.
  expect((await api(which, "POST", "/api/v1/webhooks", { url: receiverUrl })).status).toBe(201);
  const affiliate = await api(which, "POST", "/api/v1/affiliates", {
    email: `aff-${randomBytes(4).toString("hex")}@example.com`,
    notify: false,
  });
  const code = affiliate.json.partnership.referralCode as string;
  const click = await api(which, "POST", "/events", { type: "click", referral_code: code, ip: "203.0.113.5" });
  const visitor = click.json.data.visitor_id as string;
  const customer = { customer_email: email, ip: "203.0.113.5", user_agent: `Agent for ${email}`, visitor_id: visitor };
  expect(
    (await api(which, "POST", "/events", { type: "signup", ...customer, provider_customer_id: "cus_1" })).status,
  ).toBe(201);
  const payments = [];
  for (const amount of [10_000, 4000, 2500]) {
    const paid = await api(which, "POST", "/events", {
      type: "payment",
      ...customer,
      amount_cents: amount,
      external_id: `ch_${randomBytes(6).toString("hex")}`,
    });
    expect(paid.status).toBe(201);
    payments.push({
      externalId: paid.json.data.id as string,
      commissionId: paid.json.data.commissions[0].id as string,
    });
  }
  // A payout pays the first commission; a refund by email (key, reason quoting the email) claws it back.
  const generated = await api(which, "POST", "/api/v1/payouts/generate", {});
  const payout = (generated.json.data as { id: string }[])[0];
  await api(which, "PATCH", `/api/v1/payouts/${payout?.id}`, { action: "approve" });
  await api(which, "PATCH", `/api/v1/payouts/${payout?.id}`, { action: "mark_paid", reference: "tr_1" });
  const refund = await api(
    which,
    "POST",
    "/api/v1/refunds",
    { email: email.toUpperCase(), payment_amount_cents: 4000, reason: `Customer ${email.toUpperCase()} disputed` },
    { "Idempotency-Key": `refund-${randomBytes(4).toString("hex")}` },
  );
  expect(refund.status).toBe(200);
  return payments;
}

interface Hit {
  where: string;
  text: string;
}

/** Every row and retained message that holds the email, with its text (to tell its product). */
async function scan(): Promise<Hit[]> {
  const hits: Hit[] = [];
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    const columns = await sql<{ schema: string; table: string; column: string; type: string }[]>`
      select c.table_schema as schema, c.table_name as table, c.column_name as column, c.data_type as type
      from information_schema.columns c join information_schema.tables t
        on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
      where c.table_schema not in ('pg_catalog', 'information_schema')
        and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea')`;
    expect(columns.length).toBeGreaterThan(20);
    for (const { schema, table, column, type } of columns) {
      const value = type === "bytea" ? sql`encode(${sql(column)}, 'escape')` : sql`${sql(column)}::text`;
      const rows = await sql<{ row: string }[]>`
        select row_to_json(t)::text as row from ${sql(schema)}.${sql(table)} t
        where strpos(lower(${value}), ${email}) > 0`;
      for (const { row } of rows) hits.push({ where: `${schema}.${table}.${column}`, text: row });
    }
  } finally {
    await sql.end();
  }
  const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  try {
    const jsm = await nc.jetstreamManager();
    const needle = Buffer.from(email);
    for await (const stream of jsm.streams.list()) {
      if (!stream.config.name.startsWith(`${namespace.namespace.toUpperCase()}_`)) continue;
      for (let seq = stream.state.first_seq; seq <= stream.state.last_seq && stream.state.messages > 0; seq++) {
        const message = await jsm.streams.getMessage(stream.config.name, { seq }).catch(() => undefined);
        const data = Buffer.from(message?.data ?? new Uint8Array());
        if (data.includes(needle)) hits.push({ where: `${stream.config.name}#${seq}`, text: data.toString("latin1") });
      }
    }
  } finally {
    await nc.close();
  }
  return hits;
}

/** Events written to any service's outbox and not yet published. */
async function outboxBacklog(): Promise<number> {
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    const schemas = await sql<{ schema: string }[]>`
      select table_schema as schema from information_schema.tables where table_name = 'outbox'`;
    let total = 0;
    for (const { schema } of schemas) {
      const [row] = await sql<{ count: number }[]>`select count(*)::int as count from ${sql(schema)}.outbox`;
      total += row?.count ?? 0;
    }
    return total;
  } finally {
    await sql.end();
  }
}

const commissionFacts = async (which: keyof typeof keys) =>
  ((await api(which, "GET", "/api/v1/commissions?limit=100")).json.data as Record<string, unknown>[]).map((c) => ({
    id: c.id,
    amount_cents: c.amount_cents,
    status: c.status,
    payment_amount_cents: c.payment_amount_cents,
    payout_id: c.payout_id,
  }));

describe("erasure through the mesh (the canary)", () => {
  it("leaves the email nowhere for the erased product, touching nothing else", async () => {
    const payments = await pushThroughEveryFlow("erased");
    await pushThroughEveryFlow("kept");
    // Let the outbox relays publish, so the streams hold what they will hold, and the notifier
    // record the deliveries that quote the customer.
    await eventually(async () => expect(await outboxBacklog()).toBe(0), 20_000);
    await eventually(
      async () => expect((await scan()).some((hit) => hit.where.startsWith("notifier."))).toBe(true),
      20_000,
    );

    const before = await scan();
    // The scan works: it sees the customer in the product about to be erased.
    expect(before.filter((hit) => hit.text.includes(keys.erased.productId)).length).toBeGreaterThan(0);
    const facts = await commissionFacts("erased");

    const erased = await api("erased", "DELETE", "/api/v1/customers", { email: `  ${email.toUpperCase()}  ` });
    expect(erased.status).toBe(200);
    expect(erased.json.data.anonymized.tracking_events).toBe(4);
    // The commission events delivered so far quoted the customer in data.customer_email.
    expect(erased.json.data.anonymized.webhook_deliveries).toBeGreaterThan(0);
    expect(erased.json.data.erasure_id).toMatch(/^ers_/);

    // Streams keep nothing to chase: a relayed event would show up here as a hit.
    await eventually(async () => expect(await outboxBacklog()).toBe(0), 20_000);
    const after = await scan();
    const leaks = after.filter(
      (hit) => !hit.text.includes(keys.kept.productId) || hit.text.includes(keys.erased.productId),
    );
    expect(leaks).toEqual([]);
    // The other product keeps its customer.
    expect(after.filter((hit) => hit.text.includes(keys.kept.productId)).length).toBe(
      before.filter((hit) => hit.text.includes(keys.kept.productId)).length,
    );

    expect(await commissionFacts("erased")).toEqual(facts);
    const commission = await api("erased", "GET", `/api/v1/commissions/${payments[2]?.commissionId}`);
    expect(commission.json.data).toMatchObject({ customer_email: null, amount_cents: 500 });
    const keptCommissions = (await api("kept", "GET", "/api/v1/commissions?limit=100")).json.data as {
      customer_email: string;
    }[];
    expect(keptCommissions.every((c) => c.customer_email === email)).toBe(true);

    // The receipt, found by id and by email; a repeat answers zeros where the spec says so.
    const receipt = await api("erased", "GET", `/api/v1/customers/erasures/${erased.json.data.erasure_id}`);
    expect(receipt.json.data).toMatchObject({ status: "completed", verified_at: expect.any(String) });
    expect(JSON.stringify(receipt.json)).not.toContain(email);
    const repeat = await api("erased", "DELETE", "/api/v1/customers", { email });
    expect(repeat.json.data.anonymized).toMatchObject({ tracking_events: 0, webhook_deliveries: 0 });
    const list = await api("erased", "GET", `/api/v1/customers/erasures?email=${encodeURIComponent(email)}`);
    expect(list.json.data.map((r: { id: string }) => r.id)).toEqual([
      repeat.json.data.erasure_id,
      erased.json.data.erasure_id,
    ]);

    // Email-keyed refunds are gone; the commission id still identifies the payment.
    const byEmail = await api("erased", "POST", "/api/v1/refunds", { email, payment_amount_cents: 2500 });
    expect(byEmail.status).toBe(404);
    const byId = await api("erased", "POST", "/api/v1/refunds", { commission_id: payments[2]?.commissionId });
    expect(byId.json.data).toMatchObject({ fully_refunded: true });
  });

  it("answers the validation envelope for an invalid email", async () => {
    const res = await api("erased", "DELETE", "/api/v1/customers", { email: "nope" });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { email: ["Invalid email address"] } },
    });
  });
});
