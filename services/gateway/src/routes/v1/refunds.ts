import type { LedgerService, RefundRequestSchema } from "@affiliate/proto/ledger";
import { toPublicRefund } from "@affiliate/rest-shapes/mappers";
import type { ValidationErrorBody } from "@affiliate/rest-shapes/schemas/common";
import {
  keyMismatchMessage,
  type RefundBody,
  refundBodySchema,
  refundConflictSchema,
  refundHeadersSchema,
  refundOutOfRangeErrorSchema,
  refundResponseSchema,
} from "@affiliate/rest-shapes/schemas/refunds";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { HttpError } from "../../errors.js";
import { requestFingerprint } from "../../fingerprint.js";
import { defineRoute } from "../../http/define-route.js";

export interface RefundsRouteDeps {
  ledger: Client<typeof LedgerService>;
}

/** Marks an answer replayed from an earlier request with the same idempotency key. */
const replayedHeader = "idempotent-replayed";

/**
 * The refund a request asks for, or one validation envelope naming every problem: the body's
 * fields and identification rule, the Idempotency-Key header, and a header that differs from the
 * body's key (spec 4.9 rule 4, contract 7). Nothing here reaches the ledger, so a refused request
 * never reserves its key (rule 6).
 */
export function parseRefund(body: unknown, header: unknown): { body: RefundBody; idempotencyKey: string | undefined } {
  const parsed = refundBodySchema.safeParse(body);
  const headers = refundHeadersSchema.safeParse({ "Idempotency-Key": header });
  const details: ValidationErrorBody["details"] = parsed.success
    ? { formErrors: [], fieldErrors: {} }
    : (z.flattenError(parsed.error) as ValidationErrorBody["details"]);
  const keyErrors: string[] = [];
  if (!headers.success) {
    keyErrors.push(...headers.error.issues.map((issue) => `Idempotency-Key header: ${issue.message}`));
  } else if (parsed.success) {
    const [inBody, inHeader] = [parsed.data.idempotency_key, headers.data["Idempotency-Key"]];
    if (inBody !== undefined && inHeader !== undefined && inBody !== inHeader) keyErrors.push(keyMismatchMessage);
  }
  if (keyErrors.length > 0) {
    details.fieldErrors.idempotency_key = [...(details.fieldErrors.idempotency_key ?? []), ...keyErrors];
  }
  if (!parsed.success || keyErrors.length > 0) throw HttpError.validation(details);
  const idempotencyKey = parsed.data.idempotency_key ?? (headers.success ? headers.data["Idempotency-Key"] : undefined);
  return { body: parsed.data, idempotencyKey };
}

type RefundRequestInit = MessageInitShape<typeof RefundRequestSchema>;

/** The ledger's oneof of a validated body: the schema has made sure exactly one applies. */
function identificationOf(body: RefundBody): RefundRequestInit["identification"] {
  if (body.commission_id !== undefined) return { case: "commissionId", value: body.commission_id };
  if (body.external_id !== undefined) return { case: "externalId", value: body.external_id };
  return {
    case: "emailAndAmount",
    value: { email: body.email ?? "", paymentAmountCents: BigInt(body.payment_amount_cents ?? 0) },
  };
}

/**
 * POST /api/v1/refunds (spec 4.9, contract 7): validated here, applied by the ledger, which
 * owns the idempotency keys. A replayed answer is the original body and status, marked with
 * `Idempotent-Replayed: true`.
 */
export async function refundsRoutes(app: FastifyInstance, { ledger }: RefundsRouteDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/refunds",
    operationId: "createRefund",
    tags: ["Refunds"],
    summary: "Record a refund of a tracked payment",
    description:
      "Identify the payment by exactly one of commission_id, external_id, or email plus payment_amount_cents. A full refund (refund_amount_cents omitted, or what remains) voids the commission and its level-2 child; a partial one scales both in proportion. Idempotency: send a key in the body (idempotency_key) or the Idempotency-Key header (equal when both); the same key with the same body (field order, whitespace and where the key travelled do not matter) answers the original response with Idempotent-Replayed: true and refunds nothing more; with another body, 409. A request refused by validation does not reserve its key. Without a key, every partial refund deducts again.",
    access: "management",
    headers: refundHeadersSchema,
    body: refundBodySchema,
    parseBody: (body, request) => parseRefund(body, request.headers["idempotency-key"]),
    answers: {
      200: {
        description: "Applied, or the original answer replayed for a repeated idempotency key",
        headers: z.object({
          "Idempotent-Replayed": z
            .literal("true")
            .optional()
            .meta({ description: "Present when this answers an earlier request with the same key." }),
        }),
        schema: refundResponseSchema,
      },
      400: {
        description:
          "Validation failed (no identification, several, a bad or unknown field, or a header key that differs from the body's), or the body is not valid JSON",
      },
      404: { description: "No payment matches the identifier for this product" },
      409: {
        description:
          "The payment is already fully refunded ({ error, details: { commission_id } }); the email and amount match several payments ({ error: 'ambiguous_payment', details: { message } }); the key was already used with a different body, or its first request is still in progress ({ error })",
        schema: refundConflictSchema,
      },
      422: {
        description: "refund_amount_cents is not > 0, is above the payment, or is above what remains of it",
        schema: refundOutOfRangeErrorSchema,
      },
    },
    handler: async ({ body: { body, idempotencyKey }, request, reply }) => {
      const refund: RefundRequestInit = {
        productId: request.productId,
        identification: identificationOf(body),
        refundAmountCents: body.refund_amount_cents === undefined ? undefined : BigInt(body.refund_amount_cents),
        reason: body.reason,
        idempotencyKey,
        // The parse above proved the body is an object.
        requestFingerprint: requestFingerprint(request.body as Record<string, unknown>),
      };
      const response = await ledger.refund(refund);
      if (response.replayed) reply.header(replayedHeader, "true");
      return { data: toPublicRefund(response.result) };
    },
  });
}
