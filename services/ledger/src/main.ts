/**
 * The ledger process: config -> connections -> RPC server, outbox relay, hold sweep, key purge,
 * payout-event consumers -> close on SIGTERM.
 */

import {
  connectNats,
  createRpcTransport,
  PageTokens,
  startPeriodicJob,
  startServiceProcess,
} from "@affiliate/platform";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadLedgerConfig } from "./config.js";
import { approveDueCommissions } from "./domain/approve-due-commissions.js";
import { deleteUnreachableHours, foldRollupDeltas } from "./domain/compact-rollups.js";
import { purgeExpiredKeys } from "./domain/idempotency.js";
import { followPartnersEvents } from "./events/partners-follower.js";
import { consumePayoutEvents } from "./events/payout-events.js";
import { CachedPartnersDirectory } from "./rpc/partners-directory.js";
import { routes, schema } from "./server.js";

const config = loadLedgerConfig();
const { logger, sql, nats, jsm, serve } = await startServiceProcess({
  name: "ledger",
  config,
  schema,
  publishes: true,
  consumes: ["payouts"],
});

const partners = new CachedPartnersDirectory(createClient(PartnersService, createRpcTransport(config.PARTNERS_URL)), {
  ttlMs: config.ATTRIBUTION_CACHE_TTL_MS,
  maxEntries: 50_000,
});
// Its own connection: the follow reports itself not-following on a disconnect and follows afresh
// after a reconnect, and closes the connection on stop.
const following = followPartnersEvents({
  directory: partners,
  connect: () => connectNats(config.NATS_URL, "ledger-partners-events"),
  namespace: config.EVENTS_NAMESPACE,
  logger,
});

const stopSweep = startPeriodicJob(logger, "hold sweep", config.HOLD_SWEEP_INTERVAL_MS, async () => {
  const approved = await approveDueCommissions(sql, new Date());
  if (approved > 0) logger.info({ approved }, "hold sweep approved commissions");
});

// Writers insert rollup deltas (no hot rows); this folds them into the rollups, so readers, who sum
// both, find few deltas to read. One replica at a time (the others find the lock held and skip).
const stopFolding = startPeriodicJob(logger, "rollup delta fold", config.ROLLUP_FOLD_INTERVAL_MS, () =>
  foldRollupDeltas(sql),
);

// The delta tables lose every row within a fold or two: vacuumed often, their dead rows never pile
// up in front of the folds and reads, even where autovacuum is off (autovacuum also vacuums them,
// with the thresholds migration 0010 gives them).
const stopDeltaVacuum = startPeriodicJob(logger, "rollup delta vacuum", 10_000, () =>
  sql.unsafe("vacuum activity_deltas, partnership_deltas"),
);

// Hourly: hours no stats window reaches deleted, so the hourly rollups stay bounded.
const stopCompaction = startPeriodicJob(logger, "rollup compaction", 60 * 60 * 1000, async () => {
  const deleted = await deleteUnreachableHours(sql, new Date());
  if (deleted > 0) logger.info({ deleted }, "unreachable hourly rollups deleted");
});

// Hourly: expired idempotency keys (older than 30 days) go, so a key can be used again.
const stopKeyPurge = startPeriodicJob(logger, "idempotency key purge", 60 * 60 * 1000, async () => {
  const keys = await purgeExpiredKeys(sql);
  if (keys > 0) logger.info({ keys }, "expired idempotency keys purged");
});

const payoutEvents = await consumePayoutEvents({
  sql,
  js: nats.jetstream(),
  jsm,
  namespace: config.EVENTS_NAMESPACE,
  logger,
});

await serve({
  routes: routes({ sql, partners, pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET), clock: () => new Date() }),
  background: [
    ["hold sweep", stopSweep],
    ["idempotency key purge", stopKeyPurge],
    ["rollup compaction", stopCompaction],
    ["rollup delta fold", stopFolding],
    ["rollup delta vacuum", stopDeltaVacuum],
    ["payout events", () => Promise.all(payoutEvents.map((consumer) => consumer.stop()))],
    ["partners events", () => following.stop()],
  ],
});
