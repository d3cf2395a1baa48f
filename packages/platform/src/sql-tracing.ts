import { type Attributes, type Context, context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import postgres from "postgres";

/**
 * Client spans for postgres.js, which has no OpenTelemetry instrumentation of its own: one span
 * per query executed, and one around each transaction, after the database semantic conventions.
 *
 * - A span says what ran, never with what: its name and `db.query.summary` are the statement's
 *   operation and first table, read from the code's template text (`SELECT endpoints`). No query
 *   text, parameter or error message is recorded (a unique violation's message can quote a
 *   value); a failure records only its SQLSTATE.
 * - Only work inside a trace is traced: a query with no active span (the outbox relay's poll, a
 *   job claim, migrations) makes none, so idle loops do not fill the collector with one-span
 *   traces, and untraced paths pay one context lookup per query.
 * - The span starts when postgres.js sends the query (its first `await`), not when the template
 *   is built: a fragment nested in another query is never sent and makes no span.
 */

const tracer = trace.getTracer("@affiliate/platform/sql");

/** Anything postgres.js runs queries on: the pool, a transaction, a savepoint. */
type AnySql = postgres.Sql<Record<string, never>>;

/**
 * postgres.js sends a query from `handle()` (called by then/catch/finally/execute), once. It is
 * not part of the typed API; postgres is pinned, and the platform's test of these spans fails if
 * a release moves it.
 */
interface SendableQuery {
  handle(): Promise<void>;
}

interface Statement {
  name: string;
  attributes: Attributes;
}

const system = { "db.system.name": "postgresql", "db.system": "postgresql" } as const;

/** The table a statement names first, by operation (unquoted identifiers only, never a literal). */
const firstTable = /\b(?:from|into|update|join|table)\s+((?:[a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*)/i;
const firstWord = /^\s*([a-z]+)/i;

/** Operation and first table of a statement's text, e.g. `SELECT endpoints`. */
export function summarizeStatement(text: string): Statement {
  const operation = firstWord.exec(text)?.[1]?.toUpperCase();
  if (!operation) return { name: "postgresql", attributes: { ...system } };
  const table = firstTable.exec(text)?.[1]?.toLowerCase();
  const summary = table ? `${operation} ${table}` : operation;
  return {
    name: summary,
    attributes: {
      ...system,
      "db.operation.name": operation,
      "db.query.summary": summary,
      ...(table ? { "db.collection.name": table } : {}),
    },
  };
}

// A tagged template's strings array is one object per call site: summarize each site once.
const statements = new WeakMap<TemplateStringsArray, Statement>();

function statementOf(strings: TemplateStringsArray): Statement {
  let statement = statements.get(strings);
  if (!statement) {
    statement = summarizeStatement(strings.join("?"));
    statements.set(strings, statement);
  }
  return statement;
}

function isTemplate(value: unknown): value is TemplateStringsArray {
  return Array.isArray(value) && Array.isArray((value as unknown as TemplateStringsArray).raw);
}

function endWith(span: Span, error: unknown) {
  const code = error instanceof postgres.PostgresError ? error.code : undefined;
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute("error.type", code ?? (error instanceof Error ? error.name : "Error"));
  if (code) span.setAttribute("db.response.status_code", code);
  span.end();
}

/** Makes `query` open a client span under `parent` when it is sent, closed when it settles. */
function traceWhenSent<Q extends object>(query: Q, describe: () => Statement, parent: Context): Q {
  const sendable = query as unknown as SendableQuery;
  const send = sendable.handle;
  if (typeof send !== "function") return query;
  sendable.handle = function (this: SendableQuery & Promise<unknown>) {
    // Once: later then() calls find the prototype's handle again, which sends nothing twice.
    delete (this as Partial<SendableQuery>).handle;
    const statement = describe();
    const span = tracer.startSpan(statement.name, { kind: SpanKind.CLIENT, attributes: statement.attributes }, parent);
    // The base then: Query's own would call handle() again. Its result is a plain promise that
    // never rejects, so no unhandled rejection comes of observing the query.
    Promise.prototype.then.call(
      this,
      () => span.end(),
      (error: unknown) => endWith(span, error),
    );
    return send.call(this);
  };
  return query;
}

/** The transaction span's callback: the transaction's handle, traced too, runs inside it. */
function traceTransaction<T>(run: (fn: (tx: AnySql) => T) => Promise<unknown>, fn: (tx: AnySql) => T) {
  // Not a client span: the statements within are the client calls; this groups them.
  return tracer.startActiveSpan("transaction", { kind: SpanKind.INTERNAL, attributes: { ...system } }, async (span) => {
    try {
      const result = await run((tx) => fn(instrumentSql(tx)));
      span.end();
      return result;
    } catch (error) {
      endWith(span, error);
      throw error;
    }
  });
}

/**
 * Wraps a postgres.js pool (or transaction) so that the queries and transactions made through
 * it inside a trace become client spans. Everything else passes through unchanged.
 */
export function instrumentSql<S extends AnySql>(sql: S): S {
  const begin = (target: AnySql, args: unknown[]) => {
    const fn = args.at(-1) as (tx: AnySql) => unknown;
    if (typeof fn !== "function" || !trace.getSpan(context.active())) return Reflect.apply(target.begin, target, args);
    const options = args.length > 1 ? [args[0]] : [];
    return traceTransaction((wrapped) => Reflect.apply(target.begin, target, [...options, wrapped]), fn);
  };
  const savepoint = (target: AnySql & { savepoint: (...args: unknown[]) => unknown }, args: unknown[]) => {
    const fn = args.at(-1);
    if (typeof fn !== "function" || isTemplate(args[0])) return Reflect.apply(target.savepoint, target, args);
    return Reflect.apply(target.savepoint, target, [
      ...args.slice(0, -1),
      (nested: AnySql) => (fn as (nested: AnySql) => unknown)(instrumentSql(nested)),
    ]);
  };

  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const result = Reflect.apply(target, thisArg, args);
      const parent = context.active();
      const strings = args[0];
      if (!isTemplate(strings) || !trace.getSpan(parent)) return result;
      return traceWhenSent(result as object, () => statementOf(strings), parent);
    },
    get(target, property, receiver) {
      if (property === "begin") return (...args: unknown[]) => begin(target, args);
      if (property === "savepoint" && "savepoint" in target) {
        return (...args: unknown[]) => savepoint(target as never, args);
      }
      if (property === "unsafe") {
        return (text: string, ...rest: unknown[]) => {
          const query = Reflect.apply(target.unsafe, target, [text, ...rest]) as object;
          const parent = context.active();
          return trace.getSpan(parent) ? traceWhenSent(query, () => summarizeStatement(text), parent) : query;
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}
