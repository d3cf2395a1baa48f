import type { Queryable } from "@affiliate/platform";

/**
 * Claims a scheduled run when the last one is at least `intervalMs` old: one conditional update,
 * so among replicas ticking at once exactly one wins, and a restart keeps the schedule.
 */
export async function claimScheduledRun(sql: Queryable, name: string, now: Date, intervalMs: number): Promise<boolean> {
  const due = new Date(now.getTime() - intervalMs);
  const rows = await sql`
    update schedule_runs set last_run_at = ${now}
    where name = ${name} and last_run_at <= ${due}
    returning name`;
  return rows.length > 0;
}
