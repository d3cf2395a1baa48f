import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The moment by which a caller must have its answer. An RPC server runs each call inside the
 * deadline its caller sent (`connect-timeout-ms`); the calls it makes in turn carry what is left
 * of it, and its transactions refuse to commit once too little is left (see createSql). So a
 * caller that hears "deadline exceeded" knows nothing was applied.
 */
export class Deadline {
  private constructor(readonly at: number) {}

  /** A deadline `ms` milliseconds from now. */
  static in(ms: number): Deadline {
    return new Deadline(Date.now() + ms);
  }

  /** Milliseconds left; 0 or less once it has passed. */
  remainingMs(): number {
    return this.at - Date.now();
  }
}

/**
 * Time a service keeps in hand at the end of its deadline: a transaction whose work ends later
 * than this before the deadline rolls back instead of committing, and a nested call gets the
 * deadline minus this much, so the caller can still commit after it answers. It covers a COMMIT
 * and the answer's way back.
 */
export const commitReserveMs = 250;

const current = new AsyncLocalStorage<Deadline>();

/** The deadline of the RPC being served, if it has one. */
export function currentDeadline(): Deadline | undefined {
  return current.getStore();
}

/** Runs `work` under `deadline`: transactions and outgoing calls inside it are bounded by it. */
export function withDeadline<T>(deadline: Deadline, work: () => T): T {
  return current.run(deadline, work);
}

/**
 * Runs `work` outside the deadline of the RPC being served: for work that outlives the call on
 * purpose (a saga that goes on after the answer, completed later if need be). Its transactions
 * and calls are then bounded as any work outside an RPC is: by each call's own deadline.
 */
export function withoutDeadline<T>(work: () => T): T {
  return current.exit(work);
}
