import { type JobWorker, type Logger, type Sql, startJobWorker, startPeriodicJob } from "@affiliate/platform";
import { deliverWebhook } from "./domain/deliver-webhook.js";
import { probeFailingEndpoints } from "./domain/probe-failing.js";
import { purgeExpired } from "./domain/retention.js";
import { type Mailer, sendEmail } from "./domain/send-email.js";
import { schema } from "./server.js";
import type { DeliveryJob } from "./store/deliveries.js";
import type { EmailJob } from "./store/emails.js";

export interface Workers {
  deliveries: JobWorker;
  emails: JobWorker;
  /** Runs the recovery probe once now (the periodic job runs it every minute). */
  probe(): Promise<number>;
  stop(): Promise<void>;
}

/** Contract 9b: at most 10 attempts in flight per endpoint, over every replica. */
export const maxInFlightPerEndpoint = 10;

/** The deliveries as a job table: claimed with at most `maxInFlightPerEndpoint` leases per endpoint. */
export const deliveryQueue = {
  table: "deliveries",
  perGroup: { column: "endpoint_id", maxInFlight: maxInFlightPerEndpoint },
} as const;

/**
 * What sends: the delivery and email job workers, the probe of failing endpoints (every minute;
 * each endpoint's own schedule decides whether it is due) and the 30-day retention (hourly).
 */
export function startWorkers(deps: {
  sql: Sql;
  logger: Logger;
  clock: () => Date;
  allowPrivate: boolean;
  mailer: Mailer | undefined;
  concurrency: number;
  pollMs?: number;
  attemptTimeoutMs?: number;
}): Workers {
  const deliverDeps = {
    sql: deps.sql,
    clock: deps.clock,
    allowPrivate: deps.allowPrivate,
    logger: deps.logger,
    ...(deps.attemptTimeoutMs ? { timeoutMs: deps.attemptTimeoutMs } : {}),
  };
  const common = { sql: deps.sql, schema, logger: deps.logger, clock: deps.clock, concurrency: deps.concurrency };
  const deliveries = startJobWorker<DeliveryJob>({
    ...common,
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    ...deliveryQueue,
    run: (job) => deliverWebhook(deliverDeps, job),
  });
  const emails = startJobWorker<EmailJob>({
    ...common,
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    table: "emails",
    run: (job) => sendEmail({ sql: deps.sql, clock: deps.clock, logger: deps.logger, mailer: deps.mailer }, job),
  });
  const probe = () => probeFailingEndpoints(deliverDeps);
  const stopProbe = startPeriodicJob(deps.logger, "webhook probe", 60_000, probe);
  const stopRetention = startPeriodicJob(deps.logger, "delivery retention", 3600_000, async () => {
    const purged = await purgeExpired(deps.sql, deps.clock());
    if (purged.deliveries + purged.emails > 0) deps.logger.info(purged, "expired deliveries and emails deleted");
  });
  return {
    deliveries,
    emails,
    probe,
    async stop() {
      await Promise.all([stopProbe(), stopRetention(), deliveries.stop(), emails.stop()]);
    },
  };
}
