import {
  DomainError,
  enumFilter,
  fromProtoEnum,
  type PageTokens,
  type SealingKey,
  type Sql,
} from "@affiliate/platform";
import {
  type AffiliateRegistration,
  BulkRegistrationResultSchema,
  PartnershipStatus as PartnershipStatusProto,
  type PartnersService,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  commissionOverrideFromProto,
  commissionOverrideToProto,
  keyModeToProto,
  outcomeToProto,
  partnershipToProto,
  payoutDetailsFromProto,
  payoutMethodToProto,
  programChangesFromProto,
  programToProto,
  statusToProto,
} from "../codec.js";
import {
  exchangeAffiliateLoginCode,
  issueAffiliateLoginCode,
  requestAffiliateLogin,
} from "../domain/affiliate-login.js";
import { authenticateAffiliateToken, mintAffiliateToken, revokeAffiliateTokens } from "../domain/affiliate-tokens.js";
import { authenticate } from "../domain/authenticate.js";
import { bulkRegisterAffiliates } from "../domain/bulk-register-affiliates.js";
import { authenticateConsoleSession, closeConsoleSession, openConsoleSession } from "../domain/console-sessions.js";
import { listPartnershipsPage } from "../domain/list-partnerships.js";
import { deletePayoutMethod, getPayoutMethod, revealPayoutMethods, setPayoutMethod } from "../domain/payout-methods.js";
import { getPublishableKeys, rotatePublishableKeys } from "../domain/products.js";
import { registerAffiliate } from "../domain/register-affiliate.js";
import { resolveAttribution } from "../domain/resolve-attribution.js";
import { resolveReferralLink } from "../domain/resolve-referral-link.js";
import type { PublishableKeys, Registration } from "../domain/types.js";
import { updatePartnership } from "../domain/update-partnership.js";
import { updateProgram } from "../domain/update-program.js";
import { countPartnerships, getPartnershipOrThrow, getPartnershipsByIds } from "../store/partnerships.js";
import { getProgramOrThrow } from "../store/programs.js";

export interface PartnersServiceDeps {
  sql: Sql;
  /** Seals affiliates' payout details at rest (PAYOUT_DETAILS_ENCRYPTION_KEY). */
  payoutSealing: SealingKey;
  pageTokens: PageTokens;
  /** The least time a sign-in request takes (affiliate-login.ts); tests shorten it. */
  loginAnswerFloorMs?: number;
}

const registrationFromProto = (registration: AffiliateRegistration | undefined): Registration => ({
  email: registration?.email ?? "",
  name: registration?.name,
  referralCode: registration?.referralCode,
  sponsorReferralCode: registration?.sponsorReferralCode,
  externalId: registration?.externalId,
});

const issuedTokenToProto = (issued: { token: string; expiresAt: Date }) => ({
  token: issued.token,
  expiresAt: timestampFromDate(issued.expiresAt),
});

const publishableKeysToProto = (keys: PublishableKeys) => ({
  publishableKey: keys.publishableKey,
  testPublishableKey: keys.testPublishableKey,
  createdAt: timestampFromDate(keys.createdAt),
});

