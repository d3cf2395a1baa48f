import { collectMetrics } from "@affiliate/platform";
import { readOnlyRefusals, refusedUntilRestored } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectedProgram, deliver, type Harness, startHarness, stripeEvent, unique } from "./harness.js";

/**
 * The integrations service's write RPCs during a failover (issue 34): while its database refuses
 * writes (SQLSTATE 25006, a connection on an old primary turned standby), each write is run again
 * on a new connection and applied once the primary takes writes again. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe("the integrations service's writes while its database refuses them", () => {
  it("runs each write again on a new connection once the primary takes writes: every one applied once", async () => {
    const [receiving, disconnected] = [await connectedProgram(h), await connectedProgram(h)];
    const { product } = await h.admin.createProduct({ name: unique("product") });
    const productId = product?.id ?? "";
    const event = stripeEvent("customer.created", { id: unique("cus"), object: "customer", metadata: {} });

    const outcomes = await refusedUntilRestored<unknown>({
      databaseUrl: h.databaseUrl,
      pools: [
        { pool: h.sql, size: 6 },
        { pool: h.ledgerSql, size: 6 },
      ],
      refusals: readOnlyRefusals(collectMetrics),
      send: () => [
        h.integrations.connectStripe({ productId, webhookSecret: `whsec_${unique("s").replace(/_/g, "")}` }),
        h.integrations.disconnectStripe({ productId: disconnected.productId }),
        deliver(h, receiving, event),
      ],
    });

    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual(
      Array(3).fill("ok"),
    );
    // Disconnecting removes the connection.
    const connections = await h.sql<{ productId: string }[]>`
      select product_id from stripe_connections where product_id = any(${[productId, disconnected.productId]})`;
    expect(connections.map((row) => row.productId)).toEqual([productId]);
    const [received] = await h.sql<{ count: number }[]>`
      select count(*)::int as count from stripe_events where event_id = ${event.id}`;
    expect(received?.count).toBe(1);
  }, 60_000);
});
