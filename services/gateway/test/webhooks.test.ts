import { validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  createdWebhookResponseSchema,
  deliveryDetailResponseSchema,
  deliveryListResponseSchema,
  deliveryResponseSchema,
  webhookResponseSchema,
} from "@affiliate/rest-shapes/schemas/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody, type TestGateway } from "./support/harness.js";
import { type RealNotifierGateway, startRealNotifierGateway } from "./support/real-notifier.js";

// The webhook routes against the real notifier (in-memory transport, real Postgres).
let gateway: TestGateway;

let notifier: RealNotifierGateway;

beforeAll(async () => {
  notifier = await startRealNotifierGateway("gateway-webhooks-test");
  gateway = notifier.gateway;
});
afterAll(() => notifier.stop());

describe("/api/v1/webhooks", () => {
  it("creates an endpoint (201 with the secret, shown once), reads, updates, tests, lists deliveries, deletes", async () => {
    const created = await gateway.call("POST", "/api/v1/webhooks", {
      body: { url: "https://example.com/hooks", events: ["commission.refunded"] },
    });
    expect(created.statusCode).toBe(201);
    const { data } = expectBody(createdWebhookResponseSchema, created.json());
    expect(data).toMatchObject({
      url: "https://example.com/hooks",
      events: ["commission.refunded"],
      enabled: true,
      disabled_reason: null,
    });
    expect(data.secret).toMatch(/^whsec_/);

    const read = await gateway.call("GET", `/api/v1/webhooks/${data.id}`);
    expect(expectBody(webhookResponseSchema, read.json()).data).not.toHaveProperty("secret");

    const disabled = await gateway.call("PATCH", `/api/v1/webhooks/${data.id}`, { body: { enabled: false } });
    expect(expectBody(webhookResponseSchema, disabled.json()).data).toMatchObject({
      enabled: false,
      disabled_reason: "merchant",
    });

    const test = await gateway.call("POST", `/api/v1/webhooks/${data.id}/test`);
    expect(test.statusCode).toBe(202);
    const delivery = expectBody(deliveryResponseSchema, test.json()).data;
    expect(delivery).toMatchObject({
      event_type: "webhook.test",
      status: "pending",
      payload: { data: { webhook_id: data.id } },
    });

    const list = await gateway.call("GET", `/api/v1/webhooks/${data.id}/deliveries?limit=1`);
    expect(expectBody(deliveryListResponseSchema, list.json()).data.map((d) => d.id)).toEqual([delivery.id]);
    const detail = await gateway.call("GET", `/api/v1/webhooks/${data.id}/deliveries/${delivery.id}`);
    expect(expectBody(deliveryDetailResponseSchema, detail.json()).data.attempts).toEqual([]);

    const rotated = await gateway.call("POST", `/api/v1/webhooks/${data.id}/rotate-secret`);
    expect(rotated.json().data.secret).toMatch(/^whsec_/);
    expect(rotated.json().data.secret).not.toBe(data.secret);

    expect((await gateway.call("DELETE", `/api/v1/webhooks/${data.id}`)).statusCode).toBe(204);
    expect((await gateway.call("GET", `/api/v1/webhooks/${data.id}`)).statusCode).toBe(404);
  });

  it("400 validation envelope: an unknown event type, a private URL (from the notifier), a bad recover window", async () => {
    const unknown = await gateway.call("POST", "/api/v1/webhooks", {
      body: { url: "https://example.com/x", events: ["commission.exploded"] },
    });
    expect(unknown.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, unknown.json()).details.fieldErrors)).toEqual(["events"]);

    const metadata = await gateway.call("POST", "/api/v1/webhooks", { body: { url: "http://169.254.169.254/" } });
    expect(metadata.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, metadata.json()).details.fieldErrors.url).toEqual([
      "Must not point to a private, loopback or link-local address",
    ]);

    const created = await gateway.call("POST", "/api/v1/webhooks", { body: { url: "https://example.com/y" } });
    const id = created.json().data.id as string;
    const recover = await gateway.call("POST", `/api/v1/webhooks/${id}/recover`, { body: { since: "yesterday" } });
    expect(recover.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, recover.json()).details.fieldErrors).toHaveProperty("since");
  });
});
