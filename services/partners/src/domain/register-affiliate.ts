import { normalizeEmail } from "@affiliate/contract-rules";
import { DomainError, newId, type Sql, type TransactionSql, uniqueViolation } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import {
  externalIdConstraint,
  findActivePartnershipByCode,
  getPartnershipOrThrow,
  insertPartnership,
  lockPartnershipOfAffiliate,
  setExternalId,
  setPartnershipStatus,
  upsertAffiliate,
} from "../store/partnerships.js";
import { getProgramOrThrow } from "../store/programs.js";
import { assertValidRegistration, generateReferralCode } from "./rules.js";
import type { Program, Registration, RegistrationResult } from "./types.js";

export interface RegistrationOptions {
  /** Whether the affiliate gets a welcome email; travels on the event. */
  notify: boolean;
}

/**
 * Registers one affiliate into the product's program (spec 4.1, 3.3):
 * a new email creates the profile and the partnership ("created"), a known email joins the
 * existing profile ("joined"), a removed partnership becomes active again ("reactivated").
 * An affiliate already in the program, or a taken referral code, is ALREADY_EXISTS.
 */
export async function registerAffiliate(
  sql: Sql,
  productId: string,
  registration: Registration,
  options: RegistrationOptions,
): Promise<RegistrationResult> {
  assertValidRegistration(registration);
  return sql.begin(async (tx) => {
    const program = await getProgramOrThrow(tx, productId);
    return registerInTransaction(tx, program, registration, options);
  });
}

/** The registration itself, inside the caller's transaction (bulk runs each in a savepoint). */
export async function registerInTransaction(
  tx: TransactionSql,
  program: Program,
  registration: Registration,
  options: RegistrationOptions,
): Promise<RegistrationResult> {
  const { productId } = program;
  const sponsor =
    registration.sponsorReferralCode === undefined
      ? undefined
      : await findActivePartnershipByCode(tx, productId, registration.sponsorReferralCode);
  if (registration.sponsorReferralCode !== undefined && !sponsor) {
    throw DomainError.invalidField("sponsorReferralCode", "No active affiliate of this program has this referral code");
  }

  const { affiliate, isNew } = await upsertAffiliate(tx, {
    id: newId("aff"),
    email: normalizeEmail(registration.email),
    name: registration.name ?? "",
  });

  const existing = await lockPartnershipOfAffiliate(tx, productId, affiliate.id);
  if (existing) {
    if (existing.status !== "removed") throw alreadyInProgram();
    // Reactivation keeps the partnership's code, sponsor and history; an external id given now
    // replaces the one it had.
    await setPartnershipStatus(tx, existing.id, "active");
    if (registration.externalId !== undefined) {
      await setExternalIdOrThrow(tx, existing.id, registration.externalId);
    }
    const partnership = await getPartnershipOrThrow(tx, productId, existing.id);
    await outbox.partnershipStatusChanged(tx, partnership, existing.status);
    await outbox.partnershipReactivated(tx, partnership, options);
    return { outcome: "reactivated", partnership };
  }

  const id = newId("ptn");
  await insertWithReferralCode(tx, registration.referralCode, (referralCode) =>
    insertPartnership(tx, {
      id,
      productId,
      affiliateId: affiliate.id,
      status: program.autoApprove ? "active" : "pending",
      referralCode,
      sponsorPartnershipId: sponsor?.id ?? null,
      externalId: registration.externalId ?? null,
    }),
  );
  const partnership = await getPartnershipOrThrow(tx, productId, id);
  await outbox.partnershipCreated(tx, partnership, { newAffiliate: isNew, notify: options.notify });
  return { outcome: isNew ? "created" : "joined", partnership };
}

export const externalIdTaken = () =>
  new DomainError("already_exists", "External id is already used by another affiliate of this program");

/** Sets the external id in a savepoint, so a taken one is ALREADY_EXISTS and the transaction goes on. */
export async function setExternalIdOrThrow(tx: TransactionSql, id: string, externalId: string | null): Promise<void> {
  try {
    await tx.savepoint((inner) => setExternalId(inner, id, externalId));
  } catch (error) {
    if (uniqueViolation(error) === externalIdConstraint) throw externalIdTaken();
    throw error;
  }
}

const alreadyInProgram = () => new DomainError("already_exists", "Affiliate is already in the program");

/**
 * Inserts with the requested code, or with generated codes until one is free. Each attempt runs
 * in a savepoint so a unique violation does not abort the surrounding transaction.
 */
async function insertWithReferralCode(
  tx: TransactionSql,
  requested: string | undefined,
  insert: (referralCode: string) => Promise<void>,
): Promise<void> {
  const attempts = requested === undefined ? 5 : 1;
  for (let attempt = 1; ; attempt++) {
    const code = requested ?? generateReferralCode();
    try {
      await tx.savepoint(() => insert(code));
      return;
    } catch (error) {
      const constraint = uniqueViolation(error);
      if (constraint === "partnerships_one_per_affiliate") throw alreadyInProgram();
      if (constraint === externalIdConstraint) throw externalIdTaken();
      if (constraint !== "partnerships_referral_code_unique") throw error;
      if (requested !== undefined) throw new DomainError("already_exists", "Referral code is already taken");
      if (attempt >= attempts) throw new Error("could not generate a free referral code in 5 attempts");
    }
  }
}
