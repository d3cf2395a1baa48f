import {
  collectMetrics,
  createLogger,
  createSql,
  migrate,
  newId,
  type Sql,
  startJobWorker,
  type TransactionSql,
} from "@affiliate/platform";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeFailingEndpoints } from "../src/domain/probe-failing.js";
import { purgeExpired } from "../src/domain/retention.js";
import { migrationsDirectory, schema } from "../src/server.js";
import {
  countCustomerPayloads,
  eraseCustomerPayloads,
  findDelivery,
  insertDeliveries,
  listDeliveries,
  payloadText,
  recordAttempt,
  requeueDelivery,
  requeueFailed,
} from "../src/store/deliveries.js";
import { disableEndpoint, findSigningEndpoint, markFailing, subscribedEndpoints } from "../src/store/endpoints.js";
import { deliveryQueue } from "../src/workers.js";

/**
 * Every statement the notifier makes on its deliveries, as its code makes them, is planned as an
 * index read on a table the size a few minutes of load leave (6,000 deliveries of 10 products,
 * most of them done, a backlog due, some in flight): before statistics exist (this machine runs
 * Postgres without autovacuum, as a busy table between two ANALYZEs also is), after ANALYZE, and
 * as the generic plan postgres.js's prepared statements come to use. A sequential scan here is
 * paid per claim or per event and grows with the table: in a 4-minute soak the worker's claim
 * read `deliveries` whole 2,790 times.
 */

const logger = createLogger("notifier-plans", "silent");
const deliveriesInTable = 6000;
const products = 10;

let database: TestDatabase;
let sql: Sql;
const statements: { query: string; parameters: unknown[] }[] = [];

/** A pool like the service's whose statements are kept, to be explained afterwards. */
function recordingPool(url: string): Sql {
  return postgres(url, {
    max: 2,
    transform: postgres.camel,
    connection: { search_path: schema },
    onnotice: () => {},
    debug: (_connection, query, parameters) => statements.push({ query, parameters: [...parameters] }),
  }) as unknown as Sql;
}

/** Endpoints, and deliveries in the states a loaded notifier holds, with payloads of a real size. */
async function fill(tx: Sql): Promise<void> {
  await tx`
    insert into endpoints (id, product_id, url, events, secret)
    select 'wh_' || i, 'prd_' || (i % ${products}), 'https://example.com/hook', '{}', 'secret'
    from generate_series(0, 19) i`;
  await tx`
    insert into deliveries (id, product_id, endpoint_id, event_id, event_type, payload, status, attempts,
                            next_attempt_at, leased_until, lease_token, created_at)
    select 'dlv_' || lpad(i::text, 8, '0'), 'prd_' || (i % 20 % ${products}), 'wh_' || (i % 20), 'msg_' || i,
      'commission.created',
      jsonb_build_object('id', 'msg_' || i, 'type', 'commission.created', 'created_at', now()::text,
        'data', jsonb_build_object('id', 'com_' || i, 'customer_email', 'customer' || i || '@example.com',
          'amount_cents', 2000, 'status', 'pending', 'partnership_id', 'ptn_' || (i % 300),
          'affiliate', jsonb_build_object('id', 'aff_' || (i % 300), 'email', 'affiliate' || (i % 300) || '@example.com',
            'name', repeat('Affiliate name ', 3)),
          'referral_code', 'CODE' || (i % 300), 'payment_amount_cents', 10000, 'level', 1,
          'hold_until', now()::text, 'reason', null)),
      case when i % 100 < 90 then 'succeeded' when i % 100 < 99 then 'pending' else 'failed' end,
      1,
      -- A backlog is due; one in ten of it waits for a retry.
      case when i % 100 between 90 and 98 then now() - interval '1 minute' + (i % 10 = 0)::int * interval '1 hour' end,
      case when i % 100 = 91 then now() + interval '1 minute' end,
      case when i % 100 = 91 then 'a lease' end,
      now() - (${deliveriesInTable} - i) * interval '1 second'
    from generate_series(1, ${deliveriesInTable}) i`;
}

