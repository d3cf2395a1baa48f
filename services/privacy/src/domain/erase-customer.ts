import { isValidEmail, normalizeEmail } from "@affiliate/contract-rules";
import { DomainError, type ErasureSubject, newId, type Sql } from "@affiliate/platform";
import { enqueueCustomerErased } from "../events/outbox.js";
import {
  completeErasure,
  getErasure,
  insertErasure,
  leaseAbandonedErasures,
  leaseErasure,
  recordOwnerErased,
} from "../store/erasures.js";
import type { EmailKeys } from "./email-keys.js";
import type { Customer, PersonalDataHolder } from "./ports.js";
import type { Erasure } from "./types.js";

export interface ErasureDeps {
  sql: Sql;
  /** The configured owners of personal data; an erasure calls those configured when it is requested. */
  owners: readonly PersonalDataHolder[];
  keys: EmailKeys;
  /** How long a runner owns an erasure before the resume job may take it over. */
  leaseMs: number;
}

/**
 * How many times the saga erases again what a verification still finds (a payment recorded
 * while the erasure ran) before leaving the rest to the next resume.
 */
const verificationRounds = 3;

/** The normalised email, or the validation envelope's field error (spec 4.11). */
export function customerEmailOrThrow(email: string): string {
  const normalized = normalizeEmail(email);
  if (!isValidEmail(normalized)) throw DomainError.invalidField("email", "Invalid email address");
  return normalized;
}

/**
 * Records an erasure request (spec 4.11, contract 9a): a keyed hash of the email (what the
 * receipts are found by), the email sealed for the saga's duration, and the owners to call.
 * The caller holds the lease it was created with and runs the saga (runErasure).
 */
export async function requestErasure(deps: ErasureDeps, request: ErasureSubject): Promise<string> {
  const email = customerEmailOrThrow(request.email);
  const id = newId("ers");
  await deps.sql.begin((tx) =>
    insertErasure(tx, {
      id,
      productId: request.productId,
      emailHash: deps.keys.hash(email),
      sealedEmail: deps.keys.seal(email),
      leaseMs: deps.leaseMs,
      owners: deps.owners.map((owner) => owner.name),
    }),
  );
  return id;
}

/**
 * Runs an erasure's saga to its end, or resumes it where it stopped: every owner not yet done
 * erases and its counts are recorded as it answers (owners remember their counts per erasure, so
 * a repeated call after a crash answers the whole count); then every owner searches again, and
 * what is still found (a payment recorded meanwhile) is erased again; when nothing is left the
 * erasure completes, verified, its sealed email deleted, `customer.erased` in the same
 * transaction. Throws when an owner fails; the erasure stays running and is resumed later.
 */
export async function runErasure(deps: ErasureDeps, erasureId: string): Promise<Erasure | undefined> {
  const { sql } = deps;
  const erasure = await leaseErasure(sql, erasureId, deps.leaseMs);
  if (!erasure) return undefined;
  const customer: Customer = { productId: erasure.productId, email: deps.keys.open(erasure.sealedEmail) };
  const owners = erasure.owners.map(({ owner: name, erased }) => {
    const owner = deps.owners.find((candidate) => candidate.name === name);
    if (!owner) throw new Error(`erasure ${erasureId} needs owner ${name}, which is not configured`);
    return { owner, erased };
  });

  const erase = async (toErase: PersonalDataHolder[]) => {
    const outcomes = await Promise.allSettled(
      toErase.map(async (owner) =>
        recordOwnerErased(sql, erasureId, owner.name, await owner.erase(customer, erasureId)),
      ),
    );
    const failed = outcomes.find((outcome) => outcome.status === "rejected");
    if (failed) throw failed.reason;
  };

  await erase(owners.filter(({ erased }) => !erased).map(({ owner }) => owner));
  for (let round = 1; round <= verificationRounds; round++) {
    await leaseErasure(sql, erasureId, deps.leaseMs);
    const found = await Promise.all(owners.map(async ({ owner }) => ({ owner, counts: await owner.find(customer) })));
    const left = found.filter(({ counts }) => Object.values(counts).some((records) => records > 0));
    if (left.length === 0) {
      return sql.begin(async (tx) => {
        const completed = await completeErasure(tx, erasureId);
        if (completed) await enqueueCustomerErased(tx, completed);
        return completed ?? getErasure(tx, erasure.productId, erasureId);
      });
    }
    await erase(left.map(({ owner }) => owner));
  }
  throw new Error(`erasure ${erasureId}: owners still find the customer after ${verificationRounds} rounds`);
}

/**
 * Resumes the running erasures whose runner is gone (a crash, an owner that was down): the
 * periodic job of every replica. Returns how many it completed.
 */
export async function resumeAbandonedErasures(
  deps: ErasureDeps,
  onFailure: (erasureId: string, error: unknown) => void,
  batchSize = 20,
): Promise<number> {
  let completed = 0;
  for (const id of await leaseAbandonedErasures(deps.sql, batchSize, deps.leaseMs)) {
    try {
      if ((await runErasure(deps, id))?.status === "completed") completed += 1;
    } catch (error) {
      onFailure(id, error);
    }
  }
  return completed;
}

export async function getErasureOrThrow(sql: Sql, productId: string, erasureId: string): Promise<Erasure> {
  const erasure = await getErasure(sql, productId, erasureId);
  if (!erasure) throw new DomainError("not_found", `Erasure ${erasureId} not found`);
  return erasure;
}
