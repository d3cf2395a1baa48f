import { DomainError, toConnectError } from "@affiliate/platform";
import {
  type AffiliateRegistration,
  KeyMode,
  type Partnership,
  PartnershipSchema,
  PartnershipStatus,
  PartnersService,
  type Program,
  ProgramSchema,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ServiceImpl, type Transport } from "@connectrpc/connect";
import { CallLog, serveRecorded } from "./recorded-service.js";

export type PartnersMethod = keyof ServiceImpl<typeof PartnersService>;

export interface FakeProduct {
  productId: string;
  liveKey: string;
  testKey: string;
}

const allowedTransitions: Record<PartnershipStatus, PartnershipStatus[]> = {
  [PartnershipStatus.UNSPECIFIED]: [],
  [PartnershipStatus.PENDING]: [PartnershipStatus.ACTIVE, PartnershipStatus.REJECTED],
  [PartnershipStatus.ACTIVE]: [PartnershipStatus.REMOVED],
  [PartnershipStatus.REJECTED]: [PartnershipStatus.ACTIVE],
  [PartnershipStatus.REMOVED]: [PartnershipStatus.ACTIVE],
};

/**
 * An in-memory partners service behind the real generated contract: products with live and test
 * keys, programs, affiliate profiles and partnerships. It counts calls, records requests, and
 * can be told to fail a method with a given ConnectError.
 */
export class FakePartners extends CallLog<PartnersMethod> {
  readonly transport: Transport;
  readonly client: Client<typeof PartnersService>;
  readonly partnerships = new Map<string, Partnership>();
  readonly programs = new Map<string, Program>();
  readonly #keys = new Map<string, { productId: string; mode: KeyMode }>();
  readonly #profiles = new Map<string, { id: string; name: string }>();
  readonly #tokens = new Map<string, { productId: string; partnershipId: string; expiresAt: Date }>();
  #sequence = 0;
  #clock = Date.parse("2025-01-02T03:04:05.678Z");

