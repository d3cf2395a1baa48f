import { setTimeout as sleep } from "node:timers/promises";
import type { Sql } from "@affiliate/platform";

/**
 * A sampling profile of Postgres by statement, for a database without pg_stat_statements (not
 * preloaded on this machine, and loading it needs a restart of the shared server): every
 * `everyMs` it reads which statements the bench database's client backends are running, and
 * counts each one per minute of the run. A statement seen in n samples of a minute kept on
 * average n / samples backends busy in it, waiting on locks or I/O included: where Postgres's
 * time goes, and which statement's share grows as the data does.
 */
export interface StatementSampler {
  stop(): Promise<StatementProfile>;
}

export interface StatementProfile {
  /** Samples taken in each minute. */
  samplesPerMinute: number[];
  /** Per statement (its first words), the samples that found it active, per minute. */
  byStatement: Map<string, number[]>;
}

/** The first ~90 characters of a statement with its whitespace folded: enough to tell them apart. */
export function statementKey(query: string): string {
  return query.replace(/\s+/g, " ").trim().slice(0, 90);
}

export function startStatementSampler(sql: Sql, minutes: number, startedAt: number, everyMs = 100): StatementSampler {
  const profile: StatementProfile = {
    samplesPerMinute: Array.from({ length: minutes }, () => 0),
    byStatement: new Map(),
  };
  let running = true;
  const sampling = (async () => {
    while (running) {
      const minute = Math.floor((performance.now() - startedAt) / 60_000);
      if (minute >= minutes) break;
      const rows = await sql<{ query: string }[]>`
        select query from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend'
          and state = 'active' and pid <> pg_backend_pid()`;
      profile.samplesPerMinute[minute] = (profile.samplesPerMinute[minute] ?? 0) + 1;
      for (const { query } of rows) {
        const key = statementKey(query);
        const counts = profile.byStatement.get(key) ?? Array.from({ length: minutes }, () => 0);
        counts[minute] = (counts[minute] ?? 0) + 1;
        profile.byStatement.set(key, counts);
      }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await sampling;
      return profile;
    },
  };
}

/**
 * The statements that kept the most backends busy, as busy backends on average in the first and
 * the last two minutes (or the first and last minute of a shorter run), largest at the end first.
 */
export function topStatements(
  profile: StatementProfile,
  count = 10,
): { statement: string; early: number; late: number }[] {
  const minutes = profile.samplesPerMinute.length;
  const span = minutes >= 4 ? 2 : 1;
  const early = [...Array(Math.min(span, minutes)).keys()];
  const late = [...Array(Math.min(span, minutes)).keys()].map((i) => minutes - 1 - i);
  const average = (counts: number[], which: number[]) => {
    const samples = which.reduce((sum, m) => sum + (profile.samplesPerMinute[m] ?? 0), 0);
    return samples === 0 ? 0 : which.reduce((sum, m) => sum + (counts[m] ?? 0), 0) / samples;
  };
  return [...profile.byStatement]
    .map(([statement, counts]) => ({ statement, early: average(counts, early), late: average(counts, late) }))
    .sort((a, b) => b.late - a.late)
    .slice(0, count);
}
