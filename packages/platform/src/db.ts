import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import { Counter } from "prom-client";
import { commitReserveMs, currentDeadline, Deadline, withDeadline, withoutDeadline } from "./deadline.js";
import { DomainError } from "./errors.js";
import { stringifyExact } from "./exact-json.js";
import { metricsRegistry } from "./metrics.js";
import { instrumentSql } from "./sql-tracing.js";
import { withWakeups } from "./wakeups.js";

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
  /**
   * Called with every statement as it is sent (text and parameters). For tests that EXPLAIN
   * exactly what a code path ran. Services leave it unset: with it, postgres.js also attaches
   * each failed query's parameters (emails among them) to its error, where a log would show them.
   */
  onStatement?: (text: string, parameters: unknown[]) => void;
}

/** Postgres keeps 63 bytes of an application_name. */
const processApplicationName = (service: string) => `${service} ${hostname()}:${process.pid}`.slice(0, 63);

/**
 * One pool per service, bound to the service's schema. Rows come back in camelCase. Queries and
 * transactions made inside a trace are client spans (sql-tracing.ts).
 *
 * `url` may name several servers (`postgres://u@pg-1:5432,pg-2:5432/db?target_session_attrs=primary`,
 * or `read-write`): each connection tries them in turn and keeps only the primary, so after a
 * failover the pool reconnects to the promoted standby by itself.
 *
 * Its transactions keep the deadline of the RPC being served (see deadline.ts): `sql.begin`
 * inside a call with a deadline bounds every statement and lock wait by what is left of it, and
 * rolls back instead of committing when the work ends too close to it. So a caller told
 * DEADLINE_EXCEEDED (or UNAVAILABLE) knows nothing was applied; only a connection lost while the
 * COMMIT was on its way leaves the outcome unknown, and says so (DomainError "outcome_unknown").
 * The client enforces the deadline too, for a server that stopped answering: a statement still
 * unanswered at its deadline has its connection destroyed (answeredByDeadlines). Consumers, the
 * outbox relay and job workers set deadlines of their own; other work outside an RPC (periodic
 * jobs, migrations) is unbounded.
 *
 * A transaction that meets a conflict Postgres resolves by aborting one side (a deadlock, a
 * serialization failure) or a server that turned read-only under it (a failover) is run again
 * from the start, while the deadline leaves time for it (see retryConflicts): `work` must keep
 * its effects inside the transaction, as it must anyway for a rollback to undo them. A statement
 * sent on the pool outside any transaction (its own transaction) is sent again the same way
 * (resendingRefusedStatements). The connection that was refused as read-only is closed rather
 * than pooled again (patches/postgres+3.4.9.patch), so the retry connects afresh and reaches
 * the primary of the moment.
 */
export function createSql(url: string, options: SqlOptions): Sql {
  const sql = postgres(url, {
    max: options.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 5,
    backoff: reconnectDelaySeconds,
    transform: postgres.camel,
    types: { int8: int8AsNumber, numeric: numericAsBigint, json: jsonExact },
    connection: { search_path: options.schema, application_name: processApplicationName(options.applicationName) },
    onnotice: () => {},
    ...(options.onStatement && {
      debug: (_connection: number, text: string, parameters: unknown[]) => options.onStatement?.(text, parameters),
    }),
    ...answeredByDeadlines,
  }) as unknown as Sql;
  return instrumentSql(resendingRefusedStatements(boundByDeadlines(sql, options.schema)));
}

/**
 * Connections to a server that stops answering are given up on by the client, since nothing
 * else would end them. A frozen server (SIGSTOP, a paused VM) keeps its sockets open and its
 * kernel acknowledges TCP, keepalive probes included, and its statement_timeout never fires:
 * a statement sent to it waits forever, and so does its pooled connection. So every statement
 * made under a deadline (an RPC's, or the one a consumer, the relay or a job sets) must be
 * answered by it, or its connection is destroyed (postgres.js option `deadline`, added by
 * patches/postgres+3.4.9.patch): what is in flight on it fails as a lost connection (the caller
 * has had its answer from the deadline already) and the connection goes back to the pool
 * closed, so the next statement connects afresh and `target_session_attrs` finds the promoted
 * standby. A statement made after its deadline (a cleanup, such as releasing an idempotency key)
 * is given a second from when it is sent.
 *
 * TCP keepalive after 10 s idle covers the other half-open case, a server whose machine died or
 * whose network was cut (nothing acknowledges the probes): an idle pooled connection or the
 * LISTEN connection is found dead in about 20 s, not after the kernel's two hours.
 */
const answeredByDeadlines: { deadline: () => number | undefined; keep_alive: number } = {
  deadline: () => currentDeadline()?.at,
  keep_alive: 10,
};

/**
 * How long a connection that closed on an error waits before it connects again: 0.1 to 0.5 s,
 * at random so a pool's connections do not all knock at once. postgres.js's own delay grows
 * with every connection of the pool that closed on an error since the last success (3^n / 100 s,
 * up to 20 s), so a pool of ten that lost its primary would wait 10 to 20 s before trying the
 * promoted standby: a failover over in 1 s would keep the mesh answering 503 for 10 (measured).
 */
