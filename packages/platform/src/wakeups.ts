import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Wakes this process's workers (the outbox relay, job workers) when a transaction commits work
 * for them, without NOTIFY. Postgres commits the transactions that sent a NOTIFY one at a time,
 * under one lock held through the WAL flush (docs/performance.md): with a notifying trigger on
 * every outbox insert, every commit of every service queued on it. Here a writer says which table
 * it gave work to, and the transaction wrapper (db.ts) wakes that table's subscribers once the
 * COMMIT has succeeded, and never after a rollback.
 *
 * Only this process's workers hear it. Other replicas find the work at their next poll (1 s), or
 * at once when their own writers commit; the workers still LISTEN on their channels, so an
 * operator or a tool can wake them with a NOTIFY by hand.
 */

interface Transaction {
  schema: string;
  tables: Set<string>;
}

const transactions = new AsyncLocalStorage<Transaction>();
const subscribers = new Map<string, Set<() => void>>();
const keyOf = (schema: string, table: string) => `${schema}.${table}`;

/**
 * Says that the current transaction gave `table` new work (rows inserted, or made due): its
 * subscribers are woken after the commit. Outside a transaction the statement has committed
 * already, and the table's subscribers (of every schema) are woken now.
 */
export function wakeAfterCommit(table: string): void {
  const transaction = transactions.getStore();
  if (transaction) {
    transaction.tables.add(table);
    return;
  }
  for (const [key, listeners] of subscribers) {
    if (key.endsWith(`.${table}`)) wakeAll(listeners);
  }
}

/** Calls `wake` after every commit that gave `schema.table` work. Returns the unsubscribe. */
export function onWake(schema: string, table: string, wake: () => void): () => void {
  const key = keyOf(schema, table);
  const listeners = subscribers.get(key) ?? new Set();
  listeners.add(wake);
  subscribers.set(key, listeners);
  return () => {
    listeners.delete(wake);
    if (listeners.size === 0) subscribers.delete(key);
  };
}

/**
 * Runs one transaction attempt (`attempt`) recording the tables it gives work to, and wakes
 * their subscribers if it commits. db.ts calls this around every `sql.begin`; an attempt that
 * fails (a rollback, a conflict run again) wakes no one.
 */
export async function withWakeups<T>(schema: string, attempt: () => Promise<T>): Promise<T> {
  const transaction: Transaction = { schema, tables: new Set() };
  const result = await transactions.run(transaction, attempt);
  for (const table of transaction.tables) {
    const listeners = subscribers.get(keyOf(schema, table));
    if (listeners) wakeAll(listeners);
  }
  return result;
}

/** A wake is a hint: a subscriber that throws is not the committer's problem. */
function wakeAll(listeners: Set<() => void>): void {
  for (const wake of listeners) {
    try {
      wake();
    } catch {
      // The subscriber polls anyway.
    }
  }
}
