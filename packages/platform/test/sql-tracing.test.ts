import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";
import { summarizeStatement } from "../src/sql-tracing.js";

/** Client spans of postgres.js queries and transactions, exported by a real SDK, against a real Postgres. */
const schema = "traced";
const secret = "alice@example.com";

let database: TestDatabase;
let sql: Sql;
let sdk: NodeSDK;
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  sdk = new NodeSDK({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  sdk.start();
  database = await createTestDatabase();
  sql = createSql(database.url, { schema, applicationName: "sql-tracing-test" });
  await sql`create schema ${sql(schema)}`;
  await sql`create table people (id int primary key, email text unique not null)`;
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
  await sdk?.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

beforeEach(() => exporter.reset());

const tracer = trace.getTracer("sql-tracing-test");

/** Runs `fn` in a root span; answers that span's id and the spans finished meanwhile, but the root. */
async function inSpan(fn: () => Promise<unknown>): Promise<{ root: string; spans: ReadableSpan[] }> {
  const root = await tracer.startActiveSpan("request", async (span) => {
    try {
      await fn().catch(() => undefined);
    } finally {
      span.end();
    }
    return span.spanContext().spanId;
  });
  return { root, spans: exporter.getFinishedSpans().filter((s) => s.spanContext().spanId !== root) };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const noValueIn = (span: ReadableSpan) => expect(JSON.stringify([span.name, span.attributes])).not.toContain(secret);

describe("SQL spans", () => {
  it("makes a client span per query in a trace, named by operation and table, without values", async () => {
    const { root, spans } = await inSpan(async () => {
      await sql`insert into people (id, email) values (1, ${secret})`;
      await sql`select email from people where email = ${secret}`;
    });
    expect(spans.map((s) => s.name)).toEqual(["INSERT people", "SELECT people"]);
    for (const span of spans) {
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(parentOf(span)).toBe(root);
      expect(span.attributes).toMatchObject({ "db.system": "postgresql", "db.system.name": "postgresql" });
      noValueIn(span);
    }
    expect(spans[1]?.attributes).toMatchObject({
      "db.operation.name": "SELECT",
      "db.collection.name": "people",
      "db.query.summary": "SELECT people",
    });
    await sql`delete from people`;
  });

  it("groups a transaction's queries under a transaction span", async () => {
    const { root, spans } = await inSpan(() =>
      sql.begin(async (tx) => {
        await tx`insert into people (id, email) values (2, ${secret})`;
        await tx.savepoint((inner) => inner`update people set email = ${`x${secret}`} where id = 2`);
        await Promise.all([tx`select 1`, tx`select id from people`]);
      }),
    );
    const transaction = spans.find((s) => s.name === "transaction");
    expect(parentOf(transaction as ReadableSpan)).toBe(root);
    const statements = spans.filter((s) => s !== transaction);
    expect(statements.map((s) => s.name).sort()).toEqual(["INSERT people", "SELECT", "SELECT people", "UPDATE people"]);
    for (const span of statements) expect(parentOf(span)).toBe(transaction?.spanContext().spanId);
    for (const span of spans) noValueIn(span);
    await sql`delete from people`;
  });

  it("marks a failed query with its SQLSTATE and no message, and its transaction failed", async () => {
    await sql`insert into people (id, email) values (3, ${secret})`;
    const { spans } = await inSpan(() => sql.begin((tx) => tx`insert into people (id, email) values (4, ${secret})`));
    const failed = spans.find((s) => s.name === "INSERT people");
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed?.attributes["db.response.status_code"]).toBe("23505");
    expect(spans.find((s) => s.name === "transaction")?.status.code).toBe(SpanStatusCode.ERROR);
    for (const span of spans) noValueIn(span);
    expect(failed?.events).toEqual([]);
    await sql`delete from people`;
  });

  it("makes no span for a fragment, only for the query that sends it", async () => {
    const { spans } = await inSpan(async () => {
      const columns = sql.unsafe("id, email");
      await sql`select ${columns} from people`;
      await sql.unsafe("select count(*) from people");
    });
    expect(spans.map((s) => s.name)).toEqual(["SELECT people", "SELECT people"]);
  });

  it("makes no span outside a trace", async () => {
    await sql`select 1`;
    await sql.begin((tx) => tx`select 1`);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("summarizes statements by operation and first table", () => {
    const summaries = [
      "  insert into outbox (id) values ($1)",
      "update public.endpoints set x = 1",
      "delete from outbox where id in (select id from outbox)",
      "with moved as (select * from links) select * from moved",
      "select 1",
      "",
    ].map((text) => summarizeStatement(text).name);
    expect(summaries).toEqual([
      "INSERT outbox",
      "UPDATE public.endpoints",
      "DELETE outbox",
      "WITH links",
      "SELECT",
      "postgresql",
    ]);
  });
});
