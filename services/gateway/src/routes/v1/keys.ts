import type { PartnersService, PublishableKeys } from "@affiliate/proto/partners";
import { ContractViolation } from "@affiliate/rest-shapes/mappers";
import { publishableKeysResponseSchema } from "@affiliate/rest-shapes/schemas/keys";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { defineRoute } from "../../http/define-route.js";

export interface KeysRouteDeps {
  partners: Client<typeof PartnersService>;
}

function publicKeys(keys: PublishableKeys | undefined) {
  if (!keys?.createdAt) throw new ContractViolation("publishable keys missing from the partners response");
  return {
    publishable_key: keys.publishableKey,
    test_publishable_key: keys.testPublishableKey,
    created_at: timestampDate(keys.createdAt).toISOString(),
  };
}

const tags: [string] = ["Keys"];

/**
 * The product's publishable keys (contract section 17): what the page's script tag carries.
 * Secret keys stay with the operator CLI (contract section 2).
 */
export async function keysRoutes(app: FastifyInstance, { partners }: KeysRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/keys/publishable",
    operationId: "getPublishableKeys",
    tags,
    summary: "Read the publishable keys",
    description:
      "Publishable keys (pk_live_…, pk_test_… for sandbox clicks) go in a page's script tag: they record clicks and nothing else, every other route answers them 403. Being public, they can be read again, unlike secret keys.",
    access: "management",
    answers: { 200: { description: "The current pair", schema: publishableKeysResponseSchema } },
    handler: async ({ request }) => ({
      data: publicKeys((await partners.getPublishableKeys({ productId: request.productId })).keys),
    }),
  });

  defineRoute(app, {
    method: "POST",
    url: "/keys/publishable",
    operationId: "rotatePublishableKeys",
    tags,
    summary: "Issue a new pair of publishable keys, revoking the current pair",
    description:
      "The old pair stops recording clicks within a second on every gateway; the secret keys are untouched. Pages must then carry the new key.",
    access: "management",
    answers: { 201: { description: "The new pair", schema: publishableKeysResponseSchema } },
    handler: async ({ request, reply }) => {
      const { keys } = await partners.rotatePublishableKeys({ productId: request.productId });
      return reply.code(201).send({ data: publicKeys(keys) });
    },
  });
}
