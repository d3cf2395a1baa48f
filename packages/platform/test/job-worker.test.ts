import { createTestDatabase, parseMetrics, sumOf, type TestDatabase } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";
import { type JobRow, startJobWorker } from "../src/job-worker.js";
import { collectMetrics } from "../src/metrics.js";
import { migrate } from "../src/migrate.js";
import { wakeAfterCommit } from "../src/wakeups.js";
import { eventually, migrationsDirectory, silentLogger } from "./helpers.js";

interface Task extends JobRow {
  grp: string;
  done: boolean;
}

let database: TestDatabase;
let sql: Sql;
const schema = "jobs_test";

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema, applicationName: "job-worker-test" });
  const dir = await migrationsDirectory({
    "0001_tasks.sql": `
      create table tasks (id text primary key, grp text not null, done boolean not null default false,
        next_attempt_at timestamptz, leased_until timestamptz, lease_token text);
      create trigger tasks_due after insert or update of next_attempt_at on tasks
        for each statement execute function job_notify();
      -- As the services' job tables are since issue 28: no trigger, woken after the commit.
      create table quiet_tasks (id text primary key, next_attempt_at timestamptz, leased_until timestamptz,
        lease_token text);`,
  });
  await migrate(sql, schema, dir.path);
  await dir.remove();
});
afterAll(async () => {
  await sql.end();
  await database.drop();
});

