/**
 * Stripe's deliveries through the gateway to the real integrations service (contract section 13):
 * the raw bytes reach the verification, and every refusal (signature, timestamp, connection,
 * JSON, size) answers its status with nothing stored.
 */
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  reconcileStripeResponseSchema,
  stripeConnectionResponseSchema,
  stripeEventListResponseSchema,
  stripeEventResponseSchema,
  stripeReceivedSchema,
} from "@affiliate/rest-shapes/schemas/integrations";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  mesh = await startRealMesh();
});
afterAll(() => mesh?.close());

const secret = "whsec_gatewayreceivertest";

/** A product connected to Stripe: its key and the path to paste into Stripe's dashboard. */
async function connected(options: { apiKey?: string } = {}) {
  const { key, productId } = await mesh.newProduct();
  const response = await mesh.call(key, "PUT", "/api/v1/integrations/stripe", {
    body: { webhook_secret: secret, ...(options.apiKey ? { api_key: options.apiKey } : {}) },
  });
  expect(response.statusCode).toBe(200);
  return { key, productId, path: expectBody(stripeConnectionResponseSchema, response.json()).data.webhook_path };
}

const event = (id: string) =>
  JSON.stringify({
    id,
    object: "event",
    api_version: "2024-06-20",
    created: Math.floor(Date.now() / 1000),
    livemode: true,
    type: "customer.created",
    data: { object: { id: "cus_gateway", object: "customer", metadata: {} } },
  });

/** Posts `payload` to the receiver as Stripe does: no API key, the signature over the exact bytes. */
function deliver(path: string, payload: string, options: { secret?: string; timestamp?: number } = {}) {
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? secret,
    ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
  });
  return mesh.app.inject({
    method: "POST",
    url: path,
    headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": signature },
    payload,
  });
}

const storedEvents = async (key: string) =>
  expectBody(stripeEventListResponseSchema, (await mesh.call(key, "GET", "/api/v1/integrations/stripe/events")).json())
    .data;

describe("POST /integrations/stripe/:connection_id", () => {
  it("refuses bad signatures, stale timestamps, malformed JSON (400), unknown connections (404) and a body over 1 MiB (413), storing nothing", async () => {
    const { key, path } = await connected();
    const refusals = [
      [await deliver(path, event("evt_badsig"), { secret: "whsec_someoneelse" }), 400],
      [await deliver(path, event("evt_stale"), { timestamp: Math.floor(Date.now() / 1000) - 600 }), 400],
      [await deliver(path, '{"id": "evt_cut", '), 400],
      [await deliver("/integrations/stripe/scn_unknown", event("evt_unknown")), 404],
      [await deliver(path, JSON.stringify({ padding: "x".repeat(1024 * 1024) })), 413],
    ] as const;
    for (const [response, status] of refusals) {
      expect(response.statusCode).toBe(status);
      expect(Object.keys(expectBody(errorSchema, response.json()))).toEqual(["error"]);
    }
    expect(await storedEvents(key)).toEqual([]);
  });

  it("stores a verified delivery (the exact bytes, whatever their spacing) and acknowledges a redelivery", async () => {
    const { key, path } = await connected();
    // Spacing that a re-serialisation would change: the signature covers the bytes as sent.
    const payload = event("evt_spaced").replace(/,/g, ",  ");
    for (let i = 0; i < 2; i++) {
      const response = await deliver(path, payload);
      expect(response.statusCode).toBe(200);
      expect(expectBody(stripeReceivedSchema, response.json())).toEqual({ received: true });
    }
    expect((await storedEvents(key)).map((e) => [e.id, e.type])).toEqual([["evt_spaced", "customer.created"]]);
  });
});

