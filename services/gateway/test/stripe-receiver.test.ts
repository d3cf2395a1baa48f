/**
 * Stripe's deliveries through the gateway to the real integrations service (contract section 13):
 * the raw bytes reach the verification, and every refusal (signature, timestamp, connection,
 * JSON, size) answers its status with nothing stored.
 */
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  stripeConnectionResponseSchema,
  stripeEventListResponseSchema,
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
async function connected() {
  const { key } = await mesh.newProduct();
  const response = await mesh.call(key, "PUT", "/api/v1/integrations/stripe", { body: { webhook_secret: secret } });
  expect(response.statusCode).toBe(200);
  return { key, path: expectBody(stripeConnectionResponseSchema, response.json()).data.webhook_path };
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
