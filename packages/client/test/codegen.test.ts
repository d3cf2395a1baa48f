/**
 * The generator of src/generated/operations.ts (scripts/codegen.mjs) on small documents: where
 * int64 fields are found, and how a route's credential, key and paging are read, including the
 * bearer tokens of the affiliate API.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { int64Fields, operationTable } from "../scripts/codegen.mjs";

const int64 = { type: "integer", format: "int64" };

describe("int64Fields", () => {
  it("follows properties, items, records, references and every branch of a union", () => {
    const document = {
      components: {
        schemas: {
          Payout: { type: "object", properties: { amount_cents: int64, count: { type: "integer" } } },
          Nullable: { anyOf: [{ $ref: "#/components/schemas/Payout" }, { type: "null" }] },
        },
      },
    };
    const schema = {
      type: "object",
      properties: {
        data: { type: "array", items: { $ref: "#/components/schemas/Nullable" } },
        totals: { type: "object", additionalProperties: int64 },
        both: { allOf: [{ properties: { a: int64 } }, { properties: { b: int64 } }] },
        plain: { type: "string" },
      },
    };
    expect(int64Fields(document, schema)).toEqual({
      data: { "[]": { amount_cents: true } },
      totals: { "*": true },
      both: { a: true, b: true },
    });
  });

  it("stops at a reference cycle", () => {
    const document = {
      components: {
        schemas: { Node: { type: "object", properties: { sum: int64, next: { $ref: "#/components/schemas/Node" } } } },
      },
    };
    expect(int64Fields(document, { $ref: "#/components/schemas/Node" })).toEqual({ sum: true });
  });
});

describe("operationTable", () => {
  it("reads each route's method, path, credential, Idempotency-Key and paging from the document", () => {
    const document = {
      security: [{ apiKey: [] }],
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
          affiliateToken: { type: "http", scheme: "bearer" },
        },
      },
      paths: {
        "/api/v1/refunds": {
          post: {
            operationId: "createRefund",
            parameters: [{ in: "header", name: "Idempotency-Key", schema: { type: "string" } }],
            responses: { 200: { content: { "application/json": { schema: { properties: { total: int64 } } } } } },
          },
        },
        "/affiliate/v1/commissions": {
          get: {
            operationId: "listMyCommissions",
            security: [{ affiliateToken: [] }],
            parameters: [{ in: "query", name: "cursor", schema: { type: "string" } }],
            responses: {},
          },
        },
        "/healthz": { get: { operationId: "healthz", security: [], responses: {} } },
      },
    };
    expect(operationTable(document)).toEqual({
      createRefund: {
        method: "POST",
        path: "/api/v1/refunds",
        credential: "apiKey",
        idempotencyKey: true,
        paged: false,
        int64: { 200: { total: true } },
      },
      healthz: { method: "GET", path: "/healthz", credential: "none", idempotencyKey: false, paged: false, int64: {} },
      listMyCommissions: {
        method: "GET",
        path: "/affiliate/v1/commissions",
        credential: "bearer",
        idempotencyKey: false,
        paged: true,
        int64: {},
      },
    });
  });

  it("refuses a security scheme it cannot send, rather than send nothing", () => {
    const document = {
      components: { securitySchemes: { oauth: { type: "oauth2", flows: {} } } },
      paths: { "/x": { get: { operationId: "x", security: [{ oauth: [] }], responses: {} } } },
    };
    expect(() => operationTable(document)).toThrow(/Unsupported security scheme/);
  });
});
