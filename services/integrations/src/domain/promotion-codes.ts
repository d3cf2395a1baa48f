import { DomainError, type Sql } from "@affiliate/platform";
import { promotionCodesOf, replacePromotionCodes } from "../store/customers.js";

/** At most this many promotion codes per partnership. */
export const maxPromotionCodes = 100;
const codePattern = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Maps exactly `codes` to the partnership (contract section 17), replacing its earlier mapping,
 * in one transaction. A code another partnership of the product holds is refused whole
 * (ALREADY_EXISTS naming it), so a code never attributes to two affiliates.
 */
export async function setPromotionCodes(
  sql: Sql,
  input: { productId: string; partnershipId: string; referralCode: string; codes: string[] },
): Promise<string[]> {
  if (input.codes.length > maxPromotionCodes) {
    throw DomainError.invalidField("codes", `At most ${maxPromotionCodes} codes per affiliate`);
  }
  const bad = input.codes.find((code) => !codePattern.test(code));
  if (bad !== undefined) {
    throw DomainError.invalidField("codes", "Each code must be 1-64 letters, digits, hyphens or underscores");
  }
  return sql.begin(async (tx) => {
    // One mapping change per product at a time: two partnerships claiming one code cannot both win.
    await tx`select pg_advisory_xact_lock(hashtext(${`stripe-promotion-codes:${input.productId}`}))`;
    const { takenBy } = await replacePromotionCodes(tx, input);
    if (takenBy.length > 0) {
      const [first] = takenBy;
      throw new DomainError(
        "already_exists",
        `Promotion code ${first?.code} is mapped to another affiliate (${first?.partnershipId})`,
      );
    }
    return promotionCodesOf(tx, input.productId, input.partnershipId);
  });
}
