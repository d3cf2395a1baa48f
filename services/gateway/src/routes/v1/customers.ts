import type { Erasure, PrivacyService } from "@affiliate/proto/privacy";
import { ContractViolation, toPublicErasure, toPublicErasureAnswer } from "@affiliate/rest-shapes/mappers";
import { errorSchema, retryAfterHeader } from "@affiliate/rest-shapes/schemas/common";
import {
  eraseCustomerBodySchema,
  eraseCustomerResponseSchema,
  erasureIdParamsSchema,
  erasureListResponseSchema,
  erasureResponseSchema,
  erasureRunningErrorSchema,
  listErasuresQuerySchema,
} from "@affiliate/rest-shapes/schemas/customers";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { defineRoute } from "../../http/define-route.js";

/**
 * How long DELETE /api/v1/customers waits for the erasure to complete. Erasing a big customer
 * (10,000 events) takes a couple of seconds; past this the answer is 503 with the erasure id
 * and the erasure completes in the background.
 */
export const erasureTimeoutMs = 10_000;

export interface CustomersRouteDeps {
  privacy: Client<typeof PrivacyService>;
}

const receiptOf = (response: { erasure?: Erasure }): Erasure => {
  if (!response.erasure) throw new ContractViolation("erasure missing from the privacy response");
  return response.erasure;
};

const tags: [string] = ["Customers"];

/**
 * Erasure of an end-customer (spec 4.11, contract 9a): the privacy service runs it across every
 * owner of personal data and keeps the receipt; the gateway validates and shapes the answers.
 */
export async function customersRoutes(app: FastifyInstance, { privacy }: CustomersRouteDeps) {
  defineRoute(app, {
    method: "DELETE",
    url: "/customers",
    operationId: "eraseCustomer",
    tags,
    summary: "Erase an end-customer's personal data (right to erasure)",
    description:
      "Scoped to the key's product. Tracking events with the email lose customer_email, provider_customer_id, ip and user_agent, their visitor_id becomes an anon_ token and anonymized_at is set; commissions then read customer_email null; the email is replaced by [erased] in audit metadata, refund and commission reasons and stored idempotency outcomes; stored webhook payloads' data.customer_email becomes null; the affiliate profile with that email, when it has a partnership in the product, loses country_last_ip. Amounts, statuses, ids and links are kept. Irreversible: afterwards a refund by email finds nothing (use external_id or commission_id). Idempotent: a repeat answers 0 for what is already erased. The answer comes when every owner has erased and verified; if that takes longer than 10 s, 503 with details.erasure_id and the erasure completes in the background (read its receipt).",
    access: "management",
    body: eraseCustomerBodySchema,
    answers: {
      200: { description: "Erased and verified", schema: eraseCustomerResponseSchema },
      400: { description: "Invalid email or an unknown field, or a body that is not valid JSON" },
      503: {
        description:
          "A service cannot be reached (nothing applied; retry), or the erasure is recorded and completes in the background (details.erasure_id; read the receipt)",
        headers: retryAfterHeader,
        schema: z.union([erasureRunningErrorSchema, errorSchema]),
      },
    },
    handler: async ({ body: { email }, request }) => {
      const response = await privacy.eraseCustomer(
        { productId: request.productId, email },
        { timeoutMs: erasureTimeoutMs },
      );
      return { data: toPublicErasureAnswer(receiptOf(response)) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/customers/erasures",
    operationId: "listErasures",
    tags,
    summary: "List the erasure receipts of an email, newest first",
    description: "At most 100. The receipts never contain the email: the platform keeps only a keyed hash of it.",
    access: "management",
    query: listErasuresQuerySchema,
    answers: {
      200: { description: "The receipts", schema: erasureListResponseSchema },
      400: { description: "Missing or invalid email, or an unknown query parameter" },
    },
    handler: async ({ query: { email }, request }) => {
      const { erasures } = await privacy.listErasures({ productId: request.productId, email });
      return { data: erasures.map(toPublicErasure) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/customers/erasures/:id",
    operationId: "getErasure",
    tags,
    summary: "Read an erasure's receipt",
    description:
      "stores names every store searched, with the records this erasure changed (0 when nothing matched); verified_at is when every owner searched again and found nothing left.",
    access: "management",
    params: erasureIdParamsSchema,
    pathResources: { id: "Erasure" },
    answers: { 200: { description: "The receipt", schema: erasureResponseSchema } },
    handler: async ({ params, request }) => {
      const response = await privacy.getErasure({ productId: request.productId, erasureId: params.id });
      return { data: toPublicErasure(receiptOf(response)) };
    },
  });
}
