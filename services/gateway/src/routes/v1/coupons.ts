import type { IntegrationsService } from "@affiliate/proto/integrations";
import type { PartnersService } from "@affiliate/proto/partners";
import { partnershipIdParamsSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { couponsBodySchema, couponsResponseSchema } from "@affiliate/rest-shapes/schemas/keys";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { defineRoute } from "../../http/define-route.js";

export interface CouponsRouteDeps {
  partners: Client<typeof PartnersService>;
  integrations: Client<typeof IntegrationsService>;
}

const tags: [string] = ["Affiliates"];

/**
 * A partnership's Stripe promotion codes (contract section 17): an invoice or checkout session
 * whose discount uses one is attributed to it (`attribution: "coupon"`), before a visitor's
 * cookie. The partnership is looked up first: another product's id is a 404 like a missing one.
 */
export async function couponsRoutes(app: FastifyInstance, { partners, integrations }: CouponsRouteDeps) {
  defineRoute(app, {
    method: "PUT",
    url: "/affiliates/:id/coupons",
    operationId: "setAffiliateCoupons",
    tags,
    summary: "Map Stripe promotion codes to the affiliate",
    description:
      "Replaces the affiliate's promotion codes. A code another affiliate of the program holds is 409 and nothing changes. Payments from Stripe whose discount uses a mapped code are attributed to this affiliate, before a visitor's cookie (metadata.referral_code set by the merchant still comes first).",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    body: couponsBodySchema,
    answers: {
      200: { description: "The mapping as stored", schema: couponsResponseSchema },
      409: { description: "A code is mapped to another affiliate", schema: errorSchema },
    },
    handler: async ({ params, body, request }) => {
      const productId = request.productId;
      const { partnership } = await partners.getPartnership({ productId, partnershipId: params.id });
      const { codes } = await integrations.setPromotionCodes({
        productId,
        partnershipId: params.id,
        referralCode: partnership?.referralCode ?? "",
        codes: body.codes,
      });
      return { data: { partnership_id: params.id, codes } };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/affiliates/:id/coupons",
    operationId: "getAffiliateCoupons",
    tags,
    summary: "Read the affiliate's Stripe promotion codes",
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    answers: { 200: { description: "The mapping", schema: couponsResponseSchema } },
    handler: async ({ params, request }) => {
      const productId = request.productId;
      await partners.getPartnership({ productId, partnershipId: params.id });
      const { codes } = await integrations.listPromotionCodes({ productId, partnershipId: params.id });
      return { data: { partnership_id: params.id, codes } };
    },
  });
}