describe("the events list, retry and reconcile routes", () => {
  const list = async (key: string, query: string) => {
    const response = await mesh.call(key, "GET", `/api/v1/integrations/stripe/events${query}`);
    expect(response.statusCode).toBe(200);
    return expectBody(stripeEventListResponseSchema, response.json()).data.map((e) => [e.id, e.outcome]);
  };

  it("lists by outcome, and retries only a failed event", async () => {
    const { key, path, productId } = await connected();
    for (const id of ["evt_list_kept", "evt_list_failed"])
      expect((await deliver(path, event(id))).statusCode).toBe(200);
    // No apply worker runs in this mesh: the failure is written as the worker would record it.
    await mesh.integrationsSql`
      update stripe_events set outcome = 'failed', detail = 'The ledger refused it: test', next_attempt_at = null
      where product_id = ${productId} and event_id = 'evt_list_failed'`;

    expect(await list(key, "?outcome=failed")).toEqual([["evt_list_failed", "failed"]]);
    expect(await list(key, "?outcome=waiting")).toEqual([["evt_list_kept", "waiting"]]);
    expect(await list(key, "?outcome=applied")).toEqual([]);
    expect((await mesh.call(key, "GET", "/api/v1/integrations/stripe/events?outcome=lost")).statusCode).toBe(400);

    const retried = await mesh.call(key, "POST", "/api/v1/integrations/stripe/events/evt_list_failed/retry");
    expect(retried.statusCode).toBe(200);
    expect(expectBody(stripeEventResponseSchema, retried.json()).data).toMatchObject({
      id: "evt_list_failed",
      outcome: "waiting",
      detail: "Retry requested; not applied yet",
    });
    const notFailed = await mesh.call(key, "POST", "/api/v1/integrations/stripe/events/evt_list_kept/retry");
    expect([notFailed.statusCode, expectBody(errorSchema, notFailed.json()).error]).toEqual([
      400,
      "Stripe event evt_list_kept did not fail (it is waiting)",
    ]);
    const unknown = await mesh.call(key, "POST", "/api/v1/integrations/stripe/events/evt_never/retry");
    expect(unknown.statusCode).toBe(404);
  });

  it("reconciles: 400 without an API key; with one, stores what Stripe lists and was never received", async () => {
    const withoutKey = await connected();
    const refused = await mesh.call(withoutKey.key, "POST", "/api/v1/integrations/stripe/reconcile", { body: {} });
    expect([refused.statusCode, expectBody(errorSchema, refused.json()).error]).toEqual([
      400,
      "Reconciliation needs an API key: connect Stripe with api_key",
    ]);

    const apiKey = "rk_test_gatewayreconcile";
    const { key, path } = await connected({ apiKey });
    expect((await deliver(path, event("evt_rec_received"))).statusCode).toBe(200);
    const asListed = (id: string) => ({
      eventId: id,
      type: "customer.created",
      livemode: true,
      createdAt: new Date(),
      payload: event(id),
      applyGroup: `event:${id}`,
    });
    const askedWith: string[] = [];
    mesh.stripeEventsSince = async function* (key) {
      askedWith.push(key);
      yield asListed("evt_rec_missed");
      yield asListed("evt_rec_received");
    };
    try {
      const response = await mesh.call(key, "POST", "/api/v1/integrations/stripe/reconcile", { body: {} });
      expect(response.statusCode).toBe(200);
      // Nothing applies events in this mesh: the new one is stored, neither applied nor failed yet.
      expect(expectBody(reconcileStripeResponseSchema, response.json()).data).toEqual({
        fetched: 2,
        new: 1,
        applied: 0,
        failed: 0,
      });
    } finally {
      mesh.stripeEventsSince = async function* () {};
    }
    expect(askedWith).toEqual([apiKey]);
    expect(await list(key, "")).toEqual([
      ["evt_rec_missed", "waiting"],
      ["evt_rec_received", "waiting"],
    ]);
  });

  it("never answers the secrets it was given", async () => {
    const apiKey = "rk_live_gatewaynotanswered";
    const { key, path } = await connected({ apiKey });
    expect((await deliver(path, event("evt_secrets"))).statusCode).toBe(200);
    const bodies = [
      (
        await mesh.call(key, "PUT", "/api/v1/integrations/stripe", {
          body: { webhook_secret: secret, api_key: apiKey },
        })
      ).body,
      (await mesh.call(key, "GET", "/api/v1/integrations/stripe")).body,
      (await mesh.call(key, "GET", "/api/v1/integrations/stripe/events")).body,
    ];
    expect(bodies.join("")).toContain("evt_secrets");
    expect(bodies.map((body) => [body.includes(secret), body.includes(apiKey)])).toEqual([
      [false, false],
      [false, false],
      [false, false],
    ]);
  });
});
