import { checkPayoutDetails, maskPayoutDetails, type PayoutDetails } from "@affiliate/contract-rules";
import { DomainError, type SealingKey, type Sql } from "@affiliate/platform";
import { getPartnershipOrThrow } from "../store/partnerships.js";
import {
  deletePayoutMethod as deleteRow,
  findPayoutMethod,
  findPayoutMethods,
  type PayoutMethodRow,
  upsertPayoutMethod,
} from "../store/payout-methods.js";

/** A partnership's payout method: its details in clear or masked, as the caller asked. */
export interface PayoutMethod {
  partnershipId: string;
  details: PayoutDetails;
  updatedAt: Date;
}

export interface PayoutMethodDeps {
  sql: Sql;
  /** Seals the details at rest (PAYOUT_DETAILS_ENCRYPTION_KEY). */
  payoutSealing: SealingKey;
  clock?: () => Date;
}

const opened = (sealing: SealingKey, row: PayoutMethodRow): PayoutMethod => ({
  partnershipId: row.partnershipId,
  details: JSON.parse(sealing.open(row.sealedDetails)) as PayoutDetails,
  updatedAt: row.updatedAt,
});

const masked = (method: PayoutMethod): PayoutMethod => ({ ...method, details: maskPayoutDetails(method.details) });

/**
 * The affiliate sets how it is paid (contract section 19): the details are checked field by field
 * (contract-rules/payout-details.ts, the rule the REST shapes use too), normalised, sealed and stored,
 * replacing the previous method. Answers the method masked.
 */
export async function setPayoutMethod(
  deps: PayoutMethodDeps,
  productId: string,
  partnershipId: string,
  details: PayoutDetails,
): Promise<PayoutMethod> {
  const checked = checkPayoutDetails(details);
  if (checked.problems) {
    throw new DomainError("invalid_argument", "Invalid payout details", checked.problems);
  }
  await getPartnershipOrThrow(deps.sql, productId, partnershipId);
  const row = await upsertPayoutMethod(deps.sql, {
    productId,
    partnershipId,
    method: checked.details.type,
    sealedDetails: deps.payoutSealing.seal(JSON.stringify(checked.details)),
    now: deps.clock?.() ?? new Date(),
  });
  return masked({ partnershipId, details: checked.details, updatedAt: row.updatedAt });
}

/** The partnership's method, masked; NOT_FOUND when it has none. */
export async function getPayoutMethod(deps: PayoutMethodDeps, productId: string, partnershipId: string) {
  const row = await findPayoutMethod(deps.sql, productId, partnershipId);
  if (!row) throw new DomainError("not_found", `Affiliate ${partnershipId} has no payout method`);
  return masked(opened(deps.payoutSealing, row));
}

export async function deletePayoutMethod(deps: PayoutMethodDeps, productId: string, partnershipId: string) {
  return deleteRow(deps.sql, productId, partnershipId);
}

export const maxRevealedPayoutMethods = 100;

/** The methods in clear, for the payouts service's export only. */
export async function revealPayoutMethods(
  deps: PayoutMethodDeps,
  productId: string,
  partnershipIds: readonly string[],
): Promise<PayoutMethod[]> {
  if (partnershipIds.length > maxRevealedPayoutMethods) {
    throw DomainError.invalidField("partnership_ids", `At most ${maxRevealedPayoutMethods} per call`);
  }
  const rows = await findPayoutMethods(deps.sql, productId, partnershipIds);
  return rows.map((row) => opened(deps.payoutSealing, row));
}
