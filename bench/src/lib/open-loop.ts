import type { HttpClient, RequestOptions, TimedResponse } from "./http.js";

/** One request an open-loop kind makes. */
export interface OpenLoopRequest {
  path: string;
  options?: RequestOptions;
}

/** One kind of request in a mixed open-loop load. */
export interface OpenLoopKind {
  name: string;
  /** Its share of the requests, relative to the other kinds' weights. */
  weight: number;
  /**
   * The next request of this kind, or undefined when none can be made yet (a refund before any
   * payment was answered): that slot then sends nothing and is counted as skipped.
   */
  next(): OpenLoopRequest | undefined;
  /** Sees every answer of this kind and its request, e.g. to remember the payments a refund may use. */
  answered?(response: TimedResponse, request: OpenLoopRequest): void;
}

/** One request of an open-loop load, answered or not. */
export interface OpenLoopAnswer {
  kind: string;
  /** performance.now() when the schedule said it should be sent. */
  intendedAt: number;
  /** performance.now() when its answer (or its failure) arrived. */
  answeredAt: number;
  /** The HTTP status; 0 when no answer came (the connection failed). */
  status: number;
  /** The answer's body ("" when none came). */
  body: string;
}

export interface OpenLoopOptions {
  /** The client the requests go through; give it as many sockets as requests may be in flight. */
  client: HttpClient;
  ratePerSecond: number;
  durationMs: number;
  kinds: OpenLoopKind[];
  onAnswer(answer: OpenLoopAnswer): void;
}

export interface OpenLoopRun {
  /** performance.now() of the first scheduled request. */
  startedAt: number;
  /** performance.now() once the last request was sent (its answer may come later). */
  lastSentAt: number;
  scheduled: number;
  /** Slots whose kind had no request to make, by kind. */
  skipped: Record<string, number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The kinds in proportion to their weights, evenly interleaved (nginx's smooth weighted round
 * robin): with weights 2 and 1 the order is A B A A B A …, so every minute of a long run gets the
 * same mix and no kind arrives in runs.
 */
function weightedRotation(kinds: readonly OpenLoopKind[]): () => OpenLoopKind {
  const total = kinds.reduce((sum, kind) => sum + kind.weight, 0);
  if (kinds.length === 0 || total <= 0) throw new Error("an open-loop load needs at least one kind with a weight");
  const current = kinds.map(() => 0);
  return () => {
    let best = 0;
    for (let i = 0; i < kinds.length; i++) {
      current[i] = (current[i] ?? 0) + (kinds[i]?.weight ?? 0);
      if ((current[i] ?? 0) > (current[best] ?? 0)) best = i;
    }
    current[best] = (current[best] ?? 0) - total;
    return kinds[best] as OpenLoopKind;
  };
}

/**
 * Sends requests at a fixed rate whatever the answers do (open loop): request i is due at
 * start + i / rate and is sent then, even while earlier ones wait. Latency runs from when the
 * request was due, not from when it could be sent, so a stalled server shows as the queue it
 * causes rather than hiding behind fewer requests (coordinated omission, which a closed loop of
 * connections suffers: each connection waits for its answer before sending the next). Resolves
 * once every request sent has been answered or has failed.
 */
export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopRun> {
  const { client, ratePerSecond, durationMs, onAnswer } = options;
  const nextKind = weightedRotation(options.kinds);
  const total = Math.floor((durationMs / 1000) * ratePerSecond);
  const intervalMs = 1000 / ratePerSecond;
  const skipped: Record<string, number> = {};
  const inFlight = new Set<Promise<void>>();
  const startedAt = performance.now();

  const send = (intendedAt: number) => {
    const kind = nextKind();
    const request = kind.next();
    if (!request) {
      skipped[kind.name] = (skipped[kind.name] ?? 0) + 1;
      return;
    }
    const pending = client.request(request.path, request.options).then(
      (response) => {
        kind.answered?.(response, request);
        onAnswer({
          kind: kind.name,
          intendedAt,
          answeredAt: performance.now(),
          status: response.status,
          body: response.body,
        });
      },
      () => onAnswer({ kind: kind.name, intendedAt, answeredAt: performance.now(), status: 0, body: "" }),
    );
    const tracked = pending.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  let scheduled = 0;
  while (scheduled < total) {
    // Everything due by now goes out at once: a late timer must not lower the rate.
    const due = Math.min(total, Math.floor((performance.now() - startedAt) / intervalMs) + 1);
    for (; scheduled < due; scheduled++) send(startedAt + scheduled * intervalMs);
    if (scheduled < total) await sleep(Math.max(0, startedAt + scheduled * intervalMs - performance.now()));
  }
  const lastSentAt = performance.now();
  while (inFlight.size > 0) await Promise.all([...inFlight]);
  return { startedAt, lastSentAt, scheduled, skipped };
}
