import {
  addErasedRecords,
  type ErasureOwner,
  type Sql,
  type StoreCounts,
  type TransactionSql,
} from "@affiliate/platform";
import {
  anonymizeCustomerEvents,
  countCommissionsOfEvents,
  type EventsTable,
  findCustomerRecords,
  type ReasonTable,
  scrubEventMetadata,
  scrubIdempotencyOutcomes,
  scrubReasons,
} from "../store/erasure.js";

/**
 * Rows per transaction: a big customer (10,000 events) is erased in short transactions, so the
 * product's tracking and refunds never wait long behind the erasure's row locks.
 */
export const erasureBatchSize = 500;

/** The ledger's stores, as the erasure receipt names them. */
export const ledgerStores = [
  "tracking_events",
  "sandbox_events",
  "commissions",
  "refunds",
  "idempotency_keys",
] as const;

interface Customer {
  productId: string;
  email: string;
}

/**
 * Erases a customer from the ledger (spec 4.11, contract 9a): live and sandbox events
 * anonymised (their commissions then read customer_email null), the email replaced by
 * `[erased]` in audit metadata, refund and commission reasons and stored idempotency outcomes.
 * Amounts, types, times, ids, statuses and partnership links are kept. Each batch commits with
 * its count (`erasure_counts`), so a crash loses neither work nor the receipt's figures, and a
 * repeat only finds what is left.
 */
export async function eraseCustomer(sql: Sql, request: Customer & { erasureId: string }): Promise<void> {
  const { erasureId, ...customer } = request;
  const untilDone = async (batch: (tx: TransactionSql) => Promise<number>) => {
    for (;;) {
      const changed = await sql.begin(batch);
      if (changed < erasureBatchSize) return;
    }
  };

  const events = (table: EventsTable) =>
    untilDone(async (tx) => {
      const ids = await anonymizeCustomerEvents(tx, table, customer, erasureBatchSize);
      const counts: StoreCounts =
        table === "tracking_events"
          ? { tracking_events: ids.length, commissions: await countCommissionsOfEvents(tx, ids) }
          : { sandbox_events: ids.length };
      await addErasedRecords(tx, erasureId, counts);
      return ids.length;
    });
  const metadata = (table: EventsTable) =>
    untilDone(async (tx) => {
      const scrubbed = await scrubEventMetadata(tx, table, customer, erasureBatchSize);
      await addErasedRecords(tx, erasureId, { [table]: scrubbed });
      return scrubbed;
    });
  const reasons = (table: ReasonTable) =>
    untilDone(async (tx) => {
      const scrubbed = await scrubReasons(tx, table, customer, erasureBatchSize);
      await addErasedRecords(tx, erasureId, { [table]: scrubbed });
      return scrubbed;
    });

  // One store after another: each step's transactions are short and lock one table's rows.
  await events("tracking_events");
  await events("sandbox_events");
  await metadata("tracking_events");
  await metadata("sandbox_events");
  await reasons("refunds");
  await reasons("commissions");
  await sql.begin(async (tx) => {
    await addErasedRecords(tx, erasureId, { idempotency_keys: await scrubIdempotencyOutcomes(tx, customer) });
  });
}

/** The ledger as an owner of personal data: ErasureOwnerService on its RPC port. */
export function ledgerErasureOwner(sql: Sql): ErasureOwner {
  return {
    stores: ledgerStores,
    erase: (request) => eraseCustomer(sql, request),
    find: (customer) => findCustomerRecords(sql, customer),
  };
}
