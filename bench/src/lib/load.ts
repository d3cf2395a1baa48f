import autocannon from "autocannon";
import { cpuSeconds, meterCpu, type ProcessSet } from "./cpu.js";
import { summarize } from "./latency.js";

/** One kind of request to put under load. */
export interface LoadCase {
  name: string;
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  /** A fresh JSON body for every request (unique ids); absent for bodiless requests. */
  body?: () => unknown;
  /** Headers of one request on top of `headers`, asked for every request (e.g. a key on some). */
  requestHeaders?: () => Record<string, string> | undefined;
  /**
   * Requests per second offered over all connections (autocannon's overallRate); absent, every
   * connection sends its next request as soon as the last is answered (closed loop, saturation).
   */
  offeredRate?: number;
}

export interface LoadOptions {
  connections: number;
  /** Seconds of load per case, split evenly over the rounds. */
  durationS: number;
  /**
   * Cases alternate in this many rounds (A B A B …) rather than running back to back, so that
   * the other work sharing this machine weighs on every case alike.
   */
  rounds: number;
  /** An unrecorded run of this length per case first, so JIT, pools and caches are warm. */
  warmupS: number;
  /** Processes whose CPU time per request is reported, by label. */
  processes?: ProcessSet;
  /** Where the run's database is sampled for lock waits and deadlocks during each case. */
  database?: DatabaseProbe;
}

/** What the run's database is doing: sampled during load to tell waiting from working. */
export interface DatabaseProbe {
  /**
   * Backends of the run's database running a statement now, how many of them wait on a lock, and
   * what each waits on (`wait_event_type:wait_event`, or "CPU" when it waits on nothing).
   */
  activity(): Promise<{ active: number; lockWaits: number; waits: Record<string, number> }>;
  /** Deadlocks detected in the run's database so far. */
  deadlocks(): Promise<number>;
}

export interface DatabaseFigures {
  /** Average number of backends running a statement. */
  active: number;
  /** Average number of those waiting for a lock (row or transaction): queueing, not working. */
  lockWaits: number;
  /** What the active backends were found doing most often, with shares ("CPU 61%, IO:WALSync 20%"). */
  topWait?: string;
  deadlocks: number;
}

/**
 * The two most frequent of the sampled waits, each with its share of all samples of active
 * backends. Two, because postgres.js pipelines its messages: a backend between a statement's
 * messages is active in `Client:ClientRead`, which often leads and says only "the client is busy".
 */
function topWaitOf(waits: Record<string, number>): string | undefined {
  const total = Object.values(waits).reduce((sum, count) => sum + count, 0);
  const top = Object.entries(waits)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 2)
    .map(([name, count]) => `${name} ${Math.round((100 * count) / total)}%`);
  return top.length > 0 ? top.join(", ") : undefined;
}

function optionalTopWait(waits: Record<string, number>): { topWait?: string } {
  const topWait = topWaitOf(waits);
  return topWait ? { topWait } : {};
}

function addWaits(into: Record<string, number>, from: Record<string, number>): void {
  for (const [name, count] of Object.entries(from)) into[name] = (into[name] ?? 0) + count;
}

export interface LoadResult {
  requestsPerSecond: number;
  /** Latencies of every answer, non-2xx included: a slow error is a slow answer. */
  p50Ms: number;
  p99Ms: number;
  total: number;
  non2xx: number;
  /** Answers by status code, e.g. { "201": 5120, "503": 3 }: says what the non-2xx were. */
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  /** CPU milliseconds per answered request of each metered process group. */
  cpuMsPerRequest: Record<string, number>;
  /** CPU seconds of all metered processes per wall second: 2 means both cores were busy. */
  coresBusy: number;
  database?: DatabaseFigures;
}

interface Round {
  seconds: number;
  latencies: number[];
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
}

/** Pause between cases, and longest wait for the database and the services to go quiet (see `settle`). */
const settleMs = 1000;
const quietTimeoutMs = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const samplingMs = 250;
/**
 * Metered processes together below this share of one core are idle (timers and polls only). An
 * idle mesh is not at zero: the ledger folds rollup deltas every 250 ms, relays and job workers
 * poll every second and NATS clients ping, about 0.1 core in all on a 2-core machine; a
 * threshold at that level is never met, and each settle then waits out its whole timeout.
 */
const idleCores = 0.25;

/** CPU seconds of every metered process per wall second, over one sampling interval. */
async function coresBusyNow(processes: ProcessSet): Promise<number> {
  const pids = Object.values(await processes()).flat();
  const total = async () => {
    let sum = 0;
    for (const pid of pids) sum += (await cpuSeconds(pid)) ?? 0;
    return sum;
  };
  const before = await total();
  await sleep(samplingMs);
  return ((await total()) - before) / (samplingMs / 1000);
}

