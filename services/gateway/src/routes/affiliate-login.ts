import type { PartnersService } from "@affiliate/proto/partners";
import {
  affiliateExchangeBodySchema,
  affiliateLoginAcceptedSchema,
  affiliateLoginBodySchema,
  affiliateTokenResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliate-api";
import { errorSchema, retryAfterHeader } from "@affiliate/rest-shapes/schemas/common";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors.js";
import { defineRoute } from "../http/define-route.js";

export interface AffiliateLoginDeps {
  partners: Client<typeof PartnersService>;
}

const tags: [string] = ["Affiliate API"];

/** What a public route that calls partners can answer beyond its own: its budget, and partners being away. */
const limitedAnswers = {
  429: { description: "Too many requests from this address", schema: errorSchema, headers: retryAfterHeader },
  503: {
    description: "Partners cannot be reached; nothing was applied",
    schema: errorSchema,
    headers: retryAfterHeader,
  },
};

export const loginAcceptedMessage =
  "If this email belongs to an active affiliate of the program, a sign-in link is on its way. It works once, for 15 minutes.";
export const invalidCodeMessage = "Invalid, used or expired sign-in code";

/**
 * Sign-in without the merchant (contract section 14): an emailed one-time link, traded for a
 * token. Public routes (no token yet), rate-limited per client address.
 */
export async function affiliateLoginRoutes(app: FastifyInstance, { partners }: AffiliateLoginDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/login",
    operationId: "requestAffiliateLogin",
    tags,
    summary: "Email a one-time sign-in link",
    description:
      "Always 202, in the same time whether or not the email belongs to an affiliate (nothing tells who is in the program). When it belongs to an active affiliate of the product, an email carries a link to `/portal#code=…`, valid 15 minutes, once; at most one such email per affiliate per minute.",
    access: "public",
    body: affiliateLoginBodySchema,
    answers: {
      202: { description: "Accepted, whatever the email", schema: affiliateLoginAcceptedSchema },
      ...limitedAnswers,
    },
    handler: async ({ body, reply }) => {
      await partners.requestAffiliateLogin({ productId: body.product_id, email: body.email });
      return reply.code(202).send({ data: { status: "accepted", message: loginAcceptedMessage } });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/login/exchange",
    operationId: "exchangeAffiliateLoginCode",
    tags,
    summary: "Trade a sign-in code for a token",
    description: "The code of a sign-in link works once; the token lives 24 hours.",
    access: "public",
    body: affiliateExchangeBodySchema,
    answers: {
      200: { description: "The token", schema: affiliateTokenResponseSchema },
      401: { description: "The code is unknown, used or expired", schema: errorSchema },
      ...limitedAnswers,
    },
    handler: async ({ body }) => {
      try {
        const { token, expiresAt } = await partners.exchangeAffiliateLoginCode({ code: body.code });
        if (!expiresAt) throw new ConnectError("exchange answered no expiry", Code.Internal);
        return { data: { token, expires_at: timestampDate(expiresAt).toISOString() } };
      } catch (error) {
        if (error instanceof ConnectError && error.code === Code.Unauthenticated) {
          throw new HttpError(401, { error: invalidCodeMessage });
        }
        throw error;
      }
    },
  });
}