  constructor() {
    super();
    ({ transport: this.transport, client: this.client } = serveRecorded(PartnersService, this.#implementation(), this));
  }

  addProduct(name = "Acme"): FakeProduct {
    const productId = this.#id("prd");
    this.programs.set(
      productId,
      create(ProgramSchema, {
        productId,
        name,
        commissionRateBps: 2000,
        tier2RateBps: 500,
        holdDays: 30,
        payoutMinimumCents: 5000n,
        attributionWindowDays: 60,
        autoApprove: true,
        currency: "usd",
      }),
    );
    return { productId, ...this.rotateKeys(productId) };
  }

  /** Revokes the product's keys and issues new ones, as partners' RotateKeys does. */
  rotateKeys(productId: string): { liveKey: string; testKey: string } {
    for (const [key, owner] of this.#keys) if (owner.productId === productId) this.#keys.delete(key);
    const liveKey = `sk_live_${this.#id("k")}`;
    const testKey = `sk_test_${this.#id("k")}`;
    this.#keys.set(liveKey, { productId, mode: KeyMode.LIVE });
    this.#keys.set(testKey, { productId, mode: KeyMode.TEST });
    return { liveKey, testKey };
  }

  /** Issues an affiliate token for a partnership, as MintAffiliateToken does (without its checks). */
  mintToken(productId: string, partnershipId: string, ttlMs = 3_600_000): string {
    const token = `apt_${this.#id("tok")}`;
    this.#tokens.set(token, { productId, partnershipId, expiresAt: new Date(Date.now() + ttlMs) });
    return token;
  }

  /** Puts a partnership straight into the store, for list and read tests. */
  seed(productId: string, email: string, status = PartnershipStatus.ACTIVE): Partnership {
    const partnership = this.#newPartnership(productId, { email } as AffiliateRegistration, status);
    return partnership;
  }

  #id(prefix: string): string {
    this.#sequence++;
    return `${prefix}_${String(this.#sequence).padStart(6, "0")}`;
  }

  #profileOf(email: string, name: string | undefined): { id: string; name: string; created: boolean } {
    const existing = this.#profiles.get(email);
    if (existing) return { ...existing, created: false };
    const profile = { id: this.#id("aff"), name: name ?? "" };
    this.#profiles.set(email, profile);
    return { ...profile, created: true };
  }

  #newPartnership(productId: string, registration: AffiliateRegistration, status: PartnershipStatus): Partnership {
    const email = registration.email.trim().toLowerCase();
    const profile = this.#profileOf(email, registration.name);
    this.#clock += 1000;
    const id = this.#id("ptn");
    const partnership = create(PartnershipSchema, {
      id,
      productId,
      status,
      referralCode: registration.referralCode ?? `code${id.slice(4)}`,
      createdAt: timestampFromDate(new Date(this.#clock)),
      affiliate: { id: profile.id, email, name: profile.name },
    });
    this.partnerships.set(id, partnership);
    return partnership;
  }

  #register(productId: string, registration: AffiliateRegistration) {
    const email = registration.email.trim().toLowerCase();
    const inProduct = [...this.partnerships.values()].filter((p) => p.productId === productId);
    const { sponsorReferralCode, referralCode } = registration;
    if (sponsorReferralCode && !inProduct.some((p) => p.referralCode === sponsorReferralCode)) {
      throw toConnectError(
        DomainError.invalidField("sponsorReferralCode", "No active affiliate has this referral code"),
      );
    }
    const existing = inProduct.find((p) => p.affiliate?.email === email);
    if (existing?.status === PartnershipStatus.REMOVED) {
      existing.status = PartnershipStatus.ACTIVE;
      return { outcome: RegistrationOutcome.REACTIVATED, partnership: existing };
    }
    if (existing) throw new ConnectError("Affiliate is already in the program", Code.AlreadyExists);
    if (referralCode && inProduct.some((p) => p.referralCode.toLowerCase() === referralCode.toLowerCase())) {
      throw new ConnectError("Referral code is already taken", Code.AlreadyExists);
    }
    const known = this.#profiles.has(email);
    const auto = this.programs.get(productId)?.autoApprove ?? true;
    const partnership = this.#newPartnership(
      productId,
      registration,
      auto ? PartnershipStatus.ACTIVE : PartnershipStatus.PENDING,
    );
    return { outcome: known ? RegistrationOutcome.JOINED : RegistrationOutcome.CREATED, partnership };
  }

  #moveTo(partnership: Partnership, status: PartnershipStatus): void {
    if (!allowedTransitions[partnership.status].includes(status)) {
      throw new ConnectError(
        `A partnership cannot go from ${PartnershipStatus[partnership.status].toLowerCase()} to ${PartnershipStatus[status].toLowerCase()}`,
        Code.FailedPrecondition,
      );
    }
    partnership.status = status;
  }