/**
 * Waits until the work of the previous case is over, so that it is counted against that case
 * and not the next: requests cut off when autocannon stops are still being served (a service
 * keeps a transaction going after its caller gave up), and what the requests set off in the
 * background (the outbox relay, the notifier recording each commission and sending its email,
 * the payouts consumer) runs for a while after the last answer. So: no statement running in
 * the database and the metered processes idle, twice in a row.
 */
async function settle(probe: DatabaseProbe | undefined, processes: ProcessSet | undefined): Promise<void> {
  await sleep(settleMs);
  const deadline = Date.now() + quietTimeoutMs;
  let quietInARow = 0;
  while (quietInARow < 2 && Date.now() < deadline) {
    const databaseQuiet = !probe || (await probe.activity()).active === 0;
    const processesQuiet = !processes || (await coresBusyNow(processes)) < idleCores;
    quietInARow = databaseQuiet && processesQuiet ? quietInARow + 1 : 0;
    if (!processes) await sleep(samplingMs);
  }
}

/**
 * Runs `work` while sampling the database every 250 ms, then lets what `work` left running
 * finish (`settle`) before counting deadlocks: both belong to this case, not the next.
 */
async function sampled<T>(probe: DatabaseProbe | undefined, processes: ProcessSet | undefined, work: () => Promise<T>) {
  if (!probe) {
    const value = await work();
    await settle(probe, processes);
    return { value, samples: 0, active: 0, lockWaits: 0, waits: {}, deadlocks: 0 };
  }
  const deadlocksBefore = await probe.deadlocks();
  let running = true;
  const totals = { samples: 0, active: 0, lockWaits: 0, waits: {} as Record<string, number> };
  const sampler = (async () => {
    while (running) {
      const { active, lockWaits, waits } = await probe.activity();
      totals.samples++;
      totals.active += active;
      totals.lockWaits += lockWaits;
      addWaits(totals.waits, waits);
      await sleep(samplingMs);
    }
  })();
  let value: T;
  try {
    value = await work();
  } finally {
    running = false;
    await sampler;
  }
  await settle(probe, processes);
  return { value, ...totals, deadlocks: (await probe.deadlocks()) - deadlocksBefore };
}

function runOnce(load: LoadCase, connections: number, seconds: number): Promise<Round> {
  const makeBody = load.body;
  const makeHeaders = load.requestHeaders;
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: load.url,
        connections,
        duration: seconds,
        method: load.method ?? "GET",
        ...(load.offeredRate ? { overallRate: load.offeredRate } : {}),
        headers: { ...load.headers, ...(makeBody ? { "content-type": "application/json" } : {}) },
        // setupRequest runs before every request, so each one carries a body (and headers) of its own.
        ...(makeBody || makeHeaders
          ? {
              requests: [
                {
                  setupRequest: (request) => {
                    if (makeBody) request.body = JSON.stringify(makeBody());
                    // A new object: autocannon's request template shares the one it passes in.
                    const extra = makeHeaders?.();
                    if (extra) request.headers = { ...request.headers, ...extra };
                    return request;
                  },
                },
              ],
            }
          : {}),
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          seconds: result.duration,
          latencies,
          statusCodes: Object.fromEntries(
            Object.entries(result.statusCodeStats ?? {}).map(([status, stats]) => [status, stats.count ?? 0]),
          ),
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    // autocannon's own histogram keeps 2xx latencies only; every answer is recorded here.
    instance.on("response", (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  });
}

/**
 * Puts each case under the same load, alternating them over rounds, and reports requests/s,
 * latency percentiles over all rounds, status codes and (when asked) CPU per request.
 */
