import { hostname } from "node:os";
import postgres from "postgres";
import { stringifyExact } from "./exact-json.js";
import { instrumentSql } from "./sql-tracing.js";

export type Sql = postgres.Sql<Record<string, never>>;
export type TransactionSql = postgres.TransactionSql<Record<string, never>>;
/** A pool or a transaction: store functions take either, so callers choose the boundary. */
export type Queryable = Sql | TransactionSql;

/**
 * int8 columns (a single amount, a count) come back as JS numbers: every amount the API accepts
 * is at most 100,000,000,000 cents, far below 2^53, so one row's value is always exact. A value
 * beyond 2^53 is refused rather than rounded. Totals do not come this way: see numericAsBigint.
 */
const int8AsNumber = {
  to: 20,
  from: [20],
  serialize: (value: number | bigint) => String(value),
  parse: (value: string) => {
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed)) throw new RangeError(`int8 value ${value} exceeds 2^53`);
    return parsed;
  },
};

/**
 * numeric values come back as JS bigints. This is how totals travel (contract section 11): a
 * `sum()` of int8 is numeric in Postgres, exact at any size, so a sum of many maximal payments
 * (over 2^53 after 90,072 of them) reaches the code exactly, and from there travels as int64 in
 * protos. A store that reads a stored total (a payout's amount) casts it `::numeric` for the same
 * reason. The schemas hold no fractional numeric, so a fraction is a bug and is refused.
 */
const numericAsBigint = {
  to: 1700,
  from: [1700],
  serialize: (value: bigint) => value.toString(),
  parse: (value: string) => {
    if (!/^-?\d+$/.test(value)) throw new RangeError(`numeric value ${value} is not an integer`);
    return BigInt(value);
  },
};

/** json and jsonb parameters are written by stringifyExact, so a bigint in them stays exact. */
const jsonExact = {
  to: 3802,
  from: [114, 3802],
  serialize: (value: unknown) => stringifyExact(value),
  parse: (value: string) => JSON.parse(value) as unknown,
};

export interface SqlOptions {
  /** The service's own schema; it is the only one on the search path. */
  schema: string;
  max?: number;
  /**
   * The service's name. pg_stat_activity shows `<applicationName> <host>:<pid>`, so an operator
   * sees which replica holds a connection, and the pool metrics count this process's connections.
   */
  applicationName: string;
}

/** Postgres keeps 63 bytes of an application_name. */
const processApplicationName = (service: string) => `${service} ${hostname()}:${process.pid}`.slice(0, 63);

/**
 * One pool per service, bound to the service's schema. Rows come back in camelCase. Queries and
 * transactions made inside a trace are client spans (sql-tracing.ts).
 */
export function createSql(url: string, options: SqlOptions): Sql {
  const sql = postgres(url, {
    max: options.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 5,
    transform: postgres.camel,
    types: { int8: int8AsNumber, numeric: numericAsBigint, json: jsonExact },
    connection: { search_path: options.schema, application_name: processApplicationName(options.applicationName) },
    onnotice: () => {},
  }) as unknown as Sql;
  return instrumentSql(sql);
}

/** Postgres error codes the domain reacts to. */
export const PgCode = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
} as const;

/** The violated constraint's name when `error` is a unique violation, else undefined. */
export function uniqueViolation(error: unknown): string | undefined {
  if (error instanceof postgres.PostgresError && error.code === PgCode.uniqueViolation) {
    return error.constraint_name ?? "";
  }
  return undefined;
}

/** Whether an error means the database could not be reached (as opposed to a bad query). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code ?? "";
  return [
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENOTFOUND",
    "EPIPE",
    "CONNECT_TIMEOUT",
    "CONNECTION_CLOSED",
    "CONNECTION_ENDED",
    "CONNECTION_DESTROYED",
    "57P01",
    "57P03",
  ].includes(code);
}