const reconnectDelaySeconds = () => 0.1 + Math.random() * 0.4;

type Begin = (options: string, work: (tx: TransactionSql) => unknown) => Promise<unknown>;

/**
 * The pool's `begin`, bounded by the deadline of the call being served (see createSql), run
 * again on conflicts, and waking the workers of the tables a committed attempt gave work to
 * (wakeups.ts: no NOTIFY, so commits are not serialised).
 */
function boundByDeadlines(sql: Sql, schema: string): Sql {
  const begin = sql.begin.bind(sql) as unknown as Begin;
  const bounded = (...args: unknown[]) => {
    const work = args.at(-1) as (tx: TransactionSql) => unknown;
    const mode = args.length > 1 ? (args[0] as string) : "";
    const deadline = currentDeadline();
    return retryConflicts(deadline, () =>
      withWakeups(schema, () => (deadline ? beginWithin(begin, deadline, mode, work) : begin(mode, work))),
    );
  };
  return Object.assign(sql, { begin: bounded as unknown as Sql["begin"] });
}

/**
 * Postgres errors after which the same transaction, run again, is expected to succeed: nothing
 * of it was applied. A deadlock and a serialization failure abort one of the transactions that
 * met; a read-only transaction is a connection to a server that is no longer (or not yet) the
 * primary, seen during a failover.
 */
const conflictCodes = new Set(["40P01", "40001", "25006"]);

const conflicts = new Counter({
  name: "db_transaction_conflicts_total",
  help: "Transactions aborted by Postgres and run again, by SQLSTATE: 40P01 deadlock, 40001 serialization failure, 25006 read-only (a failover).",
  labelNames: ["code"],
  registers: [metricsRegistry],
});

/** How long a transaction outside any deadline (a consumer, a job) keeps retrying conflicts. */
const conflictRetryBudgetMs = 10_000;

/**
 * Runs `attempt` (one whole transaction) again while it fails with a conflict code, after a short
 * random pause (so the two sides of a deadlock do not meet again in step), for as long as the
 * deadline leaves a commit's time after the pause. Out of time, the answer is "deadline exceeded":
 * nothing was applied, and the caller hears a 503 it may retry rather than a 500.
 */
async function retryConflicts<T>(deadline: Deadline | undefined, attempt: () => Promise<T>): Promise<T> {
  const giveUpAt = deadline ?? Deadline.in(conflictRetryBudgetMs);
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      await sleep(pauseBeforeRetry(error, tries, deadline, giveUpAt));
    }
  }
}

/**
 * How long to pause before running again what failed with `error` on its `tries`-th attempt;
 * throws what the caller should hear instead when it is no conflict, or when no time is left.
 */
function pauseBeforeRetry(error: unknown, tries: number, deadline: Deadline | undefined, giveUpAt: Deadline): number {
  if (!isRetryableConflict(error)) throw error;
  conflicts.inc({ code: error.code });
  const pauseMs = Math.random() * Math.min(10 * 2 ** tries, 500);
  if (giveUpAt.remainingMs() - commitReserveMs <= pauseMs) {
    if (deadline) throw DomainError.deadlineExceeded();
    throw error;
  }
  return pauseMs;
}

/**
 * Whether `error` is one of the conflicts after which the same work, run again, is expected to
 * succeed (conflictCodes). When one still reaches an RPC's answer (retries exhausted outside a
 * deadline), the caller hears UNAVAILABLE: nothing was applied.
 */
export function isRetryableConflict(error: unknown): error is postgres.PostgresError {
  return error instanceof postgres.PostgresError && conflictCodes.has(error.code);
}

/** The parts of a postgres.js query (query.js) the resending below reads and replaces. */
interface PendingQuery extends Promise<unknown> {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  options: Record<string, unknown>;
  isRaw?: unknown;
  onlyDescribe?: unknown;
  cursorFn?: unknown;
  forEachFn?: unknown;
}

function isTemplate(value: unknown): value is TemplateStringsArray {
  return Array.isArray(value) && Array.isArray((value as unknown as TemplateStringsArray).raw);
}

/**
 * A statement sent on the pool runs in a transaction of its own, so when Postgres refuses it with
 * a conflict code nothing of it was applied: it is sent again, as a transaction would be run
 * again (retryConflicts), and its caller sees only the answer of the attempt that succeeded. The
 * idempotency keys' reservation, for one, is such a statement: refused as read-only during a
 * failover, it would otherwise answer 500. Cursors and row-by-row reads are left alone: part of
 * their rows may have reached the caller.
 */
function resendingRefusedStatements(sql: Sql): Sql {
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const query = Reflect.apply(target, thisArg, args) as PendingQuery;
      if (!isTemplate(args[0]) || typeof query?.reject !== "function") return query;
      const send = () => Reflect.apply(target, thisArg, args) as PendingQuery;
      resendOnConflict(query, send);
      return query;
    },
  });
}

