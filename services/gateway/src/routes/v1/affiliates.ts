import {
  type Partnership,
  PartnershipStatus,
  type PartnersService,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import {
  ContractViolation,
  commissionOverrideValue,
  partnershipOf,
  statusValue,
  toBulkResult,
  toPage,
  toPublicPartnership,
  toPublicPartnershipDetail,
  toRegistrationBody,
} from "@affiliate/rest-shapes/mappers";
import {
  affiliateTokenResponseSchema,
  mintTokenBodySchema,
  revokeTokensResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliate-api";
import {
  affiliateRegistrationSchema,
  type BulkRegisterResponseBody,
  type BulkResult,
  bulkRegisterBodySchema,
  bulkRegisterResponseSchema,
  listAffiliatesQuerySchema,
  partnershipDetailResponseSchema,
  partnershipIdParamsSchema,
  partnershipListResponseSchema,
  partnershipResponseSchema,
  registerAffiliateBodySchema,
  registerAffiliateResponseSchema,
  updatePartnershipBodySchema,
} from "@affiliate/rest-shapes/schemas/affiliates";
import { badRequestSchema, errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { defineRoute } from "../../http/define-route.js";
import { safeParseStrict } from "../../http/strict-input.js";
import { type PartnershipStats, type PartnershipStatsSource, statsOf } from "../../stats-source.js";

export interface AffiliatesRouteDeps {
  partners: Client<typeof PartnersService>;
  stats: PartnershipStatsSource;
}

/** "email: Invalid email address; name: Too small: ..." for one rejected bulk entry. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/** The email as the entry gave it, so every result can be matched to its entry by the caller. */
function emailGiven(entry: unknown): string {
  const email = typeof entry === "object" && entry !== null ? (entry as { email?: unknown }).email : undefined;
  return typeof email === "string" ? email : "";
}

function summarize(results: readonly BulkResult[]): BulkRegisterResponseBody["summary"] {
  const summary = { total: results.length, created: 0, joined: 0, reactivated: 0, failed: 0 };
  for (const result of results) {
    if (result.success) summary[result.action]++;
    else summary.failed++;
  }
  return summary;
}

const tags: [string] = ["Affiliates"];

/** Partnerships of the key's product: registration (single and bulk), list, read, status changes. */
export async function affiliatesRoutes(app: FastifyInstance, { partners, stats }: AffiliatesRouteDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/affiliates",
    operationId: "registerAffiliate",
    tags,
    summary: "Register one affiliate",
    description:
      "Creates an account for a new email, adds an existing user to the program, or reactivates a removed affiliate.",
    access: "management",
    body: registerAffiliateBodySchema,
    answers: {
      201: { description: "Registered (new account or existing user added)", schema: registerAffiliateResponseSchema },
      200: { description: "A removed affiliate was reactivated", schema: registerAffiliateResponseSchema },
      409: { description: "Already in the program, or the referral code is taken", schema: errorSchema },
    },
    handler: async ({ body: { notify, ...registration }, request, reply }) => {
      const response = await partners.registerAffiliate({ productId: request.productId, registration, notify });
      const body = toRegistrationBody(response);
      return reply.code(response.outcome === RegistrationOutcome.REACTIVATED ? 200 : 201).send(body);
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/affiliates/bulk",
    operationId: "bulkRegisterAffiliates",
    tags,
    summary: "Register up to 100 affiliates",
    description:
      "Each entry is processed independently; the answer is 200 even when some fail (an entry with an unknown field too). A body that breaks the rules (not an array, 0 or over 100 entries) registers nothing.",
    access: "management",
    body: bulkRegisterBodySchema,
    answers: { 200: { description: "One result per entry, in order", schema: bulkRegisterResponseSchema } },
    handler: async ({ body: { affiliates, notify }, request }): Promise<BulkRegisterResponseBody> => {
      const checked = affiliates.map((entry) => safeParseStrict(affiliateRegistrationSchema, entry));
      const registrations = checked.flatMap((entry) => (entry.success ? [entry.data] : []));
      const registered =
        registrations.length > 0
          ? (await partners.bulkRegisterAffiliates({ productId: request.productId, registrations, notify })).results
          : [];
      if (registered.length !== registrations.length) {
        throw new ContractViolation(
          `bulk registration answered ${registered.length} of ${registrations.length} entries`,
        );
      }
      let next = 0;
      const results = checked.map((entry, index): BulkResult => {
        const email = emailGiven(affiliates[index]);
        if (!entry.success) return { email, success: false, error: describeIssues(entry.error) };
        // Checked above: one result per valid entry, in order.
        const result = registered[next++] as (typeof registered)[number];
        return { ...toBulkResult(result), email };
      });
      return { results, summary: summarize(results) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/affiliates",
    operationId: "listAffiliates",
    tags,
    summary: "List partnerships, newest first",
    access: "management",
    query: listAffiliatesQuerySchema,
    answers: {
      200: { description: "One page", schema: partnershipListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const page = await partners.listPartnerships({
        productId: request.productId,
        status: query.status ? statusValue(query.status) : PartnershipStatus.UNSPECIFIED,
        externalId: query.external_id,
        email: query.email,
        referralCode: query.referral_code,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      const ids = page.partnerships.map((partnership) => partnership.id);
      const figures =
        ids.length > 0 ? await stats.statsFor(request.productId, ids) : new Map<string, PartnershipStats>();
      return toPage(
        page.partnerships.map((partnership) => toPublicPartnership(partnership, statsOf(figures, partnership.id))),
        page.nextPageToken,
      );
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/affiliates/:id",
    operationId: "getAffiliate",
    tags,
    summary: "Read one partnership with stats and commission breakdown",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    answers: { 200: { description: "The partnership", schema: partnershipDetailResponseSchema } },
    handler: async ({ params, request }) => {
      const productId = request.productId;
      const partnership = partnershipOf(await partners.getPartnership({ productId, partnershipId: params.id }));
      return { data: toPublicPartnershipDetail(partnership, await stats.breakdownFor(productId, partnership.id)) };
    },
  });

  const withStats = async (productId: string, response: { partnership?: Partnership }) => {
    const partnership = partnershipOf(response);
    const figures = await stats.statsFor(productId, [partnership.id]);
    return { data: toPublicPartnership(partnership, statsOf(figures, partnership.id)) };
  };

  defineRoute(app, {
    method: "PATCH",
    url: "/affiliates/:id",
    operationId: "updateAffiliateStatus",
    tags,
    summary: "Change a partnership's status and/or its commission override",
    description:
      "Status: pending -> active or rejected; active -> removed; rejected -> active; removed -> active. Anything else is 400. `commission_override` replaces the partnership's own commission terms (fields left out inherit the program's; `null` removes it); it applies to payments recorded afterwards. `external_id` sets your own id for the affiliate (a taken one is 409; `null` removes it). Several given: all apply, or none does. Leaving active revokes the affiliate's tokens for good.",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    body: updatePartnershipBodySchema,
    answers: {
      200: { description: "The partnership after the change", schema: partnershipResponseSchema },
      400: { description: "Validation failed, malformed JSON, or a transition not allowed" },
      409: { description: "The external_id is taken by another affiliate of the program", schema: errorSchema },
    },
    handler: async ({ params, body, request }) => {
      const { commission_override: override, external_id: externalId } = body;
      return withStats(
        request.productId,
        await partners.updatePartnership({
          productId: request.productId,
          partnershipId: params.id,
          status: body.status === undefined ? PartnershipStatus.UNSPECIFIED : statusValue(body.status),
          commissionOverrideChange:
            override === undefined
              ? { case: undefined }
              : override === null
                ? { case: "clearCommissionOverride", value: true }
                : { case: "setCommissionOverride", value: commissionOverrideValue(override) },
          externalIdChange:
            externalId === undefined
              ? { case: undefined }
              : externalId === null
                ? { case: "clearExternalId", value: true }
                : { case: "setExternalId", value: externalId },
        }),
      );
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/affiliates/:id",
    operationId: "removeAffiliate",
    tags,
    summary: "Remove an affiliate from the program (status removed)",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    answers: {
      200: { description: "The partnership after the change", schema: partnershipResponseSchema },
      400: {
        description: "The partnership cannot be removed from its current status ({ error }), or an unknown field",
        schema: badRequestSchema,
      },
    },
    handler: async ({ params, request }) =>
      withStats(
        request.productId,
        await partners.updatePartnershipStatus({
          productId: request.productId,
          partnershipId: params.id,
          status: PartnershipStatus.REMOVED,
        }),
      ),
  });

  defineRoute(app, {
    method: "POST",
    url: "/affiliates/:id/tokens",
    operationId: "mintAffiliateToken",
    tags,
    summary: "Mint a token for the affiliate's own dashboard",
    description:
      "A bearer token (apt_…) that reads this partnership's own data through the affiliate API (/affiliate/v1) and the portal (/portal#token=…), from any origin. Active partnerships only. It dies at expires_at, on DELETE /api/v1/affiliates/{id}/tokens, and when the partnership stops being active (for good: a return to active brings it back to no token). Shown only here; stored as a hash.",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    body: mintTokenBodySchema,
    bodyRequired: false,
    answers: {
      201: { description: "The token", schema: affiliateTokenResponseSchema },
      400: { description: "The partnership is not active ({ error }), a bad ttl_seconds, or an unknown field" },
    },
    handler: async ({ params, body, request, reply }) => {
      const { token, expiresAt } = await partners.mintAffiliateToken({
        productId: request.productId,
        partnershipId: params.id,
        ttlSeconds: body.ttl_seconds,
      });
      if (!expiresAt) throw new ContractViolation("minted token without expires_at");
      return reply.code(201).send({ data: { token, expires_at: timestampDate(expiresAt).toISOString() } });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/affiliates/:id/tokens",
    operationId: "revokeAffiliateTokens",
    tags,
    summary: "Revoke every token of the affiliate",
    description: "Every gateway refuses the revoked tokens within 2 seconds.",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    answers: { 200: { description: "How many live tokens were revoked", schema: revokeTokensResponseSchema } },
    handler: async ({ params, request }) => {
      const { revokedCount } = await partners.revokeAffiliateTokens({
        productId: request.productId,
        partnershipId: params.id,
      });
      return { data: { partnership_id: params.id, revoked_count: Number(revokedCount) } };
    },
  });
}
