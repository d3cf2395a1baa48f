import { type Erasure, ErasureStatus } from "@affiliate/proto/privacy";
import type { PublicErasure, PublicErasureAnswer } from "../schemas/customers.js";
import { isoTime, isoTimeOrNull, required } from "./common.js";

const erasureStatusNames: Partial<Record<ErasureStatus, PublicErasure["status"]>> = {
  [ErasureStatus.RUNNING]: "running",
  [ErasureStatus.COMPLETED]: "completed",
};

/** An erasure receipt in contract 9a's shape. */
export function toPublicErasure(erasure: Erasure): PublicErasure {
  return {
    id: erasure.id,
    status: required(erasureStatusNames[erasure.status], `erasure ${erasure.id} status`, "privacy"),
    requested_at: isoTime(erasure.requestedAt, "erasure.requested_at", "privacy"),
    completed_at: isoTimeOrNull(erasure.completedAt),
    stores: erasure.stores.map(({ store, records }) => ({ store, records: Number(records) })),
    verified_at: isoTimeOrNull(erasure.verifiedAt),
  };
}

/**
 * Spec 4.11's answer from a completed erasure's receipt: the stores it names, summed over the
 * owners that have them (0 for an owner not deployed, e.g. no notifier means no deliveries).
 */
export function toPublicErasureAnswer(erasure: Erasure): PublicErasureAnswer {
  const records = (store: string) =>
    erasure.stores.filter((count) => count.store === store).reduce((sum, count) => sum + Number(count.records), 0);
  return {
    anonymized: {
      tracking_events: records("tracking_events"),
      webhook_deliveries: records("webhook_deliveries"),
      affiliate_profiles_scrubbed: records("affiliate_profiles"),
    },
    erasure_id: erasure.id,
  };
}