/** Thin handlers: decode, call one use case, encode. Errors are mapped by the server's interceptor. */
export function createPartnersService({
  sql,
  pageTokens,
  loginAnswerFloorMs,
  payoutSealing,
}: PartnersServiceDeps): ServiceImpl<typeof PartnersService> {
  const methods = { sql, payoutSealing };
  return {
    async authenticate(req) {
      const key = await authenticate(sql, req.apiKey);
      return { productId: key.productId, mode: keyModeToProto[key.mode] };
    },

    async getPublishableKeys(req) {
      return { keys: publishableKeysToProto(await getPublishableKeys(sql, req.productId)) };
    },

    async rotatePublishableKeys(req) {
      return { keys: publishableKeysToProto(await rotatePublishableKeys(sql, req.productId)) };
    },

    async resolveReferralLink(req) {
      const link = await resolveReferralLink(sql, req.referralCode);
      return { ...link, referralUrlTemplate: link.referralUrlTemplate ?? "" };
    },

    async getProgram(req) {
      return { program: programToProto(await getProgramOrThrow(sql, req.productId)) };
    },

    async updateProgram(req) {
      const program = await updateProgram(sql, req.productId, programChangesFromProto(req));
      return { program: programToProto(program) };
    },

    async registerAffiliate(req) {
      const result = await registerAffiliate(sql, req.productId, registrationFromProto(req.registration), {
        notify: req.notify,
      });
      return { outcome: outcomeToProto[result.outcome], partnership: partnershipToProto(result.partnership) };
    },

    async bulkRegisterAffiliates(req) {
      const results = await bulkRegisterAffiliates(sql, req.productId, req.registrations.map(registrationFromProto), {
        notify: req.notify,
      });
      return {
        results: results.map((entry) =>
          create(BulkRegistrationResultSchema, {
            email: entry.email,
            result:
              "error" in entry
                ? { case: "error", value: entry.error }
                : {
                    case: "registered",
                    value: { outcome: outcomeToProto[entry.outcome], partnershipId: entry.partnershipId },
                  },
          }),
        ),
      };
    },

    async listPartnerships(req) {
      const page = await listPartnershipsPage(sql, pageTokens, {
        productId: req.productId,
        status: enumFilter(statusToProto, req.status),
        externalId: req.externalId,
        email: req.email,
        referralCode: req.referralCode,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { partnerships: page.partnerships.map(partnershipToProto), nextPageToken: page.nextPageToken };
    },

    async getPartnership(req) {
      return { partnership: partnershipToProto(await getPartnershipOrThrow(sql, req.productId, req.partnershipId)) };
    },

    async updatePartnershipStatus(req) {
      const status = fromProtoEnum(statusToProto, req.status);
      if (!status || status === "pending") {
        throw DomainError.invalidField("status", "Status must be active, rejected or removed");
      }
      const partnership = await updatePartnership(sql, req.productId, req.partnershipId, { status });
      return { partnership: partnershipToProto(partnership) };
    },

    async updatePartnership(req) {
      const status =
        req.status === PartnershipStatusProto.UNSPECIFIED ? undefined : fromProtoEnum(statusToProto, req.status);
      if (status === "pending" || (req.status !== PartnershipStatusProto.UNSPECIFIED && status === undefined)) {
        throw DomainError.invalidField("status", "Status must be active, rejected or removed");
      }
      const change = req.commissionOverrideChange;
      const commissionOverride =
        change.case === "setCommissionOverride"
          ? commissionOverrideFromProto(change.value)
          : change.case === "clearCommissionOverride" && change.value
            ? null
            : undefined;
      const externalIdChange = req.externalIdChange;
      const externalId =
        externalIdChange.case === "setExternalId"
          ? externalIdChange.value
          : externalIdChange.case === "clearExternalId" && externalIdChange.value
            ? null
            : undefined;
      if (status === undefined && commissionOverride === undefined && externalId === undefined) {
        throw DomainError.invalidField(
          "status",
          "Nothing to change: give a status, a commission override or an external id",
        );
      }
      const partnership = await updatePartnership(sql, req.productId, req.partnershipId, {
        status,
        commissionOverride,
        externalId,
      });
      return { partnership: partnershipToProto(partnership) };
    },

    async batchGetPartnerships(req) {
      if (req.partnershipIds.length > 100) {
        throw DomainError.invalidField("partnership_ids", "At most 100 ids per call");
      }
      const partnerships = await getPartnershipsByIds(sql, req.productId, req.partnershipIds);
      return { partnerships: partnerships.map(partnershipToProto) };
    },

    async countPartnerships(req) {
      const status = enumFilter(statusToProto, req.status);
      return { count: BigInt(await countPartnerships(sql, req.productId, status)) };
    },

    async openConsoleSession(req) {
      return issuedTokenToProto(await openConsoleSession(sql, req.productId, req.ttlSeconds));
    },

    async authenticateConsoleSession(req) {
      const found = await authenticateConsoleSession(sql, req.token);
      return { productId: found.productId, expiresAt: timestampFromDate(found.expiresAt) };
    },

    async closeConsoleSession(req) {
      await closeConsoleSession(sql, req.token);
      return {};
    },

    async mintAffiliateToken(req) {
      return issuedTokenToProto(await mintAffiliateToken(sql, req.productId, req.partnershipId, req.ttlSeconds));
    },

    async revokeAffiliateTokens(req) {
      return { revokedCount: BigInt(await revokeAffiliateTokens(sql, req.productId, req.partnershipId)) };
    },

    async authenticateAffiliateToken(req) {
      const found = await authenticateAffiliateToken(sql, req.token);
      return {
        productId: found.productId,
        partnershipId: found.partnershipId,
        expiresAt: timestampFromDate(found.expiresAt),
      };
    },

    async requestAffiliateLogin(req) {
      await requestAffiliateLogin(sql, req.productId, req.email, { floorMs: loginAnswerFloorMs });
      return {};
    },

    async issueAffiliateLoginCode(req) {
      const issued = await issueAffiliateLoginCode(sql, req.productId, req.loginId);
      return {
        code: issued.code,
        expiresAt: timestampFromDate(issued.expiresAt),
        partnership: partnershipToProto(issued.partnership),
        programName: issued.programName,
      };
    },

    async exchangeAffiliateLoginCode(req) {
      return issuedTokenToProto(await exchangeAffiliateLoginCode(sql, req.code));
    },

    async setPayoutMethod(req) {
      const partnershipId = req.method?.partnershipId ?? "";
      const details = payoutDetailsFromProto(req.method);
      return { method: payoutMethodToProto(await setPayoutMethod(methods, req.productId, partnershipId, details)) };
    },

    async getPayoutMethod(req) {
      return { method: payoutMethodToProto(await getPayoutMethod(methods, req.productId, req.partnershipId)) };
    },

    async deletePayoutMethod(req) {
      return { deleted: await deletePayoutMethod(methods, req.productId, req.partnershipId) };
    },

    async revealPayoutMethods(req) {
      const revealed = await revealPayoutMethods(methods, req.productId, req.partnershipIds);
      return { methods: revealed.map(payoutMethodToProto) };
    },

    async resolveAttribution(req) {
      const { target } = req;
      if (target.case === undefined || !target.value) {
        throw DomainError.invalidField("target", "A referral code or a partnership id is required");
      }
      const attribution = await resolveAttribution(
        sql,
        req.productId,
        target.case === "referralCode" ? { referralCode: target.value } : { partnershipId: target.value },
      );
      return {
        partnershipId: attribution.partnershipId,
        referralCode: attribution.referralCode,
        status: statusToProto[attribution.status],
        activeSponsorPartnershipId: attribution.activeSponsorPartnershipId ?? "",
        program: programToProto(attribution.program),
        commissionOverride: attribution.commissionOverride
          ? commissionOverrideToProto(attribution.commissionOverride)
          : undefined,
        affiliateEmail: attribution.affiliateEmail ?? "",
      };
    },
  };
}
