export type ErasureStatus = "running" | "completed";

export interface StoreCount {
  store: string;
  records: number;
}

/** An erasure's receipt (contract 9a). It never holds the email. */
export interface Erasure {
  id: string;
  productId: string;
  status: ErasureStatus;
  requestedAt: Date;
  completedAt: Date | null;
  verifiedAt: Date | null;
  /** Every store searched so far, summed over owners, sorted by name. */
  stores: StoreCount[];
}
