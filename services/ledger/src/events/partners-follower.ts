import { followWhileConnected, type Logger, type NatsConnection, streamName } from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { fromBinary } from "@bufbuild/protobuf";

/** The cache a follower keeps honest: what it evicts, and whether it may be trusted at all. */
export interface PartnersDirectoryCache {
  /** Drops every cached answer about the product. */
  evictProduct(productId: string): void;
  /** Whether cached answers may be used: only while partners' events are being followed. */
  setFollowing(following: boolean): void;
}

/** Evicts the product a partners status, override or program event concerns. */
export function evictOnPartnersEvent(directory: PartnersDirectoryCache) {
  return ({ subject, data }: { subject: string; data: Uint8Array }): void => {
    const { partnershipStatusChanged, partnershipCommissionOverrideChanged, programUpdated } = partnersEvents;
    if (subject === partnershipStatusChanged.subject) {
      const productId = fromBinary(partnershipStatusChanged.schema, data).partnership?.productId;
      if (productId) directory.evictProduct(productId);
    } else if (subject === partnershipCommissionOverrideChanged.subject) {
      const productId = fromBinary(partnershipCommissionOverrideChanged.schema, data).partnership?.productId;
      if (productId) directory.evictProduct(productId);
    } else if (subject === programUpdated.subject) {
      const productId = fromBinary(programUpdated.schema, data).program?.productId;
      if (productId) directory.evictProduct(productId);
    }
  };
}

/**
 * Keeps the directory's cache honest: follows partners' events on this replica and evicts the
 * product they concern; the cache is trusted only while following (see followWhileConnected).
 */
export function followPartnersEvents(options: {
  directory: PartnersDirectoryCache;
  connect: () => Promise<NatsConnection>;
  namespace: string;
  logger: Logger;
}): { stop(): Promise<void> } {
  return followWhileConnected({
    connect: options.connect,
    stream: streamName({ service: partnersEvents.programUpdated.service, namespace: options.namespace }),
    subject: "partners.>",
    namespace: options.namespace,
    logger: options.logger,
    purpose: "partnership and program changes",
    handle: evictOnPartnersEvent(options.directory),
    onFollowing: (following) => options.directory.setFollowing(following),
  });
}