export async function compareLoads(cases: LoadCase[], options: LoadOptions): Promise<Record<string, LoadResult>> {
  if (options.warmupS > 0) {
    for (const load of cases) {
      await runOnce(load, options.connections, options.warmupS);
      await settle(options.database, options.processes);
    }
  }
  const roundSeconds = Math.max(1, Math.round(options.durationS / options.rounds));
  const rounds = new Map<string, Round[]>(cases.map((load) => [load.name, []]));
  const cpu = new Map<string, Record<string, number>>(cases.map((load) => [load.name, {}]));
  /** Wall seconds of each case's metering windows (its runs plus their settling). */
  const wall = new Map<string, number>();
  const db = new Map(
    cases.map((load) => [
      load.name,
      { samples: 0, active: 0, lockWaits: 0, waits: {} as Record<string, number>, deadlocks: 0 },
    ]),
  );
  for (let round = 0; round < options.rounds; round++) {
    for (const load of cases) {
      const started = performance.now();
      const metered = await meterCpu(options.processes ?? (async () => ({})), () =>
        sampled(options.database, options.processes, () => runOnce(load, options.connections, roundSeconds)),
      );
      wall.set(load.name, (wall.get(load.name) ?? 0) + (performance.now() - started) / 1000);
      const { value: run, ...activity } = metered.value;
      rounds.get(load.name)?.push(run);
      const sums = cpu.get(load.name) ?? {};
      for (const [label, seconds] of Object.entries(metered.cpuSeconds)) sums[label] = (sums[label] ?? 0) + seconds;
      const dbSums = db.get(load.name);
      if (dbSums) {
        dbSums.samples += activity.samples;
        dbSums.active += activity.active;
        dbSums.lockWaits += activity.lockWaits;
        addWaits(dbSums.waits, activity.waits);
        dbSums.deadlocks += activity.deadlocks;
      }
    }
  }
  return Object.fromEntries(
    cases.map((load) => {
      const runs = rounds.get(load.name) ?? [];
      const latencies = runs.flatMap((run) => run.latencies);
      const seconds = runs.reduce((sum, run) => sum + run.seconds, 0);
      const statusCodes: Record<string, number> = {};
      for (const run of runs) {
        for (const [status, count] of Object.entries(run.statusCodes))
          statusCodes[status] = (statusCodes[status] ?? 0) + count;
      }
      const non2xx = Object.entries(statusCodes)
        .filter(([status]) => !status.startsWith("2"))
        .reduce((sum, [, count]) => sum + count, 0);
      const summary = summarize(latencies);
      const cpuMsPerRequest = Object.fromEntries(
        Object.entries(cpu.get(load.name) ?? {}).map(([label, s]) => [
          label,
          (s * 1000) / Math.max(1, latencies.length),
        ]),
      );
      const cpuSeconds = Object.values(cpu.get(load.name) ?? {}).reduce((sum, value) => sum + value, 0);
      const dbSums = db.get(load.name);
      const result: LoadResult = {
        requestsPerSecond: seconds > 0 ? latencies.length / seconds : 0,
        p50Ms: summary.p50,
        p99Ms: summary.p99,
        total: latencies.length,
        non2xx,
        statusCodes,
        errors: runs.reduce((sum, run) => sum + run.errors, 0),
        timeouts: runs.reduce((sum, run) => sum + run.timeouts, 0),
        cpuMsPerRequest,
        coresBusy: cpuSeconds / Math.max(0.001, wall.get(load.name) ?? 0),
        ...(options.database && dbSums
          ? {
              database: {
                active: dbSums.active / Math.max(1, dbSums.samples),
                lockWaits: dbSums.lockWaits / Math.max(1, dbSums.samples),
                ...optionalTopWait(dbSums.waits),
                deadlocks: dbSums.deadlocks,
              },
            }
          : {}),
      };
      return [load.name, result];
    }),
  );
}

/** "3 (500: 2, 409: 1)": the non-2xx count with the statuses behind it. */
export function describeNon2xx(result: LoadResult): string {
  if (result.non2xx === 0) return "0";
  const failing = Object.entries(result.statusCodes).filter(([status]) => !status.startsWith("2"));
  return `${result.non2xx} (${failing.map(([status, count]) => `${status}: ${count}`).join(", ")})`;
}

export interface MeteredWork<T> {
  value: T;
  /** CPU seconds of each metered process group while the work ran and settled. */
  cpuSeconds: Record<string, number>;
  /** Wall seconds of the metering window: the work plus its settling. */
  wallSeconds: number;
  /** CPU seconds of all metered processes per wall second. */
  coresBusy: number;
  database?: DatabaseFigures;
}

/**
 * Meters one piece of work that is not an autocannon run (a single long request): CPU of each
 * process group, and the database sampled for lock waits, until what it started has finished.
 */
export async function meterWork<T>(
  work: () => Promise<T>,
  options: { processes: ProcessSet; database?: DatabaseProbe },
): Promise<MeteredWork<T>> {
  const started = performance.now();
  const metered = await meterCpu(options.processes, () => sampled(options.database, options.processes, work));
  const wallSeconds = (performance.now() - started) / 1000;
  const { value, samples, active, lockWaits, waits, deadlocks } = metered.value;
  const total = Object.values(metered.cpuSeconds).reduce((sum, seconds) => sum + seconds, 0);
  return {
    value,
    cpuSeconds: metered.cpuSeconds,
    wallSeconds,
    coresBusy: total / Math.max(0.001, wallSeconds),
    ...(options.database
      ? {
          database: {
            active: active / Math.max(1, samples),
            lockWaits: lockWaits / Math.max(1, samples),
            ...optionalTopWait(waits),
            deadlocks,
          },
        }
      : {}),
  };
}
