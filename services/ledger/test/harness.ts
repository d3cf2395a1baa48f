import * as partnersServer from "@affiliate/partners/server";
import {
  createLogger,
  createSql,
  errorMapping,
  migrate,
  PageTokens,
  type Sql,
  serverDeadline,
} from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { EventType, LedgerService, type TrackRequestSchema } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService, type UpdateProgramRequestSchema } from "@affiliate/proto/partners";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { CachedPartnersDirectory } from "../src/rpc/partners-directory.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";

export interface Harness {
  sql: Sql;
  /** The partners service's pool (its schema in the same database). */
  partnersSql: Sql;
  /** The test's own database (for refuseWrites). */
  databaseUrl: string;
  /** Where the pool's statements go while recordStatements runs. */
  recorder: { current: SentStatement[] | null };
  ledger: Client<typeof LedgerService>;
  /** The ledger's erasure-owner contract, as the privacy service calls it. */
  erasure: Client<typeof ErasureOwnerService>;
  partners: Client<typeof PartnersService>;
  admin: Client<typeof PartnersAdminService>;
  /** The ledger's clock; tests move it. */
  clock: { now: Date };
  close(): Promise<void>;
}

// A call made with a timeout is served within it, as the ledger process serves it (lock_timeout included).
const errors = { router: { interceptors: [serverDeadline, errorMapping(createLogger("ledger-test", "silent"))] } };

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
  const recorder: Harness["recorder"] = { current: null };
  const sql = createSql(database.url, {
    schema,
    max: 8,
    applicationName: "ledger-test",
    onStatement: (text, parameters) => recorder.current?.push({ text, parameters }),
  });
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
    partnersSql,
    databaseUrl: database.url,
    recorder,
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
  settings: Omit<MessageInitShape<typeof UpdateProgramRequestSchema>, "productId" | "$typeName"> = {},
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
export function track(h: Harness, request: TrackInit, options?: { timeoutMs?: number }) {
  return h.ledger.track(trackRequest(request), options);
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

export { invariantViolations } from "../src/store/invariants.js";

/** The error a call failed with, or undefined when it succeeded. */
export const failure = (promise: Promise<unknown>) => promise.then(() => undefined, ConnectError.from);

/** A statement as the ledger's pool sent it: its text and its parameters. */
export interface SentStatement {
  text: string;
  parameters: unknown[];
}

/**
 * Every statement the ledger's pool sends while `work` runs (the driver's own look-ups in
 * pg_catalog aside), so a test can run a real code path and EXPLAIN exactly what it ran
 * (planOf). Nothing else may use the pool meanwhile.
 */
export async function recordStatements(h: Harness, work: () => Promise<unknown>): Promise<SentStatement[]> {
  const sent: SentStatement[] = [];
  h.recorder.current = sent;
  try {
    await work();
  } finally {
    h.recorder.current = null;
  }
  return sent.filter((statement) => !statement.text.includes("pg_catalog."));
}

/** A plan node of EXPLAIN (FORMAT JSON), the fields a test looks at. */
export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Total Cost": number;
  Plans?: PlanNode[];
}

/**
 * Every node of the statement's plan, depth first, as Postgres would run it now: the plan for the
 * parameters given, or (`generic`) the generic plan a prepared statement may switch to, whatever
 * its parameters.
 */
export async function planOf(
  sql: Sql,
  statement: SentStatement,
  options: { generic?: boolean } = {},
): Promise<PlanNode[]> {
  const parameters = statement.parameters as never[];
  const rows = options.generic
    ? await sql.begin(async (tx) => {
        await tx.unsafe(`prepare planned as ${statement.text}`);
        await tx.unsafe("set local plan_cache_mode = force_generic_plan");
        // EXECUTE takes no bind parameters: its arguments are the sent (serialised) values as
        // literals of the types Postgres inferred for the prepared statement.
        const [prepared] = await tx<{ types: string[] }[]>`
          select parameter_types::text[] as types from pg_prepared_statements where name = 'planned'`;
        const literal = (value: unknown, i: number) =>
          value === null || value === undefined
            ? `null::${prepared?.types[i]}`
            : `'${String(value).replaceAll("'", "''")}'::${prepared?.types[i]}`;
        const explained = await tx.unsafe(
          `explain (format json) execute planned${parameters.length > 0 ? `(${parameters.map(literal).join(", ")})` : ""}`,
        );
        await tx.unsafe("deallocate planned");
        return explained;
      })
    : await sql.unsafe(`explain (format json) ${statement.text}`, parameters);
  const [explained] = Object.values(rows[0] ?? {}) as { Plan: PlanNode }[][];
  const nodes: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    nodes.push(node);
    for (const child of node.Plans ?? []) visit(child);
  };
  const plan = explained?.[0]?.Plan;
  if (plan) visit(plan);
  return nodes;
}
