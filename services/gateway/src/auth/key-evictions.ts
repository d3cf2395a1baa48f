import { setTimeout as sleep } from "node:timers/promises";
import { followEvents, type Logger, type NatsConnection, streamName } from "@affiliate/platform";
import { ProductKeysRotatedSchema } from "@affiliate/proto/partners";
import { fromBinary } from "@bufbuild/protobuf";
import { Events } from "nats";
import type { KeyCache } from "./key-cache.js";

export const keysRotatedSubject = "partners.product.keys_rotated";

/** Evicts the rotated product's keys. An undecodable message still says "some keys changed". */
export function evictOnKeysRotated(cache: KeyCache, logger: Logger) {
  return ({ data }: { data: Uint8Array }): void => {
    let productId: string;
    let eventId: string;
    try {
      ({ productId, id: eventId } = fromBinary(ProductKeysRotatedSchema, data));
    } catch (error) {
      cache.evictAll();
      logger.error({ err: error }, "undecodable keys-rotated event; evicted every cached key");
      return;
    }
    const evicted = cache.evictProduct(productId);
    logger.info({ productId, eventId, evicted }, "api keys rotated; cached keys evicted");
  };
}

export interface KeyEvictionsOptions {
  /** Opens the NATS connection, which the evictions then own (and close on stop). */
  connect: () => Promise<NatsConnection>;
  namespace: string;
  cache: KeyCache;
  logger: Logger;
  /** Delay between attempts to connect or to follow the stream. */
  retryMs?: number;
  /** Replaceable in tests; the platform's ordered consumer otherwise. */
  follow?: typeof followEvents;
}

export interface KeyEvictions {
  stop(): Promise<void>;
}

/**
 * Keeps the key cache honest: follows partners' keys-rotated events and evicts the product's
 * keys on each. The cache is trusted only while following; before the stream exists (partners
 * not started yet), while NATS is disconnected and after stop, every request re-resolves its key.
 * After a reconnect the follow starts afresh rather than trusting the old consumer to catch up.
 */
export function startKeyEvictions(options: KeyEvictionsOptions): KeyEvictions {
  const { cache, logger, namespace } = options;
  const retryMs = options.retryMs ?? 1000;
  const follow = options.follow ?? followEvents;
  const stream = streamName({ service: "partners", namespace });
  const handle = evictOnKeysRotated(cache, logger);
  const stopping = new AbortController();
  let connection: NatsConnection | undefined;
  let following: { stop(): Promise<void> } | undefined;
  // Each (re)start of the follow gets a number; an attempt whose number is stale gives up.
  let attempt = 0;

  const pause = () => sleep(retryMs, undefined, { signal: stopping.signal }).catch(() => undefined);

  const stopFollowing = () => {
    const current = following;
    following = undefined;
    current?.stop().catch((error: unknown) => logger.warn({ err: error }, "stopping the key-rotation follow failed"));
  };

  const startFollowing = async (nc: NatsConnection) => {
    const mine = ++attempt;
    cache.setTrusted(false);
    stopFollowing();
    for (let tries = 0; mine === attempt && !stopping.signal.aborted; tries++) {
      try {
        const started = await follow({
          js: nc.jetstream(),
          stream,
          subject: keysRotatedSubject,
          namespace,
          logger,
          handle,
        });
        if (mine !== attempt || stopping.signal.aborted) {
          await started.stop();
          return;
        }
        following = started;
        cache.setTrusted(true);
        logger.info({ stream }, "following key rotations; key cache enabled");
        return;
      } catch (error) {
        if (tries === 0) {
          logger.warn(
            { reason: String(error), stream },
            "cannot follow key rotations yet; every request re-checks its key",
          );
        }
        await pause();
      }
    }
  };

  const watchConnection = async (nc: NatsConnection) => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) {
        attempt++;
        cache.setTrusted(false);
        stopFollowing();
        logger.warn("nats disconnected; key cache disabled");
      } else if (status.type === Events.Reconnect) {
        void startFollowing(nc);
      }
    }
  };

  const run = async () => {
    for (let tries = 0; !stopping.signal.aborted; tries++) {
      try {
        const nc = await options.connect();
        if (stopping.signal.aborted) {
          await nc.close();
          return;
        }
        connection = nc;
        void watchConnection(nc).catch((error: unknown) => logger.error({ err: error }, "nats status watch failed"));
        await startFollowing(nc);
        return;
      } catch (error) {
        if (tries === 0) {
          logger.warn({ reason: String(error) }, "cannot reach nats yet; every request re-checks its key");
        }
        await pause();
      }
    }
  };

  void run();

  return {
    async stop() {
      stopping.abort();
      attempt++;
      cache.setTrusted(false);
      await following?.stop();
      following = undefined;
      await connection?.close();
    },
  };
}
