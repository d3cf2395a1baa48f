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

const { productKeysRotated, partnershipTokensRevoked, partnershipStatusChanged } = partnersEvents;

/**
 * Evicts what a partners event revokes: a product's API keys on keys_rotated, a partnership's
 * affiliate tokens on tokens_revoked and on status_changed (a token dies when its partnership
 * stops being active). Other subjects change no credential. An undecodable message of these
 * subjects still says "some credentials changed": everything is evicted.
 */
export function evictOnCredentialEvents(cache: KeyCache, logger: Logger) {
  return ({ subject, data }: { subject: string; data: Uint8Array }): void => {
    try {
      if (subject === productKeysRotated.subject) {
        const { productId, id: eventId } = fromBinary(productKeysRotated.schema, data);
        const evicted = cache.evictProduct(productId);
        logger.info({ productId, eventId, evicted }, "api keys rotated; cached keys evicted");
      } else if (subject === partnershipTokensRevoked.subject) {
        const { partnershipId, id: eventId } = fromBinary(partnershipTokensRevoked.schema, data);
        const evicted = cache.evictPartnership(partnershipId);
        logger.info({ partnershipId, eventId, evicted }, "affiliate tokens revoked; cached tokens evicted");
      } else if (subject === partnershipStatusChanged.subject) {
        const { partnership, id: eventId } = fromBinary(partnershipStatusChanged.schema, data);
        const evicted = cache.evictPartnership(partnership?.id ?? "");
        if (evicted > 0) logger.info({ partnershipId: partnership?.id, eventId, evicted }, "cached tokens evicted");
      }
    } catch (error) {
      cache.evictAll();
      logger.error({ err: error, subject }, "undecodable credentials event; evicted every cached credential");
    }
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
 * Keeps the credential cache honest: follows partners' events and evicts what each revokes
 * (evictOnCredentialEvents). The cache is trusted only while following (see
 * followWhileConnected, whose heartbeat rule bounds how late an eviction can be): before the
 * stream exists, while NATS is disconnected or silent, and after stop, every request re-resolves
 * its key or token.
 */
export function startKeyEvictions(options: KeyEvictionsOptions): KeyEvictions {
  const { cache, logger } = options;
  return followWhileConnected({
    ...options,
    stream: streamName({ service: productKeysRotated.service, namespace: options.namespace }),
    subject: "partners.>",
    purpose: "key rotations and affiliate token revocations",
    handle: evictOnCredentialEvents(cache, logger),
    onFollowing: (following) => cache.setTrusted(following),
  });
}
