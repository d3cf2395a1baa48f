import type { BenchContext } from "../lib/context.js";
import { residentByName } from "../lib/rss.js";
import { printTable } from "../lib/table.js";

export type RssSample = Record<string, number | undefined>;

export interface MemoryResult {
  idleMb: RssSample;
  afterLoadMb: RssSample;
}

/** D, first half: each service's RSS once the mesh is up and nothing has happened yet. */
export async function sampleIdleMemory(ctx: BenchContext): Promise<RssSample> {
  // Let start-up garbage settle (a GC cycle, lazy module loads) before the idle figure.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  return residentByName(ctx.mesh.pids);
}

/** D, second half: RSS right after the load sections, beside the idle figure. */
export async function reportMemory(ctx: BenchContext, idleMb: RssSample): Promise<MemoryResult> {
  const afterLoadMb = await residentByName(ctx.mesh.pids);
  const names = Object.keys({ ...idleMb, ...afterLoadMb });
  const total = (sample: RssSample) => Object.values(sample).reduce<number>((sum, mb) => sum + (mb ?? 0), 0);
  printTable(
    "D. Resident memory (VmRSS) per service, MB",
    ["service", "idle after start-up", "after the load sections", "growth"],
    [
      ...names.map((name) => {
        const idle = idleMb[name];
        const after = afterLoadMb[name];
        return [name, idle, after, idle !== undefined && after !== undefined ? after - idle : undefined];
      }),
      ["total", total(idleMb), total(afterLoadMb), total(afterLoadMb) - total(idleMb)],
    ],
  );
  return { idleMb, afterLoadMb };
}
