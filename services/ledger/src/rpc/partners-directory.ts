import { defaultFraudSettings } from "@affiliate/contract-rules";
import { asRead, fraudSettingsFromProto } from "@affiliate/platform";
import {
  type CommissionOverride,
  CommissionType,
  PartnershipStatus,
  type PartnersService,
  type ResolveAttributionResponse,
} from "@affiliate/proto/partners";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { PartnersDirectory } from "../domain/ports.js";
import type { Attribution, CommissionTerms } from "../domain/types.js";

const statusNames: Record<number, Attribution["status"]> = {
  [PartnershipStatus.ACTIVE]: "active",
  [PartnershipStatus.PENDING]: "pending",
  [PartnershipStatus.REJECTED]: "rejected",
  [PartnershipStatus.REMOVED]: "removed",
};

/** A limit on the wire: 0 is none. */
const limitFromProto = (limit: number) => (limit === 0 ? null : limit);
const typeFromProto = (type: CommissionType) => (type === CommissionType.FLAT ? "flat" : "percent");

/** The fields the override sets; the others stay absent (inherited). */
function overrideFromProto(override: CommissionOverride | undefined): Partial<CommissionTerms> | null {
  if (!override) return null;
  const terms: Partial<CommissionTerms> = {};
  if (override.commissionType !== CommissionType.UNSPECIFIED)
    terms.commissionType = typeFromProto(override.commissionType);
  if (override.commissionRateBps !== undefined) terms.commissionRateBps = override.commissionRateBps;
  if (override.commissionFlatCents !== undefined) terms.commissionFlatCents = Number(override.commissionFlatCents);
  if (override.tier2RateBps !== undefined) terms.tier2RateBps = override.tier2RateBps;
  if (override.maxCommissionMonths !== undefined)
    terms.maxCommissionMonths = limitFromProto(override.maxCommissionMonths);
  if (override.maxCommissionPayments !== undefined) {
    terms.maxCommissionPayments = limitFromProto(override.maxCommissionPayments);
  }
  return terms;
}

function fromProto(res: ResolveAttributionResponse): Attribution {
  const program = res.program;
  return {
    partnershipId: res.partnershipId,
    referralCode: res.referralCode,
    status: statusNames[res.status] ?? "removed",
    activeSponsorPartnershipId: res.activeSponsorPartnershipId || null,
    program: {
      commissionType: typeFromProto(program?.commissionType ?? CommissionType.PERCENT),
      commissionRateBps: program?.commissionRateBps ?? 0,
      commissionFlatCents: Number(program?.commissionFlatCents ?? 0n),
      tier2RateBps: program?.tier2RateBps ?? 0,
      maxCommissionMonths: limitFromProto(program?.maxCommissionMonths ?? 0),
      maxCommissionPayments: limitFromProto(program?.maxCommissionPayments ?? 0),
      holdDays: program?.holdDays ?? 0,
      attributionWindowDays: program?.attributionWindowDays ?? 0,
      fraud: { ...defaultFraudSettings, ...fraudSettingsFromProto(program?.fraud) },
    },
    commissionOverride: overrideFromProto(res.commissionOverride),
    affiliateEmail: res.affiliateEmail || null,
  };
}

interface Entry {
  value: Attribution;
  productVersion: number;
  expiresAt: number;
}

/**
 * Partners' ResolveAttribution behind a cache, so a tracked event costs no RPC once its
 * partnership is known. Entries of a product are dropped (by bumping the product's version) on
 * any status change, commission override change or program update of that product, so "changes apply to commissions created
 * afterwards" holds within the event's latency. The cache is trusted only while the event feed
 * runs; without it every lookup asks partners.
 */
export class CachedPartnersDirectory implements PartnersDirectory {
  private readonly entries = new Map<string, Entry>();
  private readonly versions = new Map<string, number>();
  private following = false;

  constructor(
    private readonly partners: Client<typeof PartnersService>,
    private readonly options: { ttlMs: number; maxEntries: number },
  ) {}

  byReferralCode(productId: string, referralCode: string) {
    return this.lookup(productId, `code:${referralCode.toLowerCase()}`, { case: "referralCode", value: referralCode });
  }

  byPartnershipId(productId: string, partnershipId: string) {
    return this.lookup(productId, `id:${partnershipId}`, { case: "partnershipId", value: partnershipId });
  }

  evictProduct(productId: string): void {
    this.versions.set(productId, (this.versions.get(productId) ?? 0) + 1);
  }

  /** Whether cached answers may be used: only while partners' events are being followed. */
  setFollowing(following: boolean): void {
    this.following = following;
    if (!following) this.entries.clear();
  }

  private async lookup(
    productId: string,
    key: string,
    target: { case: "referralCode" | "partnershipId"; value: string },
  ): Promise<Attribution | undefined> {
    const cacheKey = `${productId}|${key}`;
    const version = this.versions.get(productId) ?? 0;
    const hit = this.entries.get(cacheKey);
    if (this.following && hit && hit.productVersion === version && hit.expiresAt > Date.now()) return hit.value;
    try {
      // A read: lost on the way, it is UNAVAILABLE, not an unknown outcome of the event being tracked.
      const value = fromProto(await asRead(this.partners.resolveAttribution({ productId, target })));
      if (this.following) {
        if (this.entries.size >= this.options.maxEntries) this.entries.clear();
        this.entries.set(cacheKey, { value, productVersion: version, expiresAt: Date.now() + this.options.ttlMs });
      }
      return value;
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.NotFound) return undefined;
      throw error;
    }
  }
}
