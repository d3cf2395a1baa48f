import {
  type followEvents,
  followWhileConnected,
  type Logger,
  type NatsConnection,
  streamName,
} from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { fromBinary } from "@bufbuild/protobuf";
import type { KeyCache } from "./key-cache.js";

const keysRotated = partnersEvents.productKeysRotated;

/** Evicts the rotated product's keys. An undecodable message still says "some keys changed". */
export function evictOnKeysRotated(cache: KeyCache, logger: Logger) {
  return ({ data }: { data: Uint8Array }): void => {
    let productId: string;
    let eventId: string;
    try {
      ({ productId, id: eventId } = fromBinary(keysRotated.schema, data));
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
 * keys on each. The cache is trusted only while following (see followWhileConnected): before the
 * stream exists, while NATS is disconnected and after stop, every request re-resolves its key.
 */
export function startKeyEvictions(options: KeyEvictionsOptions): KeyEvictions {
  const { cache, logger } = options;
  return followWhileConnected({
    ...options,
    stream: streamName({ service: keysRotated.service, namespace: options.namespace }),
    subject: keysRotated.subject,
    purpose: "key rotations",
    handle: evictOnKeysRotated(cache, logger),
    onFollowing: (following) => cache.setTrusted(following),
  });
}
