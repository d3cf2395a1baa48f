import type { Queryable } from "@affiliate/platform";
import type { PartnersDirectory } from "../partners-directory.js";
import { findClickPartnership, findSignupPartnership } from "../store/events.js";
import type { Attribution, TrackInput } from "./types.js";

const dayMs = 24 * 3600 * 1000;

/**
 * Who referred this event (contract section 5), first match wins:
 * 1. the referral code it carries (a code no partnership has is no match: the event is still
 *    recorded and the next rules apply);
 * 2. the customer's latest attributed signup, by provider_customer_id or email, not after it;
 * 3. the visitor's latest click, if inside the program's attribution window.
 * Clicks use only the first rule.
 */
export async function attribute(
  sql: Queryable,
  partners: PartnersDirectory,
  input: TrackInput & { occurredAt: Date; customerEmail: string | undefined },
): Promise<Attribution | undefined> {
  const { productId, testMode, occurredAt } = input;
  if (input.referralCode !== undefined) {
    const byCode = await partners.byReferralCode(productId, input.referralCode);
    if (byCode || input.type === "click") return byCode;
  }
  if (input.providerCustomerId !== undefined || input.customerEmail !== undefined) {
    const partnershipId = await findSignupPartnership(sql, testMode, {
      productId,
      providerCustomerId: input.providerCustomerId,
      customerEmail: input.customerEmail,
      before: occurredAt,
    });
    if (partnershipId) {
      const bySignup = await partners.byPartnershipId(productId, partnershipId);
      if (bySignup) return bySignup;
    }
  }
  if (input.visitorId !== undefined) {
    const click = await findClickPartnership(sql, testMode, {
      productId,
      visitorId: input.visitorId,
      before: occurredAt,
    });
    if (click) {
      const byClick = await partners.byPartnershipId(productId, click.partnershipId);
      const windowStart = occurredAt.getTime() - (byClick?.program.attributionWindowDays ?? 0) * dayMs;
      if (byClick && click.occurredAt.getTime() >= windowStart) return byClick;
    }
  }
  return undefined;
}
