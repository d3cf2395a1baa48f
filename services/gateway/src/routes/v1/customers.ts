import type { Erasure, PrivacyService } from "@affiliate/proto/privacy";
import { ContractViolation, toPublicErasure, toPublicErasureAnswer } from "@affiliate/rest-shapes/mappers";
import { authenticatedErrors, bodyErrors, errorResponses, errorSchema } from "@affiliate/rest-shapes/schemas/common";
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
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { parseOrThrow, pathIdOrThrow } from "../../errors.js";

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

/**
 * Erasure of an end-customer (spec 4.11, contract 9a): the privacy service runs it across every
 * owner of personal data and keeps the receipt; the gateway validates and shapes the answers.
 */
export async function customersRoutes(app: FastifyInstance, { privacy }: CustomersRouteDeps) {
  app.delete("/customers", async (request) => {
    const { email } = parseOrThrow(eraseCustomerBodySchema, request.body);
    const response = await privacy.eraseCustomer(
      { productId: request.productId, email },
      { timeoutMs: erasureTimeoutMs },
    );
    return { data: toPublicErasureAnswer(receiptOf(response)) };
  });

  app.get("/customers/erasures", async (request) => {
    const { email } = parseOrThrow(listErasuresQuerySchema, request.query);
    const { erasures } = await privacy.listErasures({ productId: request.productId, email });
    return { data: erasures.map(toPublicErasure) };
  });

  app.get("/customers/erasures/:id", async (request) => {
    const id = pathIdOrThrow(erasureIdParamsSchema, request.params, "Erasure");
    const response = await privacy.getErasure({ productId: request.productId, erasureId: id });
    return { data: toPublicErasure(receiptOf(response)) };
  });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

export const customersPaths: ZodOpenApiPathsObject = {
  "/api/v1/customers": {
    delete: {
      operationId: "eraseCustomer",
      tags: ["Customers"],
      summary: "Erase an end-customer's personal data (right to erasure)",
      description:
        "Scoped to the key's product. Tracking events with the email lose customer_email, provider_customer_id, ip and user_agent, their visitor_id becomes an anon_ token and anonymized_at is set; commissions then read customer_email null; the email is replaced by [erased] in audit metadata, refund and commission reasons and stored idempotency outcomes; stored webhook payloads' data.customer_email becomes null; the affiliate profile with that email, when it has a partnership in the product, loses country_last_ip. Amounts, statuses, ids and links are kept. Irreversible: afterwards a refund by email finds nothing (use external_id or commission_id). Idempotent: a repeat answers 0 for what is already erased. The answer comes when every owner has erased and verified; if that takes longer than 10 s, 503 with details.erasure_id and the erasure completes in the background (read its receipt).",
      requestBody: { required: true, ...json(eraseCustomerBodySchema) },
      responses: {
        200: { description: "Erased and verified", ...json(eraseCustomerResponseSchema) },
        400: { ...errorResponses.badRequest, description: "Invalid email, or a body that is not valid JSON" },
        ...authenticatedErrors,
        503: {
          description:
            "A service cannot be reached (nothing applied; retry), or the erasure is recorded and completes in the background (details.erasure_id; read the receipt)",
          headers: errorResponses[503].headers,
          ...json(z.union([erasureRunningErrorSchema, errorSchema])),
        },
        ...bodyErrors,
      },
    },
  },
  "/api/v1/customers/erasures": {
    get: {
      operationId: "listErasures",
      tags: ["Customers"],
      summary: "List the erasure receipts of an email, newest first",
      description: "At most 100. The receipts never contain the email: the platform keeps only a keyed hash of it.",
      requestParams: { query: listErasuresQuerySchema },
      responses: {
        200: { description: "The receipts", ...json(erasureListResponseSchema) },
        400: { ...errorResponses.validation, description: "Missing or invalid email" },
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/customers/erasures/{id}": {
    get: {
      operationId: "getErasure",
      tags: ["Customers"],
      summary: "Read an erasure's receipt",
      description:
        "stores names every store searched, with the records this erasure changed (0 when nothing matched); verified_at is when every owner searched again and found nothing left.",
      requestParams: { path: erasureIdParamsSchema },
      responses: {
        200: { description: "The receipt", ...json(erasureResponseSchema) },
        404: errorResponses[404],
        ...authenticatedErrors,
      },
    },
  },
};
