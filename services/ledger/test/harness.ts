import * as partnersServer from "@affiliate/partners/server";
import { createLogger, createSql, errorMapping, migrate, PageTokens, type Sql } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { EventType, LedgerService, type TrackRequestSchema } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService, type UpdateProgramRequestSchema } from "@affiliate/proto/partners";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { CachedPartnersDirectory } from "../src/partners-directory.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";

export interface Harness {
  sql: Sql;
  ledger: Client<typeof LedgerService>;
  /** The ledger's erasure-owner contract, as the privacy service calls it. */
  erasure: Client<typeof ErasureOwnerService>;
  partners: Client<typeof PartnersService>;
  admin: Client<typeof PartnersAdminService>;
  /** The ledger's clock; tests move it. */
  clock: { now: Date };
  close(): Promise<void>;
}

const errors = { router: { interceptors: [errorMapping(createLogger("ledger-test", "silent"))] } };

/**
 * The ledger over an in-memory transport on a fresh database, with the real partners service
 * (its own schema in the same database) behind its partners directory.
 */
export async function startHarness(): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase();
  const partnersSql = createSql(database.url, {
    schema: partnersServer.schema,
    max: 4,
    applicationName: "partners-test",
  });
  await migrate(partnersSql, partnersServer.schema, partnersServer.migrationsDirectory);
  const sql = createSql(database.url, { schema, max: 8, applicationName: "ledger-test" });
  await migrate(sql, schema, migrationsDirectory);
  const pageTokens = new PageTokens("test-page-token-secret");
  const partnersTransport = createRouterTransport(partnersServer.routes({ sql: partnersSql, pageTokens }), errors);
  const partners = createClient(PartnersService, partnersTransport);
  const clock = { now: new Date() };
  const directory = new CachedPartnersDirectory(partners, { ttlMs: 60_000, maxEntries: 1000 });
  const ledgerTransport = createRouterTransport(
    routes({ sql, partners: directory, pageTokens, clock: () => clock.now }),
    errors,
  );
  return {
    sql,
    ledger: createClient(LedgerService, ledgerTransport),
    erasure: createClient(ErasureOwnerService, ledgerTransport),
    partners,
    admin: createClient(PartnersAdminService, partnersTransport),
    clock,
    async close() {
      await sql.end();
      await partnersSql.end();
      await database.drop();
    },
  };
}

let counter = 0;
export const unique = (tag: string) => `${tag}-${Date.now().toString(36)}-${++counter}`;
export const uniqueEmail = (tag = "cust") => `${unique(tag)}@example.com`;

/** A product with the given program settings. */
export async function newProduct(
  h: Harness,
  settings: Omit<MessageInitShape<typeof UpdateProgramRequestSchema>, "productId"> = {},
) {
  const { product } = await h.admin.createProduct({ name: unique("product") });
  const productId = product?.id ?? "";
  if (Object.keys(settings).length > 0) await h.partners.updateProgram({ productId, ...settings });
  return productId;
}

/** An active partnership; returns its id and code. */
export async function newAffiliate(h: Harness, productId: string, extra: { sponsorReferralCode?: string } = {}) {
  const { partnership } = await h.partners.registerAffiliate({
    productId,
    registration: { email: uniqueEmail("aff"), ...extra },
    notify: false,
  });
  return { id: partnership?.id ?? "", code: partnership?.referralCode ?? "" };
}

type TrackInit = Omit<MessageInitShape<typeof TrackRequestSchema>, "occurredAt" | "$typeName"> & { occurredAt?: Date };

const trackRequest = ({ occurredAt, ...rest }: TrackInit) => ({
  ...rest,
  occurredAt: occurredAt ? timestampFromDate(occurredAt) : undefined,
});

/** Tracks an event, with occurredAt as a Date. */
export function track(h: Harness, request: TrackInit) {
  return h.ledger.track(trackRequest(request));
}

/** Tracks events in one TrackBatch call, with occurredAt as a Date. */
export function trackBatch(h: Harness, requests: TrackInit[]) {
  return h.ledger.trackBatch({ events: requests.map(trackRequest) });
}

export const day = 24 * 3600 * 1000;
export { EventType };

/**
 * Polls `condition` until it holds. The deadline only bounds a broken run; it is generous and
 * never what a test asserts.
 */
