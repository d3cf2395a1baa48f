import type { Logger, Sql, TransactionSql } from "@affiliate/platform";
import type { AttemptRecord } from "../store/events.js";
import type { Ledger, Programs, ProviderCustomers } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/** What applying a stored event needs: the apply worker's dependencies. */
export interface ApplyDeps {
  sql: Sql;
  ledger: Ledger;
  programs: Programs;
  /** The provider adapter's reading of a stored payload. */
  commandOf(payload: unknown): ProviderCommand;
  /** The provider's customers through the connection's API key; without it payments wait instead. */
  customers?: ProviderCustomers | undefined;
  clock: () => Date;
  logger: Logger;
}

/** What an attempt decided, and what commits with it (fenced by the job's lease). */
export interface Decision {
  record: AttemptRecord;
  effects?: ((tx: TransactionSql) => Promise<void>) | undefined;
}

/** A decision that ends the event's attempts, with nothing else to commit. */
export const done = (
  outcome: AttemptRecord["outcome"],
  detail: string,
  extra: Partial<AttemptRecord> = {},
): Decision => ({
  record: { outcome, detail, nextAttemptAt: null, ...extra },
});

/** Why an amount cannot be recorded: another currency than the program's; undefined when it is the program's. */
export async function currencyMismatch(
  deps: ApplyDeps,
  productId: string,
  currency: string,
): Promise<string | undefined> {
  const expected = await deps.programs.currencyOf(productId);
  if (expected.toLowerCase() === currency.toLowerCase()) return undefined;
  return `The amount is in ${currency.toUpperCase()}, the program's currency is ${expected.toUpperCase()}: nothing recorded`;
}
