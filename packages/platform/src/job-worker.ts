import { randomUUID } from "node:crypto";
import { setTimeout as pause } from "node:timers/promises";
import { Counter, Gauge } from "prom-client";
import { isConnectionError, type Sql, type TransactionSql } from "./db.js";
import { Deadline, withDeadline } from "./deadline.js";
import { DomainError } from "./errors.js";
import type { Logger } from "./logger.js";
import { metricsRegistry, sampleOnScrape } from "./metrics.js";
import { onWake } from "./wakeups.js";

const registers = [metricsRegistry];
const due = new Gauge({
  name: "jobs_due",
  help: "Jobs whose next attempt is due and not yet finished (the queue's depth), per job table.",
  labelNames: ["table"],
  registers,
});
const oldestDue = new Gauge({
  name: "jobs_oldest_due_age_seconds",
  help: "How long the longest-waiting due job has been due (0 when none is): how far behind the workers are.",
  labelNames: ["table"],
  registers,
});
const running = new Gauge({
  name: "jobs_in_flight",
  help: "Jobs this process is running now.",
  labelNames: ["table"],
  registers,
});
const runs = new Counter({
  name: "jobs_runs_total",
  help: "Job runs by outcome: recorded (finish wrote the next state), fenced (the lease had passed to another claim), failed (the run threw; claimed again after its lease).",
  labelNames: ["table", "outcome"],
  registers,
});

/**
 * The columns a job table carries (see packages/platform/README.md, "Durable jobs"): the rows
 * are the jobs, so a job and the state it works on commit together, as an event and its change
 * do in the outbox.
 *
 *   id text primary key,
 *   next_attempt_at timestamptz,   -- due from then on; null: nothing to do
 *   leased_until timestamptz,      -- claimed by a worker until then
 *   lease_token text               -- which claim holds it (fences a worker whose lease ran out)
 */
export interface JobRow {
  id: string;
  nextAttemptAt: Date | null;
  leasedUntil: Date | null;
  leaseToken: string | null;
}

/**
 * How long a claim, or the record of an outcome, may wait for the database's answer. Past it the
 * claim is given up (its rows, if it did commit, are adopted by the next one) and a record is
 * tried again: a worker that awaited a connection that never answers would claim nothing more
 * (after a failover the HA test saw a worker claim nothing for over a minute with deliveries due).
 */
const answerWithinMs = 10_000;

const answered = <T>(work: () => Promise<T>): Promise<T> => withDeadline(Deadline.in(answerWithinMs), work);

const timedOut = (error: unknown) => error instanceof DomainError && error.kind === "deadline_exceeded";

/** A job this worker holds. */
export interface ClaimedJob<Row extends JobRow> {
  row: Row;
  /** Aborted when the lease is about to run out: stop and let the next claim do it again. */
  signal: AbortSignal;
  /**
   * Records the outcome in one transaction, if and only if this claim still holds the job (a
   * claim whose lease ran out writes nothing: another worker owns the job now), and releases
   * the lease. `record` sets the row's next state, e.g. `next_attempt_at` null when done or the
   * time of the retry. Answers whether it was recorded.
   */
  finish(record: (tx: TransactionSql) => Promise<void>, options?: FinishOptions): Promise<boolean>;
}

export interface FinishOptions {
  /**
   * Runs first in finish's transaction, before the job's row is locked: takes the locks that
   * other paths take before they lock the job's row. A parent whose delete cascades to its jobs
   * (the notifier's endpoint and its deliveries) is locked first by that delete; a finish must
   * lock it first too, or the two wait on each other (deadlock). Even a finish that writes only
   * its job's row: it updates that row twice (the record, then the lease's release), and Postgres
   * checks the row's foreign keys on the second update (the row is then its own transaction's),
   * taking the parent's key-share lock after the job's row.
   */
  lockFirst?(tx: TransactionSql): Promise<void>;
}

export interface JobWorkerOptions<Row extends JobRow> {
  sql: Sql;
  /**
   * The service's schema: this process's commits that give the table work wake the worker
   * (`wakeAfterCommit(table)`, wakeups.ts), and a NOTIFY on `<schema>_<table>` does too.
   */
  schema: string;
  table: string;
  logger: Logger;
  /** Runs one claimed job. Throwing leaves the job to be claimed again when its lease ends. */
  run(job: ClaimedJob<Row>): Promise<void>;
  /** Jobs this worker runs at once (default 32). */
  concurrency?: number;
  /** How long a claim is exclusive; must exceed the longest run (default 60 s). */
  leaseMs?: number;
  /** At most `maxInFlight` jobs with one value of `column` leased at once, over every worker. */
  perGroup?: { column: string; maxInFlight: number };
  /** Poll interval when no notification arrives, and for retries falling due (default 1 s). */
  pollMs?: number;
  /** The time the worker compares `next_attempt_at` with; tests move it. */
  clock?: () => Date;
}

export interface JobWorker {
  /** Claims and runs due jobs until none is left; resolves with how many ran. For tests and benches. */
  drain(): Promise<number>;
  /** Stops claiming and waits for the jobs in flight. Unfinished jobs are claimed again later. */
  stop(): Promise<void>;
}

