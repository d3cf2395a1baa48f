import type { Sql } from "@affiliate/platform";
import { deliveryDetailResponseSchema, deliveryListResponseSchema } from "@affiliate/rest-shapes/schemas/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody, type TestGateway } from "./support/harness.js";
import { type RealNotifierGateway, startRealNotifierGateway } from "./support/real-notifier.js";

// Why a delivery failed, through the gateway (issue 23 item 6): the real notifier's routes over
// an in-memory transport and real Postgres; the attempts as the notifier's worker records them.
let sql: Sql;
let gateway: TestGateway;

let notifier: RealNotifierGateway;

beforeAll(async () => {
  notifier = await startRealNotifierGateway("gateway-webhook-failures-test");
  ({ sql, gateway } = notifier);
});
afterAll(() => notifier.stop());

describe("GET /api/v1/webhooks/:id/deliveries", () => {
  it("says why attempts got no answer: last_error on the delivery, error on each attempt; null when answered", async () => {
    const created = await gateway.call("POST", "/api/v1/webhooks", { body: { url: "https://example.com/hooks" } });
    const webhookId = created.json().data.id as string;
    const test = await gateway.call("POST", `/api/v1/webhooks/${webhookId}/test`);
    const deliveryId = test.json().data.id as string;
    // Two attempts as the worker records them: a 500, then a refused connection.
    const first = new Date(Date.now() - 60_000);
    const second = new Date(Date.now() - 30_000);
    await sql`
      insert into delivery_attempts (delivery_id, attempted_at, status_code, duration_ms, error)
      values (${deliveryId}, ${first}, 500, 12, ''),
             (${deliveryId}, ${second}, null, 3, 'connect ECONNREFUSED 203.0.113.7:443')`;
    await sql`
      update deliveries set attempts = 2, last_status_code = null,
        last_error = 'connect ECONNREFUSED 203.0.113.7:443'
      where id = ${deliveryId}`;

    const list = await gateway.call("GET", `/api/v1/webhooks/${webhookId}/deliveries`);
    expect(list.statusCode).toBe(200);
    expect(expectBody(deliveryListResponseSchema, list.json()).data).toEqual([
      expect.objectContaining({
        id: deliveryId,
        attempts: 2,
        last_status_code: null,
        last_error: "connect ECONNREFUSED 203.0.113.7:443",
      }),
    ]);

    const detail = await gateway.call("GET", `/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
    const { data } = expectBody(deliveryDetailResponseSchema, detail.json());
    expect(data.last_error).toBe("connect ECONNREFUSED 203.0.113.7:443");
    expect(data.attempts).toEqual([
      { attempted_at: first.toISOString(), status_code: 500, duration_ms: 12, error: null },
      {
        attempted_at: second.toISOString(),
        status_code: null,
        duration_ms: 3,
        error: "connect ECONNREFUSED 203.0.113.7:443",
      },
    ]);

    // A delivery not yet attempted has no error to tell.
    const fresh = await gateway.call("POST", `/api/v1/webhooks/${webhookId}/test`);
    expect(fresh.json().data).toMatchObject({ attempts: 0, last_status_code: null, last_error: null });
  });
});