  #partnershipOrThrow(productId: string, id: string): Partnership {
    const partnership = this.partnerships.get(id);
    if (!partnership || partnership.productId !== productId) {
      throw new ConnectError(`Partnership ${id} not found`, Code.NotFound);
    }
    return partnership;
  }

  // Only what the gateway calls: the rest of the contract answers UNIMPLEMENTED.
  #implementation(): Partial<ServiceImpl<typeof PartnersService>> {
    return {
      authenticate: ({ apiKey }) => {
        const owner = this.#keys.get(apiKey);
        if (!owner) throw new ConnectError("Unknown or revoked key", Code.Unauthenticated);
        return owner;
      },
      authenticateAffiliateToken: ({ token }) => {
        const found = this.#tokens.get(token);
        const partnership = found ? this.partnerships.get(found.partnershipId) : undefined;
        if (!found || found.expiresAt.getTime() <= Date.now() || partnership?.status !== PartnershipStatus.ACTIVE) {
          throw new ConnectError("Invalid or expired affiliate token", Code.Unauthenticated);
        }
        return { ...found, expiresAt: timestampFromDate(found.expiresAt) };
      },
      mintAffiliateToken: ({ productId, partnershipId, ttlSeconds }) => {
        const partnership = this.#partnershipOrThrow(productId, partnershipId);
        if (partnership.status !== PartnershipStatus.ACTIVE) {
          throw new ConnectError("Tokens are issued for active affiliates only", Code.FailedPrecondition);
        }
        const token = this.mintToken(productId, partnershipId, ttlSeconds * 1000);
        return { token, expiresAt: timestampFromDate(this.#tokens.get(token)?.expiresAt ?? new Date()) };
      },
      revokeAffiliateTokens: ({ productId, partnershipId }) => {
        this.#partnershipOrThrow(productId, partnershipId);
        let revokedCount = 0n;
        for (const [token, owner] of this.#tokens) {
          if (owner.partnershipId === partnershipId) {
            this.#tokens.delete(token);
            revokedCount++;
          }
        }
        return { revokedCount };
      },
      requestAffiliateLogin: () => ({}),
      exchangeAffiliateLoginCode: () => {
        throw new ConnectError("Invalid, used or expired sign-in code", Code.Unauthenticated);
      },
      getProgram: ({ productId }) => ({ program: this.programs.get(productId) }),
      updateProgram: (request) => {
        const program = this.programs.get(request.productId);
        if (!program) throw new ConnectError("Product not found", Code.NotFound);
        if (request.commissionRateBps !== undefined) program.commissionRateBps = request.commissionRateBps;
        if (request.tier2RateBps !== undefined) program.tier2RateBps = request.tier2RateBps;
        if (request.holdDays !== undefined) program.holdDays = request.holdDays;
        if (request.payoutMinimumCents !== undefined) program.payoutMinimumCents = request.payoutMinimumCents;
        if (request.attributionWindowDays !== undefined) program.attributionWindowDays = request.attributionWindowDays;
        if (request.autoApprove !== undefined) program.autoApprove = request.autoApprove;
        return { program };
      },
      registerAffiliate: ({ productId, registration }) => {
        if (!registration) throw new ConnectError("registration missing", Code.InvalidArgument);
        return this.#register(productId, registration);
      },
      bulkRegisterAffiliates: ({ productId, registrations }) => ({
        results: registrations.map((registration) => {
          try {
            const { outcome, partnership } = this.#register(productId, registration);
            return {
              email: registration.email,
              result: { case: "registered" as const, value: { outcome, partnershipId: partnership.id } },
            };
          } catch (error) {
            return {
              email: registration.email,
              result: { case: "error" as const, value: ConnectError.from(error).rawMessage },
            };
          }
        }),
      }),
      listPartnerships: ({ productId, status, pageSize, pageToken }) => {
        const matching = [...this.partnerships.values()]
          .filter((p) => p.productId === productId && (status === PartnershipStatus.UNSPECIFIED || p.status === status))
          .sort((a, b) => b.id.localeCompare(a.id));
        let offset = 0;
        if (pageToken) {
          const match = /^page:(\d+)$/.exec(Buffer.from(pageToken, "base64url").toString());
          if (!match) throw toConnectError(DomainError.invalidField("cursor", "The cursor was not issued by this API"));
          offset = Number(match[1]);
        }
        const page = matching.slice(offset, offset + pageSize);
        const more = offset + pageSize < matching.length;
        return {
          partnerships: page,
          nextPageToken: more ? Buffer.from(`page:${offset + pageSize}`).toString("base64url") : "",
        };
      },
      getPartnership: ({ productId, partnershipId }) => ({
        partnership: this.#partnershipOrThrow(productId, partnershipId),
      }),
      batchGetPartnerships: ({ productId, partnershipIds }) => {
        if (partnershipIds.length > 100) {
          throw toConnectError(DomainError.invalidField("partnership_ids", "At most 100 ids per call"));
        }
        const partnerships = partnershipIds.flatMap((id) => {
          const partnership = this.partnerships.get(id);
          return partnership?.productId === productId ? [partnership] : [];
        });
        return { partnerships };
      },
      countPartnerships: ({ productId, status }) => ({
        count: BigInt(
          [...this.partnerships.values()].filter(
            (p) => p.productId === productId && (status === PartnershipStatus.UNSPECIFIED || p.status === status),
          ).length,
        ),
      }),
      updatePartnershipStatus: ({ productId, partnershipId, status }) => {
        const partnership = this.#partnershipOrThrow(productId, partnershipId);
        this.#moveTo(partnership, status);
        return { partnership };
      },
      // Like partners: every change applies or none does (the transition is checked first).
      updatePartnership: ({ productId, partnershipId, status, commissionOverrideChange: change }) => {
        const partnership = this.#partnershipOrThrow(productId, partnershipId);
        if (status !== PartnershipStatus.UNSPECIFIED) this.#moveTo(partnership, status);
        if (change.case === "setCommissionOverride") partnership.commissionOverride = change.value;
        if (change.case === "clearCommissionOverride") partnership.commissionOverride = undefined;
        return { partnership };
      },
    };
  }
}
