import { type ErasureOwner, type ErasureSubject, type Sql, setErasedRecords } from "@affiliate/platform";
import { clearProfileIp, countProfilesWithIp } from "../store/profiles.js";

/** The receipt's name for partners' store. */
export const profilesStore = "affiliate_profiles";

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
  });
}

/** Partners as an owner of personal data: ErasureOwnerService on its RPC port. */
export function partnersErasureOwner(sql: Sql): ErasureOwner {
  return {
    stores: [profilesStore],
    erase: (request) => scrubProfile(sql, request),
    find: async (customer) => ({ [profilesStore]: await countProfilesWithIp(sql, customer) }),
  };
}
