import { serviceCounter } from "@affiliate/platform";
import { type AttemptOutcome, attemptOutcomes } from "./outbound/post-webhook.js";

/**
 * Webhook attempts of deliveries by outcome: the answer's class or why none
 * came. Served on METRICS_PORT beside the platform's families (the job worker's
 * `jobs_runs_total{table="deliveries"}` counts runs, not what the receivers answered). Every
 * outcome starts at 0, so `rate()` over any of them exists from the start.
 */
export const webhookAttempts = serviceCounter({
  name: "webhook_attempts_total",
  help: "Webhook delivery attempts by outcome: 2xx, 3xx, 4xx, 5xx (answered), timeout, connection_refused, tls, ssrf_refused (the target resolved to a non-public address), other (no answer for another reason).",
  labelNames: ["outcome"],
  initial: attemptOutcomes.map((outcome) => ({ outcome })),
});

export function countAttempt(outcome: AttemptOutcome): void {
  webhookAttempts.inc({ outcome });
}
