import { PartnershipStatus, type PartnersService, RegistrationOutcome } from "@affiliate/proto/partners";
import {
  ContractViolation,
  partnershipOf,
  statusValue,
  toBulkResult,
  toPublicPartnership,
  toPublicPartnershipDetail,
  toRegistrationBody,
} from "@affiliate/rest-shapes/mappers";
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
import { authenticatedErrors, bodyErrors, errorResponses } from "@affiliate/rest-shapes/schemas/common";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { parseOrThrow, pathIdOrThrow } from "../../errors.js";
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

/** Partnerships of the key's product: registration (single and bulk), list, read, status changes. */
export async function affiliatesRoutes(app: FastifyInstance, { partners, stats }: AffiliatesRouteDeps) {
  app.post("/affiliates", async (request, reply) => {
    const { notify, ...registration } = parseOrThrow(registerAffiliateBodySchema, request.body);
    const response = await partners.registerAffiliate({ productId: request.productId, registration, notify });
    const body = toRegistrationBody(response);
    return reply.code(response.outcome === RegistrationOutcome.REACTIVATED ? 200 : 201).send(body);
  });

  app.post("/affiliates/bulk", async (request): Promise<BulkRegisterResponseBody> => {
    const { affiliates, notify } = parseOrThrow(bulkRegisterBodySchema, request.body);
    const checked = affiliates.map((entry) => affiliateRegistrationSchema.safeParse(entry));
    const registrations = checked.flatMap((entry) => (entry.success ? [entry.data] : []));
    const registered =
      registrations.length > 0
        ? (await partners.bulkRegisterAffiliates({ productId: request.productId, registrations, notify })).results
        : [];
    if (registered.length !== registrations.length) {
      throw new ContractViolation(`bulk registration answered ${registered.length} of ${registrations.length} entries`);
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
  });

  app.get("/affiliates", async (request) => {
    const query = parseOrThrow(listAffiliatesQuerySchema, request.query);
    const page = await partners.listPartnerships({
      productId: request.productId,
      status: query.status ? statusValue(query.status) : PartnershipStatus.UNSPECIFIED,
      pageSize: query.limit,
      pageToken: query.cursor ?? "",
    });
    const ids = page.partnerships.map((partnership) => partnership.id);
    const figures = ids.length > 0 ? await stats.statsFor(request.productId, ids) : new Map<string, PartnershipStats>();
    return {
      data: page.partnerships.map((partnership) => toPublicPartnership(partnership, statsOf(figures, partnership.id))),
      pagination: { next_cursor: page.nextPageToken || null, has_more: page.nextPageToken !== "" },
    };
  });

  app.get("/affiliates/:id", async (request) => {
    const id = pathIdOrThrow(partnershipIdParamsSchema, request.params, "Affiliate");
    const productId = request.productId;
    const partnership = partnershipOf(await partners.getPartnership({ productId, partnershipId: id }));
    return { data: toPublicPartnershipDetail(partnership, await stats.breakdownFor(productId, partnership.id)) };
  });

  const updateStatus = async (request: FastifyRequest, status: PartnershipStatus) => {
    const id = pathIdOrThrow(partnershipIdParamsSchema, request.params, "Affiliate");
    const productId = request.productId;
    const partnership = partnershipOf(await partners.updatePartnershipStatus({ productId, partnershipId: id, status }));
    const figures = await stats.statsFor(productId, [partnership.id]);
    return { data: toPublicPartnership(partnership, statsOf(figures, partnership.id)) };
  };

  app.patch("/affiliates/:id", async (request) => {
    const { status } = parseOrThrow(updatePartnershipBodySchema, request.body);
    return updateStatus(request, statusValue(status));
  });

  app.delete("/affiliates/:id", async (request) => updateStatus(request, PartnershipStatus.REMOVED));
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

export const affiliatesPaths: ZodOpenApiPathsObject = {
  "/api/v1/affiliates": {
    post: {
      operationId: "registerAffiliate",
      tags: ["Affiliates"],
      summary: "Register one affiliate",
      description:
        "Creates an account for a new email, adds an existing user to the program, or reactivates a removed affiliate.",
      requestBody: { required: true, ...json(registerAffiliateBodySchema) },
      responses: {
        201: {
          description: "Registered (new account or existing user added)",
          ...json(registerAffiliateResponseSchema),
        },
        200: { description: "A removed affiliate was reactivated", ...json(registerAffiliateResponseSchema) },
        400: errorResponses.badRequest,
        409: { ...errorResponses[409], description: "Already in the program, or the referral code is taken" },
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
    get: {
      operationId: "listAffiliates",
      tags: ["Affiliates"],
      summary: "List partnerships, newest first",
      requestParams: { query: listAffiliatesQuerySchema },
      responses: {
        200: { description: "One page", ...json(partnershipListResponseSchema) },
        400: { ...errorResponses.validation, description: "Bad status, limit outside 1-100, or a cursor not issued" },
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/affiliates/bulk": {
    post: {
      operationId: "bulkRegisterAffiliates",
      tags: ["Affiliates"],
      summary: "Register up to 100 affiliates",
      description:
        "Each entry is processed independently; the answer is 200 even when some fail. A body that breaks the rules (not an array, 0 or over 100 entries) registers nothing.",
      requestBody: { required: true, ...json(bulkRegisterBodySchema) },
      responses: {
        200: { description: "One result per entry, in order", ...json(bulkRegisterResponseSchema) },
        400: errorResponses.badRequest,
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
  },
  "/api/v1/affiliates/{id}": {
    get: {
      operationId: "getAffiliate",
      tags: ["Affiliates"],
      summary: "Read one partnership with stats and commission breakdown",
      requestParams: { path: partnershipIdParamsSchema },
      responses: {
        200: { description: "The partnership", ...json(partnershipDetailResponseSchema) },
        404: errorResponses[404],
        ...authenticatedErrors,
      },
    },
    patch: {
      operationId: "updateAffiliateStatus",
      tags: ["Affiliates"],
      summary: "Change a partnership's status",
      description:
        "Allowed: pending -> active or rejected; active -> removed; rejected -> active; removed -> active. Anything else is 400.",
      requestParams: { path: partnershipIdParamsSchema },
      requestBody: { required: true, ...json(updatePartnershipBodySchema) },
      responses: {
        200: { description: "The partnership after the change", ...json(partnershipResponseSchema) },
        400: {
          ...errorResponses.badRequest,
          description: "Validation failed, malformed JSON, or a transition not allowed",
        },
        404: errorResponses[404],
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
    delete: {
      operationId: "removeAffiliate",
      tags: ["Affiliates"],
      summary: "Remove an affiliate from the program (status removed)",
      requestParams: { path: partnershipIdParamsSchema },
      responses: {
        200: { description: "The partnership after the change", ...json(partnershipResponseSchema) },
        400: { ...errorResponses[400], description: "The partnership cannot be removed from its current status" },
        404: errorResponses[404],
        ...authenticatedErrors,
      },
    },
  },
};
