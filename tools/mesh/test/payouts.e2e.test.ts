import { randomBytes } from "node:crypto";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * Money moving back and out through the whole mesh, and a fault: the payouts service is down
 * between a refund of a paid commission and its clawback. The refund's event waits in
 * JetStream; when payouts returns, the clawback is applied once and nets into the next payout.
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
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  key = (await createProduct(mesh, "Payouts e2e")).secret_key;
  const program = await api("PATCH", "/api/v1/program", { hold_days: 0, payout_minimum_cents: 1000 });
  expect(program.status).toBe(200);
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Messages the durable consumer has not yet acknowledged (pending delivery or in flight). */
async function backlogOf(durable: string): Promise<number> {
  const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
  try {
    const info = await (await nc.jetstreamManager()).consumers.info(
      `${namespace.namespace.toUpperCase()}_LEDGER`,
      durable,
    );
    return info.num_pending + info.num_ack_pending;
  } finally {
    await nc.close();
  }
}

async function paidAffiliate() {
  const email = `aff-${randomBytes(4).toString("hex")}@example.com`;
  const registered = await api("POST", "/api/v1/affiliates", { email, notify: false });
  return { id: registered.json.partnership.id as string, code: registered.json.partnership.referralCode as string };
}

async function pay(code: string, amount: number) {
  const res = await api("POST", "/events", {
    type: "payment",
    referral_code: code,
    amount_cents: amount,
    external_id: `ch_${randomBytes(6).toString("hex")}`,
    occurred_at: new Date(Date.now() - 1000).toISOString(),
  });
  expect(res.status).toBe(201);
  return res.json.data.commissions[0].id as string;
}

async function generatedFor(partnershipId: string) {
  const generated = await api("POST", "/api/v1/payouts/generate", {});
  expect(generated.status).toBe(200);
  return (generated.json.data as { id: string; partnership_id: string }[]).find(
    (p) => p.partnership_id === partnershipId,
  );
}

describe("payouts through the mesh", () => {
  it("generate -> approve -> mark_paid settles the commission; reject frees it", async () => {
    const aff = await paidAffiliate();
    const commissionId = await pay(aff.code, 10_000);
    const payout = await generatedFor(aff.id);
    expect(payout).toMatchObject({ status: "pending", amount_cents: 2000, adjustment_cents: 0, commission_count: 1 });
    const rejected = await api("PATCH", `/api/v1/payouts/${payout?.id}`, { action: "reject" });
    expect(rejected.json.data.status).toBe("rejected");
    expect((await api("GET", `/api/v1/payouts/${payout?.id}`)).status).toBe(404);
    await eventually(async () =>
      expect((await api("GET", `/api/v1/commissions/${commissionId}`)).json.data.payout_id).toBeNull(),
    );

    const again = await generatedFor(aff.id);
    expect(again?.id).not.toBe(payout?.id);
    expect((await api("PATCH", `/api/v1/payouts/${again?.id}`, { action: "mark_paid" })).status).toBe(400);
    expect((await api("PATCH", `/api/v1/payouts/${again?.id}`, { action: "approve" })).status).toBe(200);
    const paid = await api("PATCH", `/api/v1/payouts/${again?.id}`, { action: "mark_paid", reference: "tr_123" });
    expect(paid.json.data).toMatchObject({ status: "completed", amount_cents: 2000, paid_at: expect.any(String) });
    await eventually(async () =>
      expect((await api("GET", `/api/v1/commissions/${commissionId}`)).json.data).toMatchObject({
        status: "paid",
        payout_id: again?.id,
      }),
    );
    expect((await api("GET", `/api/v1/payouts/${again?.id}`)).json.data.gateway_transfer_id).toBe("tr_123");
  });

  it("a clawback made while payouts is down converges when it returns, exactly once", async () => {
    const aff = await paidAffiliate();
    const commissionId = await pay(aff.code, 10_000);
    const payout = await generatedFor(aff.id);
    await api("PATCH", `/api/v1/payouts/${payout?.id}`, { action: "approve" });
    await api("PATCH", `/api/v1/payouts/${payout?.id}`, { action: "mark_paid", reference: "tr_1" });
    await eventually(async () =>
      expect((await api("GET", `/api/v1/commissions/${commissionId}`)).json.data.status).toBe("paid"),
    );

    await mesh.stopService("payouts");
    const refund = await api("POST", "/api/v1/refunds", { commission_id: commissionId, reason: "chargeback" });
    expect(refund.json.data).toMatchObject({ status: "refunded", new_commission_cents: 0, fully_refunded: true });
    await mesh.startService("payouts");

    // Payouts catches up on the event that waited in JetStream while it was down.
    await eventually(async () => expect(await backlogOf("payouts_commission_refunded")).toBe(0), 20_000);

    // The clawback (-2000) is netted into the next payout: a new 4000 commission pays out 2000.
    const next = await pay(aff.code, 20_000);
    const created = await generatedFor(aff.id);
    expect(created).toMatchObject({ amount_cents: 2000, adjustment_cents: -2000, commission_count: 1 });
    const completed = await api("GET", `/api/v1/payouts/${payout?.id}`);
    expect(completed.json.data).toMatchObject({ status: "completed", amount_cents: 2000 });
    expect((await api("GET", `/api/v1/commissions/${next}`)).json.data.payout_id).toEqual(expect.any(String));
  });
});
