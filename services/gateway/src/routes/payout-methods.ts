import type { PartnersService } from "@affiliate/proto/partners";
import { payoutMethodRequest, toPublicPayoutMethod } from "@affiliate/rest-shapes/mappers";
import { partnershipIdParamsSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import {
  payoutDetailsOfBody,
  payoutMethodResponseSchema,
  setPayoutMethodBodySchema,
} from "@affiliate/rest-shapes/schemas/payout-methods";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { defineRoute } from "../http/define-route.js";

export interface PayoutMethodRouteDeps {
  partners: Client<typeof PartnersService>;
}

const maskNote =
  "Personal details are masked (`a***@example.com`, `DE89**************3000`, `A*** L***`); only the payout export (GET /api/v1/payouts/export) writes them in clear.";

/**
 * The affiliate's payout method (contract section 19), on the affiliate API: set, read and
 * forget it with the affiliate's token. Stored sealed by partners; answered masked.
 */
export async function affiliatePayoutMethodRoutes(app: FastifyInstance, { partners }: PayoutMethodRouteDeps) {
  const tags: [string] = ["Affiliate API"];

  defineRoute(app, {
    method: "GET",
    url: "/payout-method",
    operationId: "getAffiliatePayoutMethod",
    tags,
    summary: "How the affiliate is paid",
    description: maskNote,
    access: "affiliate",
    answers: {
      200: { description: "The method, masked", schema: payoutMethodResponseSchema },
      404: { description: "No payout method set yet" },
    },
    handler: async ({ request }) => {
      const { productId, partnershipId } = request;
      return { data: toPublicPayoutMethod(await partners.getPayoutMethod({ productId, partnershipId })) };
    },
  });

  defineRoute(app, {
    method: "PUT",
    url: "/payout-method",
    operationId: "setAffiliatePayoutMethod",
    tags,
    summary: "Set how the affiliate is paid: PayPal or Wise",
    description: `Replaces any previous method. type paypal: the PayPal account's email. type wise: the account holder's name and an IBAN (checked: country, length, check digits), or an email for Wise to ask for bank details; optionally the currency received and the receiver type. Each field is checked and refused by name. ${maskNote}`,
    access: "affiliate",
    body: setPayoutMethodBodySchema,
    answers: {
      200: { description: "The method as stored, masked", schema: payoutMethodResponseSchema },
      400: {
        description:
          "A field that is missing or wrong (validation envelope, by field), an unknown field or type, or malformed JSON",
      },
    },
    handler: async ({ body, request }) => {
      const { productId, partnershipId } = request;
      const request_ = payoutMethodRequest(productId, partnershipId, payoutDetailsOfBody(body));
      return { data: toPublicPayoutMethod(await partners.setPayoutMethod(request_)) };
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/payout-method",
    operationId: "deleteAffiliatePayoutMethod",
    tags,
    summary: "Forget how the affiliate is paid",
    description:
      "Idempotent: 204 whether or not a method was set. Payouts are then left out of the export until a new one is set.",
    access: "affiliate",
    answers: { 204: { description: "Forgotten" } },
    handler: async ({ request, reply }) => {
      const { productId, partnershipId } = request;
      await partners.deletePayoutMethod({ productId, partnershipId });
      return reply.code(204).send();
    },
  });
}

/** The merchant's read of an affiliate's payout method: masked too. */
export async function merchantPayoutMethodRoutes(app: FastifyInstance, { partners }: PayoutMethodRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/affiliates/:id/payout-method",
    operationId: "getAffiliatePayoutMethodOfPartnership",
    tags: ["Affiliates"],
    summary: "How an affiliate is paid, masked",
    description: `The method the affiliate set in the portal. ${maskNote}`,
    access: "management",
    params: partnershipIdParamsSchema,
    pathResources: { id: "Affiliate" },
    answers: {
      200: { description: "The method, masked", schema: payoutMethodResponseSchema },
      404: { description: "No such affiliate, or it has set no payout method" },
    },
    handler: async ({ params, request }) => {
      const method = await partners.getPayoutMethod({ productId: request.productId, partnershipId: params.id });
      return { data: toPublicPayoutMethod(method) };
    },
  });
}