function resendOnConflict(first: PendingQuery, send: () => PendingQuery): void {
  const deadline = currentDeadline();
  const giveUpAt = deadline ?? Deadline.in(conflictRetryBudgetMs);
  const resolve = first.resolve;
  const reject = first.reject;
  let tries = 0;
  const watch = (query: PendingQuery) => {
    query.reject = (error: unknown) => {
      if (first.cursorFn || first.forEachFn) return reject(error);
      let pauseMs: number;
      try {
        pauseMs = pauseBeforeRetry(error, ++tries, deadline, giveUpAt);
      } catch (answer) {
        return reject(answer);
      }
      setTimeout(() => {
        // Made under the first one's deadline: a rejection arrives from the connection's socket,
        // whose callbacks run in the context of whatever made that socket.
        const again = deadline ? withDeadline(deadline, send) : withoutDeadline(send);
        Object.assign(again.options, first.options);
        again.isRaw = first.isRaw;
        again.onlyDescribe = first.onlyDescribe;
        watch(again);
        // then() sends it; its failures arrive through the reject replaced above.
        again.then(resolve, () => undefined);
      }, pauseMs);
    };
  };
  watch(first);
}

async function beginWithin(
  begin: Begin,
  deadline: Deadline,
  mode: string,
  work: (tx: TransactionSql) => unknown,
): Promise<unknown> {
  const budgetMs = Math.floor(deadline.remainingMs() - commitReserveMs);
  if (budgetMs <= 0) throw DomainError.deadlineExceeded();
  // Exactly one of the two happens, in whichever order the event loop runs them: the work
  // reaches its commit point (committing), or the caller is answered "deadline exceeded"
  // (answered), after which the transaction may only roll back, however little time it lost.
  let committing = false;
  let answered = false;
  const transaction = begin(mode, async (tx) => {
    // Sent ahead of the work's first statement on the same connection (pipelined, no round trip).
    tx`select set_config('statement_timeout', ${String(budgetMs)}, true),
              set_config('lock_timeout', ${String(budgetMs)}, true)`.execute();
    const result = await work(tx);
    if (answered || deadline.remainingMs() < commitReserveMs) throw DomainError.deadlineExceeded();
    committing = true;
    return result;
  });
  // Once past the commit point without committing, the transaction can only roll back (the
  // check above refuses it): answer now rather than after a slow connection or statement ends,
  // so the caller hears "not applied" while it still listens.
  let timer: NodeJS.Timeout | undefined;
  const lateness = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      if (committing) return;
      answered = true;
      reject(DomainError.deadlineExceeded());
    }, budgetMs);
  });
  try {
    return await Promise.race([transaction, lateness]);
  } catch (error) {
    if (committing && isConnectionError(error)) {
      throw DomainError.outcomeUnknown(
        "The connection to the database was lost while the change was committing; it may have been applied",
      );
    }
    if (error instanceof postgres.PostgresError && deadlineCodes.has(error.code)) throw DomainError.deadlineExceeded();
    throw error;
  } finally {
    clearTimeout(timer);
    // The abandoned transaction still settles (rolled back); its error has been answered.
    transaction.catch(() => undefined);
  }
}

/**
 * Whether the pool reaches a primary that accepts writes, answered within `withinMs`: false while
 * no server answers (a primary killed, its standby not yet promoted) or while the one reached is
 * read-only (a standby, or a URL still pointing at the old primary). Readiness asks it, so a
 * replica takes no traffic until its pool has found the new primary after a failover.
 */
export async function reachesWritablePrimary(sql: Sql, withinMs = 2000): Promise<boolean> {
  // Under a deadline of its own: a probe sent on a connection to a frozen server gives that
  // connection up when it goes unanswered (see answeredByDeadlines), so readiness comes back
  // once the pool has found the primary again.
  const query = withDeadline(
    Deadline.in(withinMs),
    () => sql<{ writable: boolean }[]>`
      select not pg_catalog.pg_is_in_recovery() and current_setting('transaction_read_only') = 'off' as writable`,
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), withinMs);
  });
  try {
    const rows = await Promise.race([query, late]);
    if (rows === undefined) {
      // Still waiting for a connection: take it out of the queue rather than let it wait on. One
      // already sent is left to its deadline, which gives its connection up: a cancel request
      // would open a connection to the same unanswering server, and postgres.js leaves that
      // request's failure unhandled (an unhandled rejection ends a service).
      if (!(query as unknown as { state: unknown }).state) query.cancel();
      return false;
    }
    return rows[0]?.writable === true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    query.catch(() => undefined);
  }
}

/** statement_timeout and lock_timeout, as set from the deadline. */
const deadlineCodes = new Set(["57014", "55P03"]);

/** Postgres error codes the domain reacts to. */
export const PgCode = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  readOnlyTransaction: "25006",
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
    "57P02",
    "57P03",
  ].includes(code);
}
