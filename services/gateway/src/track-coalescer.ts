import type { LedgerService, TrackBatchResult, TrackRequestSchema } from "@affiliate/proto/ledger";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { context, propagation, ROOT_CONTEXT, type Span, trace } from "@opentelemetry/api";

const tracer = trace.getTracer("@affiliate/gateway");

export type TrackRequestInit = MessageInitShape<typeof TrackRequestSchema>;

export interface CoalescerOptions {
  /** The longest an event waits for others before its batch is sent. */
  maxWaitMs: number;
  /** A batch is sent as soon as it holds this many events (at most the ledger's 500). */
  maxEvents: number;
}

interface Waiting {
  request: TrackRequestInit;
  /** The span of the HTTP request the event came with, if it is traced. */
  span: Span | undefined;
  resolve: (result: TrackBatchResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers concurrent single events into one TrackBatch call: an event waits at most `maxWaitMs`
 * for others, or less when `maxEvents` have arrived. Each caller gets its own event's outcome
 * (the Track response, or the error Track would have given), so one bad event affects no other;
 * a failure of the call itself (the ledger unreachable, the deadline passed) is every caller's
 * answer, and means none of the batch was recorded (one transaction).
 *
 * A batch's events may be of several products and modes: the ledger keeps each event's product.
 * Their order in the batch is their arrival order, which is all that concurrent requests have.
 *
 * The call serves many requests, so it is traced in a trace of its own whose span links to each
 * request's span, and each request's span names that trace (`affiliate.track_batch.trace_id`):
 * from a request's trace one finds the ledger's work for it, and back.
 */
export class TrackCoalescer {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ledger: Client<typeof LedgerService>,
    private readonly options: CoalescerOptions,
  ) {}

  /** Records one event in the next batch; resolves with that event's own outcome. */
  track(request: TrackRequestInit): Promise<TrackBatchResult> {
    return new Promise((resolve, reject) => {
      // The event carries its request's trace, so what it causes (commission.created, webhooks)
      // continues the request's trace rather than the shared call's.
      const traceContext: Record<string, string> = {};
      propagation.inject(context.active(), traceContext);
      this.waiting.push({ request: { ...request, traceContext }, span: trace.getActiveSpan(), resolve, reject });
      if (this.waiting.length >= this.options.maxEvents) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.maxWaitMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    const links = batch.flatMap((w) => (w.span ? [{ context: w.span.spanContext() }] : []));
    context.with(ROOT_CONTEXT, () =>
      tracer.startActiveSpan(
        "coalesced TrackBatch",
        { links, attributes: { "affiliate.track_batch.events": batch.length } },
        (span) => {
          for (const waiting of batch) {
            waiting.span?.setAttribute("affiliate.track_batch.trace_id", span.spanContext().traceId);
          }
          void this.send(batch).finally(() => span.end());
        },
      ),
    );
  }

  /** One TrackBatch call; each waiting request settles with its own result or the call's error. */
  private async send(batch: Waiting[]): Promise<void> {
    try {
      const { results } = await this.ledger.trackBatch({ events: batch.map((w) => w.request) });
      if (results.length !== batch.length) {
        throw new Error(`TrackBatch answered ${results.length} results for ${batch.length} events`);
      }
      for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as TrackBatchResult);
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}