/** Runs every query the notifier makes on its deliveries, through its own code, on `pool`. */
async function runNotifierQueries(pool: Sql): Promise<void> {
  const now = new Date();
  // The delivery worker's claims (and the queue's depth, read at a scrape): the jobs are left
  // leased, so the drain ends once every endpoint holds its cap.
  const worker = startJobWorker({ sql: pool, schema, logger, concurrency: 8, ...deliveryQueue, run: async () => {} });
  await worker.drain();
  await collectMetrics();
  await worker.stop();

  const [row] = await pool<{ id: string; endpointId: string; productId: string }[]>`
    select id, endpoint_id, product_id from deliveries where id = 'dlv_00004242'`;
  if (!row) throw new Error("no delivery to read");
  // An event recorded (a replay adds nothing), the subscriptions it reads, a delivery's reads.
  await subscribedEndpoints(pool, row.productId, "commission.created");
  await insertDeliveries(pool, [
    {
      id: newId("dlv"),
      productId: row.productId,
      endpointId: row.endpointId,
      payload: { id: "msg_4242", type: "commission.created", created_at: now.toISOString(), data: {} },
      traceHeaders: {},
      dueAt: now,
    },
  ]);
  await payloadText(pool, row.id);
  await findSigningEndpoint(pool, row.endpointId);
  await findDelivery(pool, row.productId, row.endpointId, row.id);
  await listDeliveries(pool, row.endpointId, undefined, 51);
  await listDeliveries(pool, row.endpointId, row.id, 51);
  // An attempt recorded; retry and recover; an endpoint failing, then disabled.
  await pool.begin(async (tx: TransactionSql) => {
    await recordAttempt(
      tx,
      row.id,
      { attemptedAt: now, statusCode: 500, durationMs: 5, error: "" },
      { status: "pending", nextAttemptAt: now },
    );
    await markFailing(tx, row.endpointId, now);
  });
  await requeueDelivery(pool, row.id, now);
  await requeueFailed(pool, row.endpointId, new Date(now.getTime() - 3600_000), now, now);
  await disableEndpoint(pool, "wh_19", "failing", now, now);
  await probeFailingEndpoints({
    sql: pool,
    clock: () => new Date(now.getTime() - 60_000),
    allowPrivate: false,
    logger,
  });
  // Retention, and an erasure of one customer of one product.
  await purgeExpired(pool, now);
  await countCustomerPayloads(pool, "prd_3", "customer4243@example.com");
  await eraseCustomerPayloads(pool, "prd_3", "customer4243@example.com");
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

/** Each recorded statement on deliveries with the sequential scans of deliveries in its plan. */
async function seqScansOfDeliveries(mode: "custom" | "generic") {
  const onDeliveries = statements.filter((statement) => /\bdeliveries\b/.test(statement.query));
  const found: { query: string; scans: number }[] = [];
  for (const statement of onDeliveries) {
    const plan = await sql.begin(async (tx) => {
      if (mode === "generic") await tx`set local plan_cache_mode = force_generic_plan`;
      const [result] = await tx.unsafe(`explain (format json) ${statement.query}`, statement.parameters as never[]);
      // One column, "QUERY PLAN" (whatever the pool's camelCase makes of its name).
      const [explained] = Object.values(result ?? {}) as [{ Plan: PlanNode }][];
      return explained?.[0].Plan;
    });
    if (!plan) throw new Error(`no plan for ${statement.query}`);
    const scans = nodes(plan).filter(
      (node) => node["Node Type"] === "Seq Scan" && node["Relation Name"] === "deliveries",
    ).length;
    found.push({ query: statement.query.replace(/\s+/g, " ").trim().slice(0, 120), scans });
  }
  return found;
}

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema, max: 2, applicationName: "notifier-plans" });
  await migrate(sql, schema, migrationsDirectory);
  await fill(sql);
  const pool = recordingPool(database.url);
  try {
    await runNotifierQueries(pool);
  } finally {
    await pool.end();
  }
});
afterAll(async () => {
  await sql.end();
  await database.drop();
});

describe("the notifier's statements on deliveries are index reads", () => {
  it("covers the claim, the queue depth, recording, reads, attempts, recovery, the probe, retention and erasure", () => {
    const texts = statements.map((statement) => statement.query.replaceAll('"', "").replace(/\s+/g, " ")).join("\n");
    for (const part of [
      "with candidates as materialized",
      "update deliveries set leased_until",
      "from deliveries where next_attempt_at <= now()",
      "insert into deliveries",
      "update deliveries set attempts = attempts + 1",
      "set status = 'failed', next_attempt_at = null",
      "set status = 'pending', next_attempt_at",
      "delete from deliveries",
      "regexp_replace",
    ]) {
      expect(texts).toContain(part);
    }
  });

  it.each([
    ["never analysed", "custom"],
    ["never analysed", "generic"],
    ["analysed", "custom"],
    ["analysed", "generic"],
  ] as const)("with statistics %s, %s plans", async (statistics, mode) => {
    if (statistics === "analysed") await sql`analyze deliveries`;
    const plans = await seqScansOfDeliveries(mode);
    expect(plans.length).toBeGreaterThan(15);
    expect(plans.filter((plan) => plan.scans > 0)).toEqual([]);
  });
});
