import { readFile } from "node:fs/promises";

/** Resident set size of a process in MB from /proc (Linux only), or undefined when it is gone. */
export async function residentMb(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** RSS of every named process. */
export async function residentByName(pids: Record<string, number>): Promise<Record<string, number | undefined>> {
  const entries = await Promise.all(Object.entries(pids).map(async ([name, pid]) => [name, await residentMb(pid)]));
  return Object.fromEntries(entries);
}
