import type { Sql } from "@affiliate/platform";
import { listApprovedPayouts } from "../store/payout-imports.js";
import { type PayoutFileFormat, writePayoutFile } from "./payout-files/formats.js";
import type { Partners } from "./ports.js";

/**
 * A provider's batch file for the product's approved payouts (contract section 19): each payout
 * whose partnership has a method of that provider (any method for the platform's CSV) and a
 * positive amount is a row; the others are named with the reason. It changes nothing: the
 * payouts stay approved until an import (or mark_paid) says how the transfers went, so
 * exporting twice writes the same file again.
 */
export async function exportPayouts(
  deps: { sql: Sql; partners: Partners },
  productId: string,
  format: PayoutFileFormat,
) {
  const [payouts, currency] = await Promise.all([
    listApprovedPayouts(deps.sql, productId),
    deps.partners.programCurrency(productId),
  ]);
  const methods = await deps.partners.payoutMethods(productId, [
    ...new Set(payouts.map((payout) => payout.partnershipId)),
  ]);
  const file = writePayoutFile(
    format,
    payouts.map((payout) => ({
      id: payout.id,
      partnershipId: payout.partnershipId,
      amountCents: payout.amountCents,
      details: methods.get(payout.partnershipId),
    })),
    currency,
  );
  return { ...file, currency };
}
