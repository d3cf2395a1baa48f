import {
  addErasedRecords,
  type ErasureOwner,
  type ErasureSubject,
  type Sql,
  setErasedRecords,
} from "@affiliate/platform";
import { countPayoutMethodsOfEmail, deletePayoutMethodsOfEmail } from "../store/payout-methods.js";
import { clearProfileIp, countProfilesWithIp } from "../store/profiles.js";

/** The receipt's name for partners' store. */
export const profilesStore = "affiliate_profiles";
/** The receipt's name for the affiliates' payout details (contract section 19). */
export const payoutMethodsStore = "payout_methods";

/**
 * ScrubProfile (spec 4.11, contract 9a): the affiliate profile of the user with the customer's
 * email loses its `country_last_ip` when that user has a partnership in the product. The profile
 * is shared across products and is the affiliate's own account, so nothing else of it changes.
 * The count is of profiles matched, so it is set (not added) per erasure: a repeat of the same
 * erasure answers the same 1.
 */
export async function scrubProfile(sql: Sql, request: ErasureSubject & { erasureId: string }) {
  await sql.begin(async (tx) => {
    await setErasedRecords(tx, request.erasureId, profilesStore, await clearProfileIp(tx, request));
    // The affiliate's payout details in this product go with the profile's personal data.
    await addErasedRecords(tx, request.erasureId, {
      [payoutMethodsStore]: await deletePayoutMethodsOfEmail(tx, request),
    });
  });
}

/** Partners as an owner of personal data: ErasureOwnerService on its RPC port. */
export function partnersErasureOwner(sql: Sql): ErasureOwner {
  return {
    stores: [profilesStore, payoutMethodsStore],
    erase: (request) => scrubProfile(sql, request),
    find: async (customer) => ({
      [profilesStore]: await countProfilesWithIp(sql, customer),
      [payoutMethodsStore]: await countPayoutMethodsOfEmail(sql, customer),
    }),
  };
}
