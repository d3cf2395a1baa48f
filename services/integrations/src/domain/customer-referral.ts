import type { TransactionSql } from "@affiliate/platform";
import { markCustomerSeen, partnershipOfPromotionCodes, recordCustomerSignup } from "../store/customers.js";
import { wakeCustomerWaiters } from "../store/events.js";
import type { ApplyDeps } from "./applying.js";
import type { Referral } from "./types.js";

/**
 * Who referred the customer, first match (contract section 17): the merchant's metadata; else a
 * promotion code mapped to a partnership (a code beats a cookie); else the session's
 * client_reference_id.
 */
export async function referralOf(
  deps: ApplyDeps,
  productId: string,
  command: { referral?: Referral | undefined; promotionCodes: string[] },
): Promise<Referral | undefined> {
  const own = command.referral;
  if (own && "referralCode" in own && own.source === "metadata") return own;
  const mapped = await partnershipOfPromotionCodes(deps.sql, productId, command.promotionCodes);
  if (mapped) return { referralCode: mapped.referralCode, source: "coupon" };
  return own;
}

/** The customer's own event was applied: its waiting payments go now, and later ones never wait. */
export function customerArrived(deps: ApplyDeps, productId: string, customerId: string) {
  return async (tx: TransactionSql) => {
    await markCustomerSeen(tx, productId, customerId);
    await wakeCustomerWaiters(tx, productId, customerId, deps.clock());
  };
}

/** The customer's referral was recorded as `signupEventId`: once per customer, and the customer has arrived. */
export function customerSignedUp(deps: ApplyDeps, productId: string, customerId: string, signupEventId: string) {
  const arrived = customerArrived(deps, productId, customerId);
  return async (tx: TransactionSql) => {
    await recordCustomerSignup(tx, { productId, customerId, signupEventId });
    await arrived(tx);
  };
}

export const earliest = (a: Date, b: Date | undefined) => (b !== undefined && b < a ? b : a);
