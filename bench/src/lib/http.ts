import http from "node:http";
import { meterCpu, type ProcessSet } from "./cpu.js";

export interface TimedResponse {
  status: number;
  body: string;
  /** From sending the request to the last byte of the body. */
  ms: number;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * A minimal HTTP/1.1 client on one kept-alive socket. Sequential latency is measured with it
 * rather than fetch: undici's own per-request work (~0.5-1 ms here) would blur the few
 * milliseconds being compared, and one reused socket is what a single API client looks like.
 */
export class HttpClient {
  private readonly agent: http.Agent;
  private readonly base: URL;

  /** `maxSockets` above 1 for many clients at once (an open-loop load); requests beyond it queue. */
  constructor(baseUrl: string, maxSockets = 1) {
    this.base = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(path: string, options: RequestOptions = {}): Promise<TimedResponse> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { ...options.headers };
    if (payload !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const req = http.request(
        {
          host: this.base.hostname,
          port: this.base.port,
          path,
          method: options.method ?? "GET",
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString("utf8"),
              ms: performance.now() - started,
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  /** The request's JSON body; throws with the status and body when the status is not `expected`. */
  async json<T>(path: string, options: RequestOptions = {}, expected = 200): Promise<T> {
    const res = await this.request(path, options);
    if (res.status !== expected) {
      throw new Error(`${options.method ?? "GET"} ${path}: expected ${expected}, got ${res.status}: ${res.body}`);
    }
    return JSON.parse(res.body) as T;
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface TimedTarget {
  name: string;
  path: string;
  options?: RequestOptions;
}

/**
 * Times `count` sequential requests per target, alternating the targets request by request
 * (A B A B …) after `warmup` unrecorded rounds, so that whatever else loads the machine
 * meanwhile weighs on every target alike. Non-2xx answers are counted, not thrown: the bench
 * reports, it does not judge.
 */
export async function interleavedLatencies(
  client: HttpClient,
  targets: TimedTarget[],
  count: number,
  warmup = 10,
): Promise<Record<string, { ms: number[]; non2xx: number }>> {
  const results = Object.fromEntries(targets.map((t) => [t.name, { ms: [] as number[], non2xx: 0 }]));
  for (let i = 0; i < warmup + count; i++) {
    for (const target of targets) {
      const res = await client.request(target.path, target.options);
      const result = results[target.name];
      if (i < warmup || !result) continue;
      if (res.status < 200 || res.status > 299) result.non2xx++;
      result.ms.push(res.ms);
    }
  }
  return results;
}

/**
 * CPU milliseconds per request of each process group over `count` sequential requests to one
 * target: where a single request's time goes when nothing queues.
 */
export async function meteredRequests(
  client: HttpClient,
  target: TimedTarget,
  count: number,
  processes: ProcessSet,
): Promise<{ cpuMsPerRequest: Record<string, number>; coresBusy: number }> {
  const started = performance.now();
  const { cpuSeconds } = await meterCpu(processes, async () => {
    for (let i = 0; i < count; i++) await client.request(target.path, target.options);
  });
  const wallSeconds = (performance.now() - started) / 1000;
  const total = Object.values(cpuSeconds).reduce((sum, seconds) => sum + seconds, 0);
  return {
    cpuMsPerRequest: Object.fromEntries(
      Object.entries(cpuSeconds).map(([label, seconds]) => [label, (seconds * 1000) / count]),
    ),
    coresBusy: total / Math.max(0.001, wallSeconds),
  };
}
