import { readFile } from "node:fs/promises";

/** Clock ticks per second of /proc/<pid>/stat times; 100 on every Linux this runs on. */
const ticksPerSecond = 100;

/** User + system CPU seconds a process has used so far, or undefined when it is gone. */
export async function cpuSeconds(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const user = Number(fields[11]);
    const system = Number(fields[12]);
    return (user + system) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** The processes to meter, by label; a function because the set can change (database backends). */
export type ProcessSet = () => Promise<Record<string, number[]>>;

/** CPU seconds so far of each pid, by label. */
export type CpuSnapshot = Map<string, Map<number, number>>;

/** Every metered process's CPU seconds now; two of them give an interval's use (`cpuBetween`). */
export async function cpuSnapshot(processes: ProcessSet): Promise<CpuSnapshot> {
  const result: CpuSnapshot = new Map();
  for (const [label, pids] of Object.entries(await processes())) {
    const times = new Map<number, number>();
    for (const pid of pids) {
      const seconds = await cpuSeconds(pid);
      if (seconds !== undefined) times.set(pid, seconds);
    }
    result.set(label, times);
  }
  return result;
}

/** CPU seconds each labelled group of processes used while `work` ran (see `cpuBetween`). */
export async function meterCpu<T>(
  processes: ProcessSet,
  work: () => Promise<T>,
): Promise<{ value: T; cpuSeconds: Record<string, number> }> {
  const before = await cpuSnapshot(processes);
  const value = await work();
  return { value, cpuSeconds: cpuBetween(before, await cpuSnapshot(processes)) };
}

/**
 * CPU seconds each labelled group used between two snapshots. A process that appeared meanwhile
 * (a new pool connection) counts in full; one that vanished meanwhile is missed.
 */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const cpu: Record<string, number> = {};
  for (const [label, times] of after) {
    let total = 0;
    for (const [pid, seconds] of times) total += seconds - (before.get(label)?.get(pid) ?? 0);
    cpu[label] = total;
  }
  return cpu;
}
