import { collectMetrics } from "@affiliate/platform";
import { readOnlyRefusals, refusedUntilRestored } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

/**
 * The notifier's write RPCs during a failover (issue 34): while its database refuses writes
 * (SQLSTATE 25006, a connection on an old primary turned standby), each write is run again on a
 * new connection and applied once the primary takes writes again. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const productId = `prod_${Date.now().toString(36)}`;
const create = (path: string) =>
  h.notifier.createWebhook({ productId, url: `https://example.com/${path}`, events: ["commission.created"] });

describe("the notifier's writes while its database refuses them", () => {
  it("runs each write again on a new connection once the primary takes writes: every one applied once", async () => {
    const [updated, rotated, deleted] = await Promise.all(["updated", "rotated", "deleted"].map(create));
    const id = (answer: typeof updated) => answer?.webhook?.id ?? "";

    const outcomes = await refusedUntilRestored<unknown>({
      databaseUrl: h.databaseUrl,
      pools: [{ pool: h.sql, size: 8 }],
      refusals: readOnlyRefusals(collectMetrics),
      send: () => [
        create("created"),
        h.notifier.updateWebhook({ productId, webhookId: id(updated), enabled: false }),
        h.notifier.rotateWebhookSecret({ productId, webhookId: id(rotated) }),
        h.notifier.deleteWebhook({ productId, webhookId: id(deleted) }),
      ],
    });

    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual(
      Array(4).fill("ok"),
    );
    const rows = await h.sql<{ url: string; enabled: boolean; rotated: boolean }[]>`
      select url, enabled, previous_secret is not null as rotated
      from endpoints where product_id = ${productId} order by url`;
    expect(rows).toEqual([
      { url: "https://example.com/created", enabled: true, rotated: false },
      { url: "https://example.com/rotated", enabled: true, rotated: true },
      { url: "https://example.com/updated", enabled: false, rotated: false },
    ]);
  }, 60_000);
});
