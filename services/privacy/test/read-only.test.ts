import { collectMetrics } from "@affiliate/platform";
import { ErasureStatus } from "@affiliate/proto/privacy";
import { readOnlyRefusals, refusedUntilRestored } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, newProgram, pay, startHarness, uniqueEmail } from "./harness.js";

/**
 * The privacy service's write RPC during a failover (issue 34): while the database refuses writes
 * (SQLSTATE 25006, a connection on an old primary turned standby), the erasure and the owners'
 * erasures it calls are run again on new connections and completed once the primary takes
 * writes again. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe("the privacy service's writes while its database refuses them", () => {
  it("runs the erasure again on new connections once the primary takes writes: completed once", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);

    const outcomes = await refusedUntilRestored({
      databaseUrl: h.databaseUrl,
      pools: [
        { pool: h.sql, size: 4 },
        { pool: h.ledgerSql, size: 4 },
        { pool: h.partnersSql, size: 4 },
      ],
      refusals: readOnlyRefusals(collectMetrics),
      send: () => [h.privacy.eraseCustomer({ productId: program.productId, email })],
    });

    const [outcome] = outcomes;
    expect(outcome?.status === "rejected" ? String(outcome.reason) : outcome?.value.erasure?.status).toBe(
      ErasureStatus.COMPLETED,
    );
    const [erasures] = await h.sql<{ count: number }[]>`select count(*)::int as count from erasures`;
    expect(erasures?.count).toBe(1);
    const [event] = await h.ledgerSql<{ customerEmail: string | null }[]>`
      select customer_email from tracking_events where product_id = ${program.productId}`;
    expect(event).toEqual({ customerEmail: null });
  }, 60_000);
});
