import { setTimeout as sleep } from "node:timers/promises";
import type { Sql } from "@affiliate/platform";

/**
 * What autovacuum would do, for a server that runs without it. This machine's Postgres has
 * autovacuum off (conf.d/90-ci.conf, so that CI's databases keep still), and a soak on it measured
 * a database nobody vacuums or analyzes: dead row versions outnumbered live ones two to one in the
 * notifier's deliveries, and the statements whose share of Postgres grew fastest read the tables
 * the load fills from statistics taken when they were empty. No production server runs like that.
 *
 * Every `everyMs`, each table of the bench's database past autovacuum's default thresholds
 * (PostgreSQL 15: vacuum after 50 + 20% of its rows changed or 1000 + 20% inserted, analyze after
 * 50 + 10% changed) is vacuumed or analyzed, one table at a time, as autovacuum's one worker per
 * database would. The work is Postgres's, on the same cores, as it would be in production.
 */
export interface AutovacuumStandIn {
  stop(): Promise<AutovacuumWork>;
}

export interface AutovacuumWork {
  /** Whether the stand-in ran: false when the server's own autovacuum is on. */
  ran: boolean;
  vacuums: number;
  analyzes: number;
}

interface TableActivity {
  table: string;
  live: number;
  dead: number;
  insertedSinceVacuum: number;
  modifiedSinceAnalyze: number;
}

const vacuumDue = (t: TableActivity) =>
  t.dead > 50 + 0.2 * t.live || t.insertedSinceVacuum > 1000 + 0.2 * (t.live + t.dead);
const analyzeDue = (t: TableActivity) => t.modifiedSinceAnalyze > 50 + 0.1 * t.live;

export async function startAutovacuumStandIn(sql: Sql, everyMs = 30_000): Promise<AutovacuumStandIn> {
  const [setting] = await sql<{ autovacuum: string }[]>`select current_setting('autovacuum') as autovacuum`;
  if (setting?.autovacuum === "on") {
    return { stop: async () => ({ ran: false, vacuums: 0, analyzes: 0 }) };
  }
  const work: AutovacuumWork = { ran: true, vacuums: 0, analyzes: 0 };
  let running = true;
  const rounds = (async () => {
    while (running) {
      await sleep(everyMs);
      if (!running) break;
      const tables = await sql<TableActivity[]>`
        select format('%I.%I', schemaname, relname) as table, n_live_tup::int as live, n_dead_tup::int as dead,
               n_ins_since_vacuum::int as "insertedSinceVacuum", n_mod_since_analyze::int as "modifiedSinceAnalyze"
        from pg_stat_user_tables`;
      for (const table of tables) {
        if (!running) break;
        const vacuum = vacuumDue(table);
        const analyze = analyzeDue(table);
        if (!vacuum && !analyze) continue;
        // The name comes from the catalog, quoted by format('%I'); VACUUM takes no parameters.
        await sql.unsafe(vacuum ? `vacuum (analyze ${analyze}) ${table.table}` : `analyze ${table.table}`);
        if (vacuum) work.vacuums++;
        if (analyze) work.analyzes++;
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await rounds;
      return work;
    },
  };
}