export async function eventually(condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out waiting for a condition");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Every row that breaks one of the ledger's invariants (the queries of the README, and the
 * rollups equal to the events and commissions they summarise); empty on a healthy database.
 */
export async function invariantViolations(sql: Sql): Promise<{ check: string; row: unknown }[]> {
  const checks: Record<string, PromiseLike<readonly unknown[]>> = {
    "commission below 0": sql`select id from commissions where amount_cents < 0`,
    "payment refunded beyond its amount": sql`
      select id from tracking_events where refunded_cents > coalesce(amount_cents, 0)`,
    "refunded total is not the sum of refunds": sql`
      select e.id from tracking_events e
      left join (select event_id, sum(amount_cents) as total from refunds group by event_id) r on r.event_id = e.id
      where e.refunded_cents <> coalesce(r.total, 0)`,
    "commission not recomputed from the refunded total": sql`
      select c.id from commissions c join tracking_events e on e.id = c.event_id
      where c.status <> 'rejected'
        and c.amount_cents <> floor((2 * c.original_amount_cents * (e.amount_cents - e.refunded_cents) + e.amount_cents)
                                    / (2 * e.amount_cents))`,
    "daily commissions differ from the commissions": sql`
      select r.product_id, r.day from
        (select product_id, day, sum(commissions_cents) as total from daily_rollups group by 1, 2) r
        left join (select product_id, (payment_occurred_at at time zone 'UTC')::date as day, sum(amount_cents) as total
                   from commissions where status <> 'rejected' group by 1, 2) c using (product_id, day)
      where r.total <> coalesce(c.total, 0)`,
    "daily activity differs from the events": sql`
      select product_id, day from
        (select product_id, day, sum(clicks) as clicks, sum(signups) as signups, sum(conversions) as conversions,
                sum(revenue_cents) as revenue from daily_rollups group by 1, 2) r
        full join (select product_id, (occurred_at at time zone 'UTC')::date as day,
                          count(*) filter (where event_type = 'click') as clicks,
                          count(*) filter (where event_type = 'signup') as signups,
                          count(*) filter (where event_type = 'payment' and partnership_id is not null) as conversions,
                          coalesce(sum(amount_cents) filter (where event_type = 'payment' and partnership_id is not null), 0)
                            as revenue
                   from tracking_events group by 1, 2) e using (product_id, day)
      where (coalesce(r.clicks, 0), coalesce(r.signups, 0), coalesce(r.conversions, 0), coalesce(r.revenue, 0))
            <> (coalesce(e.clicks, 0), coalesce(e.signups, 0), coalesce(e.conversions, 0), coalesce(e.revenue, 0))`,
    "partnership figures differ from the events and commissions": sql`
      select partnership_id from
        (select partnership_id, sum(clicks) as clicks, sum(conversions) as conversions,
                sum(pending_count) as pending_count, sum(pending_amount_cents) as pending,
                sum(approved_count) as approved_count, sum(approved_amount_cents) as approved
         from partnership_rollups group by 1) r
        full join (select partnership_id, count(*) filter (where event_type = 'click') as clicks,
                          count(*) filter (where event_type = 'payment') as conversions
                   from tracking_events where partnership_id is not null group by 1) e using (partnership_id)
        full join (select partnership_id, count(*) filter (where status = 'pending') as pending_count,
                          coalesce(sum(amount_cents) filter (where status = 'pending'), 0) as pending,
                          count(*) filter (where status = 'approved') as approved_count,
                          coalesce(sum(amount_cents) filter (where status = 'approved'), 0) as approved
                   from commissions group by 1) c using (partnership_id)
      where (coalesce(r.clicks, 0), coalesce(r.conversions, 0)) <> (coalesce(e.clicks, 0), coalesce(e.conversions, 0))
         or (coalesce(r.pending_count, 0), coalesce(r.pending, 0), coalesce(r.approved_count, 0), coalesce(r.approved, 0))
            <> (coalesce(c.pending_count, 0), coalesce(c.pending, 0), coalesce(c.approved_count, 0), coalesce(c.approved, 0))`,
  };
  const found = await Promise.all(
    Object.entries(checks).map(async ([check, rows]) => (await rows).map((row) => ({ check, row }))),
  );
  return found.flat();
}
