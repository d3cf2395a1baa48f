/**
 * What the erasure saga needs from the services that hold personal data, in the domain's words.
 * rpc/owners.ts implements it over ErasureOwnerService; tests back it with in-memory routers.
 */

/** Records per store, by the store's public name. */
export type StoreCounts = Record<string, number>;

export interface Customer {
  productId: string;
  /** Trimmed and lowercased. */
  email: string;
}

/** One service that holds customers' personal data (ledger, partners, notifier). */
export interface PersonalDataHolder {
  /** Stable name, recorded with the erasure ("ledger"). */
  name: string;
  /**
   * Erases what is left of the customer; answers every count made under `erasureId` so far,
   * repeats included (an owner remembers them), so a resumed saga's receipt adds up.
   */
  erase(customer: Customer, erasureId: string): Promise<StoreCounts>;
  /** Searches again without changing anything: what still holds the customer's data. */
  find(customer: Customer): Promise<StoreCounts>;
}
