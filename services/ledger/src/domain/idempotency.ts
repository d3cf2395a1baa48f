import { randomUUID } from "node:crypto";
import { currentDeadline, DomainError, type Sql, type TransactionSql } from "@affiliate/platform";

/**
 * The longest an in-progress request owns its key before a repeat may take it over; a request
 * with a shorter deadline owns it until its deadline (it cannot commit after it). So a key whose
 * request died (the process was killed) is free again within seconds.
 */
export const maxLeaseMs = 8000;
/** Keys are retained this long (spec 4.9 rule 1); afterwards a key can be used again. */
export const retentionDays = 30;

export interface IdempotencyScope {
  productId: string;
  key: string;
  /** Hash of the canonical request body: equal for "the same request". */
  fingerprint: string;
}

/**
 * Runs `apply` at most once per key (spec 4.9 rules 1-7, contract 7):
 * 1. an in_progress row is committed first, so a concurrent repeat finds it and is refused
 *    (ABORTED, "in progress") instead of applying twice;
 * 2. `apply` and the stored outcome commit in one transaction, so a stored outcome always
 *    means the effect happened, and an effect always has its stored outcome;
 * 3. a repeat with the same fingerprint answers the stored outcome (replayed); another
 *    fingerprint is ALREADY_EXISTS;
 * 4. if `apply` fails, nothing was applied and the key is released: errors are not stored, so
 *    a corrected retry with the same key can succeed (validation errors never reserve a key).
 * A lease that ran out (the process died between 1 and 2, or the request outlived it) lets a
 * repeat take the key over with a new lease token. Step 2 stores the outcome only where the
 * token is still its own, so of a request and the one that took its key over, exactly one
 * commits: the store locks the key's row, and a takeover waits for that lock and then finds the
 * key completed.
 */
export async function onceForKey<T extends object>(
  sql: Sql,
  scope: IdempotencyScope,
  apply: (tx: TransactionSql) => Promise<T>,
): Promise<{ value: T; replayed: boolean }> {
  const { productId, key, fingerprint } = scope;
  const leaseToken = randomUUID();
  const leaseMs = Math.max(0, Math.min(currentDeadline()?.remainingMs() ?? maxLeaseMs, maxLeaseMs));
  const [reserved] = await sql`
    insert into idempotency_keys
      (product_id, key, request_fingerprint, state, locked_until, expires_at, lease_token)
    values (${productId}, ${key}, ${fingerprint}, 'in_progress',
            now() + make_interval(secs => ${leaseMs / 1000}), now() + make_interval(days => ${retentionDays}),
            ${leaseToken})
    on conflict (product_id, key) do update set
      request_fingerprint = excluded.request_fingerprint, state = 'in_progress', outcome = null,
      locked_until = excluded.locked_until, created_at = now(), expires_at = excluded.expires_at,
      lease_token = excluded.lease_token
    where idempotency_keys.expires_at <= now()
       or (idempotency_keys.state = 'in_progress' and idempotency_keys.locked_until <= now())
    returning key`;

  if (!reserved) {
    const [existing] = await sql<{ requestFingerprint: string; state: string; outcome: { result: T } | null }[]>`
      select request_fingerprint, state, outcome from idempotency_keys where product_id = ${productId} and key = ${key}`;
    if (!existing) {
      // Released by a failed attempt between our insert and select: try once more.
      return onceForKey(sql, scope, apply);
    }
    if (existing.requestFingerprint !== fingerprint) {
      throw DomainError.withInfo(
        "already_exists",
        "This idempotency key was already used with a different request body",
        { reason: "idempotency_key_reused" },
      );
    }
    if (existing.state !== "completed" || !existing.outcome) throw inProgress();
    return { value: existing.outcome.result, replayed: true };
  }

  try {
    const value = (await sql.begin(async (tx) => {
      const result = await apply(tx);
      const [stored] = await tx`
        update idempotency_keys set state = 'completed', outcome = ${tx.json({ result } as never)}, locked_until = now()
        where product_id = ${productId} and key = ${key} and lease_token = ${leaseToken}
        returning key`;
      if (!stored) throw inProgress();
      return result;
    })) as T;
    return { value, replayed: false };
  } catch (error) {
    // A commit whose outcome is unknown may have stored the outcome: the key stays reserved
    // until its lease ends, and a repeat then finds the outcome or takes the key over.
    if (!(error instanceof DomainError && error.kind === "outcome_unknown")) await releaseKey(sql, scope, leaseToken);
    throw error;
  }
}

/**
 * Frees the key a failed attempt reserved, so a corrected retry may use it at once. When the
 * database cannot be reached for it, the lease frees the key instead: the release's own failure
 * must not replace the attempt's error in the answer.
 */
async function releaseKey(sql: Sql, { productId, key }: IdempotencyScope, leaseToken: string): Promise<void> {
  await sql`
    delete from idempotency_keys
    where product_id = ${productId} and key = ${key} and state = 'in_progress' and lease_token = ${leaseToken}`.catch(
    () => undefined,
  );
}

/** The 409 of a key whose request is running (or outlived its lease and was taken over). */
function inProgress(): DomainError {
  // The reason travels in the public details too: a client tells this 409 (retry later with the
  // same key) from a key reused for another request (never retry) without reading the text.
  return DomainError.withInfo("aborted", "A request with this idempotency key is still in progress; retry later", {
    reason: "idempotency_key_in_progress",
    details: { reason: "idempotency_key_in_progress" },
  });
}

/** Deletes keys past their retention; run periodically. Returns how many it deleted. */
export async function purgeExpiredKeys(sql: Sql, batchSize = 5000): Promise<number> {
  const rows = await sql`
    delete from idempotency_keys where ctid in (
      select ctid from idempotency_keys where expires_at <= now() limit ${batchSize})
    returning key`;
  return rows.length;
}
