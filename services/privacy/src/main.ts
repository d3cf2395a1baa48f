/**
 * The privacy process: config -> connections -> RPC server, outbox relay, the resume job for
 * erasures whose runner is gone -> close on SIGTERM.
 */

import { startPeriodicJob, startServiceProcess } from "@affiliate/platform";
import { loadPrivacyConfig } from "./config.js";
import { EmailKeys } from "./domain/email-keys.js";
import { resumeAbandonedErasures } from "./domain/erase-customer.js";
import { configuredOwners } from "./rpc/owners.js";
import { routes, schema } from "./server.js";

const config = loadPrivacyConfig();
const { logger, sql, serve } = await startServiceProcess({ name: "privacy", config, schema, publishes: true });

const { owners } = configuredOwners(
  {
    ledger: config.LEDGER_URL,
    partners: config.PARTNERS_URL,
    notifier: config.NOTIFIER_URL,
    integrations: config.INTEGRATIONS_URL,
  },
  config.OWNER_TIMEOUT_MS,
);
logger.info({ owners: owners.map((owner) => owner.name) }, "erasure owners");
const deps = { sql, owners, keys: new EmailKeys(config.ERASURE_HASH_KEY), leaseMs: config.ERASURE_LEASE_MS };

const stopResume = startPeriodicJob(logger, "erasure resume", config.ERASURE_RESUME_INTERVAL_MS, async () => {
  const completed = await resumeAbandonedErasures(deps, (erasureId, error) =>
    logger.warn({ err: error, erasureId }, "erasure still not finished; will retry"),
  );
  if (completed > 0) logger.info({ completed }, "resumed erasures completed");
});

await serve({ routes: routes({ ...deps, logger }), background: [["erasure resume", stopResume]] });
