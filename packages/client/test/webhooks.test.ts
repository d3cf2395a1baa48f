/**
 * verifyWebhook against deliveries signed as the notifier signs them (Standard Webhooks, both
 * secrets for 24 hours after a rotation). The same against a real delivery of the mesh:
 * mesh.e2e.test.ts.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, expectTypeOf, it } from "vitest";
import { verifyWebhook, type WebhookEvent, WebhookVerificationError } from "../src/index.js";

const oldSecret = `whsec_${Buffer.from("the old secret of the endpoint!!").toString("base64")}`;
const newSecret = `whsec_${Buffer.from("the new secret after a rotation!").toString("base64")}`;
const otherSecret = `whsec_${Buffer.from("another endpoint's secret......").toString("base64")}`;

/** A delivery signed with each of `secrets`, the signatures space-separated in one header. */
function delivery(body: string, secrets: string[], at = new Date()) {
  const id = "msg_01";
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(" ");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
  };
}

const payoutBody =
  '{"id":"msg_01","type":"payout.completed","created_at":"2026-01-01T00:00:00.000Z","data":{"id":"po_1","status":"completed","amount_cents":9007199254740993,"adjustment_cents":-1,"commission_count":2}}';

describe("verifyWebhook", () => {
  it("during a rotation, a delivery signed with both secrets verifies with either, and with both", () => {
    const headers = delivery(payoutBody, [newSecret, oldSecret]);
    for (const secrets of [[oldSecret], [newSecret], [newSecret, oldSecret], [otherSecret, oldSecret]]) {
      expect(verifyWebhook(payoutBody, headers, secrets).type).toBe("payout.completed");
    }
  });

  it("after the rotation, the old secret alone no longer verifies a delivery signed with the new one", () => {
    const headers = delivery(payoutBody, [newSecret]);
    expect(() => verifyWebhook(payoutBody, headers, [oldSecret])).toThrow(WebhookVerificationError);
    expect(verifyWebhook(payoutBody, headers, [oldSecret, newSecret]).id).toBe("msg_01");
  });

  it("returns the typed event, int64 amounts as exact bigints", () => {
    const event = verifyWebhook(new TextEncoder().encode(payoutBody), delivery(payoutBody, [newSecret]), newSecret);
    expectTypeOf(event).toEqualTypeOf<WebhookEvent>();
    if (event.type !== "payout.completed") throw new Error(`unexpected ${event.type}`);
    expect(event.data.amount_cents).toBe(9_007_199_254_740_993n);
    expect(event.data.adjustment_cents).toBe(-1n);
    expect(event.data.commission_count).toBe(2);
  });

  it("takes fetch's Headers as well as Node's header object", () => {
    const headers = new Headers(delivery(payoutBody, [newSecret]));
    expect(verifyWebhook(payoutBody, headers, newSecret).type).toBe("payout.completed");
  });

  it("refuses a changed body, a stale timestamp, missing headers, no secret", () => {
    const headers = delivery(payoutBody, [newSecret]);
    expect(() => verifyWebhook(payoutBody.replace("9007199254740993", "9007199254740999"), headers, newSecret)).toThrow(
      WebhookVerificationError,
    );
    const stale = delivery(payoutBody, [newSecret], new Date(Date.now() - 10 * 60_000));
    expect(() => verifyWebhook(payoutBody, stale, newSecret)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(payoutBody, {}, newSecret)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(payoutBody, headers, [])).toThrow(WebhookVerificationError);
  });

  it("refuses a verified delivery of an event type this client does not know", () => {
    const body = '{"id":"msg_01","type":"commission.teleported","created_at":"2026-01-01T00:00:00.000Z","data":{}}';
    expect(() => verifyWebhook(body, delivery(body, [newSecret]), newSecret)).toThrow(/does not know/);
  });
});
