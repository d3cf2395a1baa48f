import {
  type ClaimedJob,
  contextFromHeaders,
  currentTraceHeaders,
  type Logger,
  type Sql,
  type TransactionSql,
  withSpanIn,
  withStoredTrace,
} from "@affiliate/platform";
import { countAttempt } from "../metrics.js";
import { postWebhook } from "../outbound/post-webhook.js";
import { signatureHeaders } from "../outbound/signing.js";
import type { DeliveryJob } from "../store/deliveries.js";
import { payloadText, recordAttempt } from "../store/deliveries.js";
import {
  disableEndpoint,
  failingSinceOf,
  findSigningEndpoint,
  lockEndpoint,
  markAnswering,
  markFailing,
  type SigningEndpoint,
} from "../store/endpoints.js";
import { failingDisablesAfterMs, nextAttemptAt, nextProbeAt } from "./schedule.js";

export interface DeliverDeps {
  sql: Sql;
  clock: () => Date;
  allowPrivate: boolean;
  logger: Logger;
  /** Attempt timeout; contract 9 says 15 s. */
  timeoutMs?: number;
}

/** The secrets that sign an attempt at `at`: the current one, and the previous during its overlap. */
export function signingSecrets(endpoint: SigningEndpoint, at: Date): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretUntil && endpoint.previousSecretUntil > at) {
    secrets.push(endpoint.previousSecret);
  }
  return secrets;
}

/**
 * One signed POST of a stored body: Standard Webhooks headers and the original caller's trace.
 * The POST runs in that trace's context too, so the SDK's HTTP instrumentation (when it covers
 * the request) continues the caller's trace rather than replacing its traceparent.
 */
export function sendSigned(
  deps: DeliverDeps,
  endpoint: SigningEndpoint,
  body: string,
  eventId: string,
  traceHeaders: Record<string, string>,
  signal?: AbortSignal,
) {
  const at = deps.clock();
  const headers = {
    ...traceHeaders,
    ...signatureHeaders(eventId, at, body, signingSecrets(endpoint, at)),
    "user-agent": "affiliate-notifier/1",
  };
  return withStoredTrace(traceHeaders, () =>
    postWebhook(endpoint.url, body, headers, {
      allowPrivate: deps.allowPrivate,
      ...(signal ? { signal } : {}),
      ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
    }),
  );
}

/**
 * One attempt of a claimed delivery (the job worker's run): sign, POST, and record the attempt
 * with the delivery's next state. A 2xx succeeds; 410 disables the endpoint (`gone`); anything
 * else is retried on the contract's schedule, and an endpoint with no success for 5 days is
 * disabled (`failing`) and probed from then on.
 */
export function deliverWebhook(deps: DeliverDeps, job: ClaimedJob<DeliveryJob>): Promise<void> {
  const delivery = job.row;
  // The attempt continues the trace of the API call that caused the event (stored with the
  // delivery), so the receiver's traceparent leads back to that call.
  const attributes = {
    "affiliate.delivery.id": delivery.id,
    "affiliate.webhook.id": delivery.endpointId,
    "affiliate.delivery.attempt": delivery.attempts + 1,
  };
  return withSpanIn(contextFromHeaders(delivery.traceHeaders), "deliver webhook", { attributes }, () =>
    attemptDelivery(deps, job),
  );
}

async function attemptDelivery(deps: DeliverDeps, job: ClaimedJob<DeliveryJob>): Promise<void> {
  const delivery = job.row;
  const endpoint = await findSigningEndpoint(deps.sql, delivery.endpointId);
  const body = await payloadText(deps.sql, delivery.id);
  if (!endpoint || body === undefined) return; // deleted with its deliveries meanwhile
  // This attempt's span when tracing is on; the stored context when this process traces nothing.
  const traceHeaders = { ...delivery.traceHeaders, ...currentTraceHeaders() };
  const result = await sendSigned(deps, endpoint, body, delivery.eventId, traceHeaders, job.signal);
  const now = deps.clock();
  const attempt = {
    attemptedAt: now,
    statusCode: result.statusCode ?? null,
    durationMs: result.durationMs,
    error: result.error ?? "",
  };
  countAttempt(result.outcome);
  const succeeded = result.outcome === "2xx";
  // The endpoint's row first, always (the lock order, store/endpoints.ts). What the finish writes
  // beside its delivery decides how: a failure writes the failing mark (and may disable it), a
  // success ends a failing streak, both FOR NO KEY UPDATE. A success of an endpoint that is not
  // failing writes only its delivery, yet updates it twice (the record, then the lease's
  // release), and Postgres checks the foreign key on the second: FOR KEY SHARE, which finishes
  // of one endpoint share, taken here before the delivery's row rather than by that check after
  // it (a delete of the endpoint met that order head-on: deadlock, and the delete's 500).
  let endsStreak = false;
  const lockFirst = async (tx: TransactionSql) => {
    endsStreak = succeeded && (await failingSinceOf(tx, endpoint.id)) !== null;
    await lockEndpoint(tx, endpoint.id, !succeeded || endsStreak ? "change" : "keep");
  };
  // Set by the recording below, for the log line: when the failed delivery is attempted again
  // (null: failed for good), and whether the endpoint was disabled. Declared wide (`as`): set in
  // a callback, so the reads after it must not be narrowed to the initial value.
  let retryAt = null as Date | null;
  let disabled = undefined as "gone" | "failing" | undefined;
  const recorded = await job.finish(
    async (tx) => {
      if (succeeded) {
        await recordAttempt(tx, delivery.id, attempt, { status: "succeeded", nextAttemptAt: null });
        if (endsStreak) await markAnswering(tx, endpoint.id);
        return;
      }
      if (result.statusCode === 410) {
        disabled = "gone";
        await recordAttempt(tx, delivery.id, attempt, { status: "failed", nextAttemptAt: null });
        await disableEndpoint(tx, endpoint.id, "gone", now, null);
        return;
      }
      const failing = await markFailing(tx, endpoint.id, now);
      if (failing?.enabled && now.getTime() - failing.failingSince.getTime() >= failingDisablesAfterMs) {
        // This delivery fails with the endpoint's others (disableEndpoint passes over it: leased).
        disabled = "failing";
        await recordAttempt(tx, delivery.id, attempt, { status: "failed", nextAttemptAt: null });
        await disableEndpoint(tx, endpoint.id, "failing", now, nextProbeAt(now, now));
        return;
      }
      retryAt = nextAttemptAt(now, delivery.attempts + 1, result.retryAfterMs);
      await recordAttempt(tx, delivery.id, attempt, {
        status: retryAt ? "pending" : "failed",
        nextAttemptAt: retryAt,
      });
    },
    { lockFirst },
  );
  if (succeeded) return;
  // One line per failed attempt, for the operator: ids, what happened, what comes next. Never the
  // payload, a secret or the URL (its query may carry the receiver's token).
  deps.logger.warn(
    {
      webhookId: endpoint.id,
      deliveryId: delivery.id,
      attempt: delivery.attempts + 1,
      outcome: result.outcome,
      statusCode: result.statusCode ?? null,
      error: result.error ?? null,
      nextAttemptAt: recorded ? (retryAt?.toISOString() ?? null) : null,
      ...(disabled ? { endpointDisabled: disabled } : {}),
      ...(recorded ? {} : { recorded: false }),
    },
    recorded
      ? "webhook attempt failed"
      : "webhook attempt failed; not recorded (the delivery was deleted or claimed again meanwhile)",
  );
}
