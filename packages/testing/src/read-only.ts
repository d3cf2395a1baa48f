import postgres from "postgres";
import { parseMetrics } from "./metrics.js";

/**
 * Makes a test's own database refuse writes as a server that is no longer the primary does
 * (SQLSTATE 25006, "cannot execute INSERT in a read-only transaction"), for the failover tests
 * of each service's write RPCs: every session opened from now on is read-only
 * (`default_transaction_read_only`, a setting of this database alone), and the sessions already
 * open are closed so that their pools reconnect into read-only ones. `restore()` makes new
 * sessions writable again; sessions opened meanwhile stay read-only until their pool replaces
 * them, as connections to a demoted primary stay on it until closed.
 */
export async function refuseWrites(databaseUrl: string): Promise<{ restore(): Promise<void> }> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = "/postgres";
  maintenance.search = "";
  const admin = postgres(maintenance.toString(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`alter database "${name}" set default_transaction_read_only = on`);
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`;
    const giveUpAt = Date.now() + 10_000;
    for (;;) {
      const [row] = await admin<{ open: number }[]>`
        select count(*)::int as open from pg_stat_activity where datname = ${name}`;
      if (row?.open === 0) break;
      if (Date.now() > giveUpAt) throw new Error(`sessions of ${name} still open after 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await admin.end();
  }
  return {
    async restore() {
      const sql = postgres(maintenance.toString(), { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`alter database "${name}" reset default_transaction_read_only`);
      } finally {
        await sql.end();
      }
    },
  };
}

/** A pool, as far as settling it needs: postgres.js's tagged template. */
type Pool = (strings: TemplateStringsArray, ...values: never[]) => PromiseLike<unknown>;

/**
 * Waits until `size` statements sent at once on `pool` all succeed, so that every connection the
 * server closed (refuseWrites) has been noticed and replaced before the test sends its requests:
 * a request must meet a read-only session, not a connection the test closed under it.
 */
export async function settlePool(pool: Pool, size: number): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  for (;;) {
    const answers = await Promise.allSettled(Array.from({ length: size }, () => pool`select 1`));
    if (answers.every((answer) => answer.status === "fulfilled")) return;
    if (Date.now() > giveUpAt) throw new Error("the pool did not reconnect within 10 s");
  }
}

export interface RefusalScenario<T> {
  /** The test's own database. */
  databaseUrl: string;
  /** The pools of the services under test, with their sizes (see settlePool). */
  pools: { pool: Pool; size: number }[];
  /** How many 25006 refusals the platform has counted so far (db_transaction_conflicts_total). */
  refusals: () => Promise<number>;
  /** Sends the write requests; called once the database refuses writes. */
  send: () => Promise<T>[];
}

/**
 * A failover as a service's pool meets it: the database refuses writes while the requests are
 * sent, and takes them again once they have met at least one refusal each (counted), as a new
 * primary does once promoted. Returns how each request ended.
 */
export async function refusedUntilRestored<T>(scenario: RefusalScenario<T>): Promise<PromiseSettledResult<T>[]> {
  const refusal = await refuseWrites(scenario.databaseUrl);
  try {
    for (const { pool, size } of scenario.pools) await settlePool(pool, size);
    const before = await scenario.refusals();
    const sent = scenario.send();
    const settled = Promise.allSettled(sent);
    let done = false;
    void settled.then(() => {
      done = true;
    });
    const giveUpAt = Date.now() + 20_000;
    // A request answered before the restore (an error) ends the wait too: the test sees it.
    while (!done && (await scenario.refusals()) < before + sent.length) {
      if (Date.now() > giveUpAt) throw new Error("the requests met no read-only refusal within 20 s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await refusal.restore();
    return await settled;
  } finally {
    await refusal.restore();
  }
}

/** The same requests while the database refuses writes throughout: how each request ended. */
export async function refusedThroughout<T>(scenario: RefusalScenario<T>): Promise<PromiseSettledResult<T>[]> {
  const refusal = await refuseWrites(scenario.databaseUrl);
  try {
    for (const { pool, size } of scenario.pools) await settlePool(pool, size);
    return await Promise.allSettled(scenario.send());
  } finally {
    await refusal.restore();
  }
}

/** Counts the 25006 refusals in a process's metrics text (collectMetrics of the platform). */
export function readOnlyRefusals(collect: () => Promise<string>): () => Promise<number> {
  return async () =>
    parseMetrics(await collect())
      .filter((sample) => sample.name === "db_transaction_conflicts_total" && sample.labels.code === "25006")
      .reduce((sum, sample) => sum + sample.value, 0);
}