describe("startJobWorker", () => {
  it("runs each due job once, never more than the group's cap at once, and is woken by NOTIFY", async () => {
    await sql`delete from tasks`;
    let running = 0;
    let most = 0;
    const runs = new Map<string, number>();
    const release: (() => void)[] = [];
    const worker = startJobWorker<Task>({
      sql,
      schema,
      table: "tasks",
      logger: silentLogger,
      concurrency: 20,
      perGroup: { column: "grp", maxInFlight: 3 },
      pollMs: 60_000,
      async run(job) {
        running += 1;
        most = Math.max(most, running);
        runs.set(job.row.id, (runs.get(job.row.id) ?? 0) + 1);
        await new Promise<void>((resolve) => release.push(resolve));
        running -= 1;
        await job.finish(async (tx) => {
          await tx`update tasks set done = true, next_attempt_at = null where id = ${job.row.id}`;
        });
      },
    });
    await sql`insert into tasks (id, grp, next_attempt_at)
              select 'task' || i, 'one', now() from generate_series(1, 10) as i`;
    // Woken by the insert (the poll is a minute away); the cap holds three at a time.
    await eventually("three running", () => running === 3);
    for (let round = 0; round < 10 && release.length > 0; round++) {
      while (release.length > 0) release.shift()?.();
      await eventually("the next ones", async () => {
        const [left] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where not done`;
        return left?.n === 0 || release.length > 0 || running === 0;
      });
    }
    await eventually("all done", async () => {
      while (release.length > 0) release.shift()?.();
      const [left] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where not done`;
      return left?.n === 0;
    });
    await worker.stop();
    expect(most).toBe(3);
    expect([...runs.values()]).toEqual(Array(10).fill(1));
  });

  it("is woken after the commit of a transaction that made a job due, with no NOTIFY", async () => {
    const ran: string[] = [];
    const worker = startJobWorker<JobRow>({
      sql,
      schema,
      table: "quiet_tasks",
      logger: silentLogger,
      // A minute between polls: a job that runs within the wait below was woken by the commit.
      pollMs: 60_000,
      async run(job) {
        ran.push(job.row.id);
        await job.finish(async (tx) => {
          await tx`update quiet_tasks set next_attempt_at = null where id = ${job.row.id}`;
        });
      },
    });
    try {
      // The worker's first pass finds nothing; after it, the worker sleeps.
      await eventually("the first pass over", async () => {
        const rows = await sql`
          select 1 from pg_stat_activity
          where datname = current_database() and query ilike ${`listen%${schema}_quiet_tasks%`}`;
        return rows.length > 0;
      });
      await sql.begin(async (tx) => {
        await tx`insert into quiet_tasks (id, next_attempt_at) values ('woken', now())`;
        wakeAfterCommit("quiet_tasks");
      });
      await eventually("the job run", () => ran.includes("woken"), { timeoutMs: 20_000 });
      expect(ran).toEqual(["woken"]);
    } finally {
      await worker.stop();
    }
  });

  it("a claim whose lease ran out records nothing; the next claim runs the job", async () => {
    await sql`delete from tasks`;
    let now = new Date("2026-01-01T00:00:00Z");
    const finished: boolean[] = [];
    let first = true;
    const worker = startJobWorker<Task>({
      sql,
      schema,
      table: "tasks",
      logger: silentLogger,
      leaseMs: 10_000,
      pollMs: 60_000,
      clock: () => now,
      async run(job) {
        if (first) {
          first = false;
          // The lease ended while this run was still going, and another claim took the job.
          const [taken] = await sql`
            update tasks set lease_token = 'another-claim', leased_until = ${new Date(now.getTime() + 20_000)}
            where id = ${job.row.id} returning id`;
          expect(taken).toBeDefined();
        }
        finished.push(
          await job.finish(async (tx) => {
            await tx`update tasks set done = true, next_attempt_at = null where id = ${job.row.id}`;
          }),
        );
      },
    });
    await sql`insert into tasks (id, grp, next_attempt_at) values ('late', 'g', ${now})`;
    await worker.drain();
    expect(finished).toEqual([false]);
    const [row] = await sql<{ done: boolean }[]>`select done from tasks where id = 'late'`;
    expect(row?.done).toBe(false);
    // Nothing runs while the other claim's lease holds; after it ends, the job runs again.
    await worker.drain();
    expect(finished).toEqual([false]);
    now = new Date(now.getTime() + 20_001);
    await worker.drain();
    expect(finished).toEqual([false, true]);
    await worker.stop();
  });

  it("lockFirst takes a parent's row before the job's: a delete cascading from the parent waits, never deadlocks", async () => {
    await sql`create table parents (id text primary key, touched integer not null default 0)`;
    await sql`create table children (id text primary key, parent_id text not null references parents (id) on delete cascade,
      next_attempt_at timestamptz, leased_until timestamptz, lease_token text)`;
    await sql`insert into parents (id) values ('p1')`;
    await sql`insert into children (id, parent_id, next_attempt_at) values ('c1', 'p1', now())`;
    let deleting: Promise<unknown> | undefined;
    let recorded: boolean | undefined;
    const worker = startJobWorker<JobRow>({
      sql,
      schema,
      table: "children",
      logger: silentLogger,
      pollMs: 60_000,
      async run(job) {
        recorded = await job.finish(
          async (tx) => {
            // The parent's delete arrives while the finish holds the parent and the job: it waits
            // on the parent's row. Had the finish locked the job first and the parent only now,
            // the delete would hold the parent and wait on the job, and this update on it: a cycle.
            deleting = sql`delete from parents where id = 'p1'`.execute();
            await eventually("the delete waits on the parent's row", async () => {
              const waiting = await sql`
                select 1 from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock' and query like 'delete from parents%'`;
              return waiting.length > 0;
            });
            await tx`update parents set touched = touched + 1 where id = 'p1'`;
            await tx`update children set next_attempt_at = null where id = ${job.row.id}`;
          },
          { lockFirst: (tx) => tx`select id from parents where id = 'p1' for no key update`.then(() => undefined) },
        );
      },
    });
    await worker.drain();
    await worker.stop();
    await deleting;
    expect(recorded).toBe(true);
    expect(await sql`select id from parents`).toEqual([]);
    expect(await sql`select id from children`).toEqual([]);
  });

  it("shows the queue to Prometheus: due jobs, the oldest one's wait, runs in flight and their outcomes", async () => {
    await sql`delete from tasks`;
    const scrape = async () => parseMetrics(await collectMetrics());
    const before = await scrape();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = 0;
    const worker = startJobWorker<Task>({
      sql,
      schema,
      table: "tasks",
      logger: silentLogger,
      pollMs: 60_000,
      leaseMs: 600_000,
      async run(job) {
        started += 1;
        await gate;
        if (job.row.id === "broken") throw new Error("receiver down");
        await job.finish(async (tx) => {
          await tx`update tasks set done = true, next_attempt_at = null where id = ${job.row.id}`;
        });
      },
    });
    try {
      await sql`
        insert into tasks (id, grp, next_attempt_at) values
          ('a', 'g', now() - interval '90 seconds'), ('b', 'g', now() - interval '30 seconds'),
          ('broken', 'g', now() - interval '10 seconds'), ('later', 'g', now() + interval '1 hour')`;
      await eventually("three jobs running", () => started === 3);
      const busy = await scrape();
      expect(sumOf(busy, "jobs_due", { table: "tasks" })).toBe(3);
      expect(sumOf(busy, "jobs_oldest_due_age_seconds", { table: "tasks" })).toBeGreaterThanOrEqual(90);
      expect(sumOf(busy, "jobs_in_flight", { table: "tasks" })).toBe(3);

      release();
      const done = await eventually("the runs ended", async () => {
        const samples = await scrape();
        return sumOf(samples, "jobs_in_flight", { table: "tasks" }) === 0 ? samples : undefined;
      });
      const grew = (outcome: string) =>
        sumOf(done, "jobs_runs_total", { table: "tasks", outcome }) -
        sumOf(before, "jobs_runs_total", { table: "tasks", outcome });
      expect(grew("recorded")).toBe(2);
      expect(grew("failed")).toBe(1);
      // The failed job is still due (claimed again when its lease ends); the later one is not yet.
      expect(sumOf(done, "jobs_due", { table: "tasks" })).toBe(1);
    } finally {
      release();
      await worker.stop();
    }
  });
});