/**
 * A durable job worker: the outbox relay's idea generalised to work that can fail and wait.
 * Rows are due when `next_attempt_at <= now`; a claim leases a batch with SKIP LOCKED (several
 * workers and replicas share a table), runs each job outside any transaction (an HTTP call, an
 * SMTP send), and records the outcome fenced by the lease token. A worker killed at any moment
 * loses nothing (the row is still due and its lease runs out) and never runs a job twice at
 * once (a second claim needs the first lease to have ended, and the run is aborted before it
 * does). Woken after the commit of a job its process inserts or makes due (wakeups.ts, no
 * NOTIFY: notifying commits are serialised), so a new job starts at once instead of at the next
 * poll; jobs another replica commits wait at most a poll.
 *
 * A lost database connection (a failover) strands nothing until its lease ends: a claim whose
 * answer was lost is adopted by the worker's next claim (its lease token is known here), and an
 * outcome that could not be recorded is recorded again once the pool has reconnected, so a
 * webhook that was sent is not sent a second time a minute later.
 */
export function startJobWorker<Row extends JobRow>(options: JobWorkerOptions<Row>): JobWorker {
  const { sql, table, logger } = options;
  const concurrency = options.concurrency ?? 32;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollMs = options.pollMs ?? 1000;
  const clock = options.clock ?? (() => new Date());
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let notified = false;
  let wake: (() => void) | undefined;

  // Both claims touch the table only through indexes, whatever the planner knows of it: the
  // leased rows are found by id (`= any(array(…))`, the primary key) rather than by a join the
  // planner may hash over the whole table, and a group's leases are counted per group of the
  // candidates (an index on the group column where leased_until is not null serves it). Joined,
  // a table never analysed, or analysed while small, was read whole at every claim: the
  // notifier's deliveries, 2,790 sequential scans in 4 minutes of load.
  // Tokens of claims that failed, with when their leases end: a claim can commit and its answer
  // be lost with the connection, leaving rows leased to no one until then. The next claim adopts
  // whatever still carries one of them (the token is ours alone, so nothing else is taken).
  const unanswered = new Map<string, number>();
  const claim = async (limit: number): Promise<Row[]> => {
    const token = randomUUID();
    const lost = [...unanswered].filter(([, endsAt]) => endsAt > Date.now()).map(([lostToken]) => lostToken);
    try {
      const rows = await claimWith(token, lost, limit);
      for (const lostToken of lost) unanswered.delete(lostToken);
      return rows;
    } catch (error) {
      unanswered.set(token, Date.now() + leaseMs);
      throw error;
    }
  };

  const claimWith = async (token: string, lost: string[], limit: number): Promise<Row[]> =>
    (await answered(() =>
      sql.begin(async (tx) => {
        const now = clock();
        const until = new Date(now.getTime() + leaseMs);
        // Adopted rows may take a group past its cap by what the lost claim held: it counted them.
        // Skipping what another transaction holds, as every claim does: see claimDue.
        const adopted = lost.length
          ? await tx<Row[]>`
            update ${tx(table)} set leased_until = ${until}, lease_token = ${token}
            where id = any(array(
              select id from ${tx(table)} where lease_token = any(${lost}) and leased_until > ${now}
              for update skip locked))
            returning *`
          : [];
        const room = limit - adopted.length;
        return room > 0 ? [...adopted, ...(await claimDue(tx, token, now, until, room))] : adopted;
      }),
    )) as unknown as Row[];

  const claimDue = async (tx: TransactionSql, token: string, now: Date, until: Date, limit: number) => {
    const group = options.perGroup;
    if (!group) {
      return tx`
        update ${tx(table)} set leased_until = ${until}, lease_token = ${token}
        where id = any(array(
          select id from ${tx(table)}
          where next_attempt_at <= ${now} and (leased_until is null or leased_until <= ${now})
          order by next_attempt_at limit ${limit} for update skip locked))
        returning *`;
    }
    // A group's cap counts leases held by every worker, so claims of this table take turns
    // (the lock lasts one short statement); the ranking then admits only what fits.
    await tx`select pg_advisory_xact_lock(hashtext(${`job-claim:${options.schema}.${table}`}))`;
    // The chosen rows are locked as the claim without groups locks them: skipping any that another
    // transaction holds, and only while still due once locked. Waiting, the claim would take
    // several rows of one group in no set order, and a delete of their parent (a webhook
    // endpoint, whose foreign key cascades to its deliveries) holding some and waiting for the
    // others would deadlock with it.
    const column = tx(group.column);
    return tx`
      with candidates as materialized (
        select id, ${column} as grp, next_attempt_at from ${tx(table)}
        where next_attempt_at <= ${now} and (leased_until is null or leased_until <= ${now})
        order by next_attempt_at limit ${limit * 20}),
      busy as (
        select grp, (select count(*) from ${tx(table)} held
                     where held.${column} = groups.grp and held.leased_until > ${now}) as held
        from (select distinct grp from candidates) groups),
      due as (
        select id, grp, next_attempt_at,
               row_number() over (partition by grp order by next_attempt_at, id) as rank
        from candidates),
      chosen as (
        select due.id from due join busy using (grp)
        where due.rank + busy.held <= ${group.maxInFlight}
        order by due.next_attempt_at limit ${limit}),
      locked as (
        select id from ${tx(table)}
        where id in (select id from chosen)
          and next_attempt_at <= ${now} and (leased_until is null or leased_until <= ${now})
        for update skip locked)
      update ${tx(table)} set leased_until = ${until}, lease_token = ${token}
      where id in (select id from locked)
      returning *`;
  };

  const runOne = async (row: Row) => {
    const abort = new AbortController();
    // Stop the run a little before the lease ends: past it, another claim may start the job.
    const timer = setTimeout(() => abort.abort(new Error("job lease ending")), Math.max(leaseMs - 5000, leaseMs / 2));
    const recordOnce = (record: (tx: TransactionSql) => Promise<void>, finishOptions?: FinishOptions) =>
      answered(() =>
        sql.begin(async (tx) => {
          await finishOptions?.lockFirst?.(tx);
          const [held] = await tx`
            select id from ${tx(table)} where id = ${row.id} and lease_token = ${row.leaseToken} for update`;
          if (!held) return false;
          await record(tx);
          await tx`update ${tx(table)} set leased_until = null, lease_token = null where id = ${row.id}`;
          return true;
        }),
      );
    // The work is done (the webhook sent): its outcome is recorded even if the database is lost
    // meanwhile, by trying again while the lease lasts. Fenced by the token, a second try after
    // a first that did commit records nothing (and answers false).
    const finish = async (record: (tx: TransactionSql) => Promise<void>, finishOptions?: FinishOptions) => {
      for (;;) {
        try {
          return (await recordOnce(record, finishOptions)) as boolean;
        } catch (error) {
          if (!(isConnectionError(error) || timedOut(error)) || abort.signal.aborted) throw error;
          await pause(250);
        }
      }
    };
    let recorded: boolean | undefined;
    running.inc({ table });
    try {
      await options.run({
        row,
        signal: abort.signal,
        finish: async (record, finishOptions) => {
          recorded = await finish(record, finishOptions);
          return recorded;
        },
      });
      if (recorded !== undefined) runs.inc({ table, outcome: recorded ? "recorded" : "fenced" });
    } catch (error) {
      runs.inc({ table, outcome: "failed" });
      logger.warn({ err: error, table, jobId: row.id }, "job failed; it runs again when its lease ends");
    } finally {
      running.dec({ table });
      clearTimeout(timer);
    }
  };

  /** Claims what fits beside the jobs in flight and starts them; answers how many started. */
  const fillOnce = async (): Promise<number> => {
    const room = concurrency - inFlight.size;
    if (room <= 0 || stopped) return 0;
    const rows = await claim(room);
    for (const row of rows) {
      const running: Promise<void> = runOne(row).finally(() => {
        inFlight.delete(running);
        // A finished job frees room, and more may be due.
        onNotify();
      });
      inFlight.add(running);
    }
    return rows.length;
  };
  // One claim at a time per worker: the loop (woken after commits) and drain() take turns, so a
  // drain never misses a job the loop is claiming at that moment.
  let filling: Promise<unknown> = Promise.resolve();
  const fill = (): Promise<number> => {
    const next = filling.then(fillOnce, fillOnce);
    filling = next.catch(() => undefined);
    return next;
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (notified || stopped) return resolve();
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  const onNotify = () => {
    notified = true;
    wake?.();
  };

  // The queue as Prometheus sees it: due jobs and the oldest one's wait, read at each scrape.
  const stopSampling = sampleOnScrape(`jobs ${table}`, async () => {
    const [row] = await sql<{ jobs: number; oldestSeconds: number }[]>`
      select count(*)::int as jobs,
             coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as oldest_seconds
      from ${sql(table)} where next_attempt_at <= now()`;
    due.set({ table }, row?.jobs ?? 0);
    oldestDue.set({ table }, Math.max(0, row?.oldestSeconds ?? 0));
  });

  const stopWaking = onWake(options.schema, table, onNotify);
  const listening = sql.listen(`${options.schema}_${table}`, onNotify).catch((error: unknown) => {
    logger.warn({ err: error, table }, "job worker could not LISTEN; falling back to polling");
    return undefined;
  });

  let failures = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        notified = false;
        await fill();
        failures = 0;
        await sleep(pollMs);
      } catch (error) {
        failures += 1;
        const backoff = Math.min(pollMs * 2 ** failures, 30_000);
        logger.warn({ err: error, table, retryInMs: backoff }, "job worker could not claim; will retry");
        await sleep(backoff);
      }
    }
  })();

  return {
    async drain() {
      let ran = 0;
      for (;;) {
        const started = await fill();
        ran += started;
        if (started === 0 && inFlight.size === 0) return ran;
        if (inFlight.size > 0) await Promise.race(inFlight);
      }
    },
    async stop() {
      stopped = true;
      stopSampling();
      stopWaking();
      onNotify();
      await loop;
      await Promise.allSettled(inFlight);
      await (await listening)?.unlisten();
    },
  };
}
