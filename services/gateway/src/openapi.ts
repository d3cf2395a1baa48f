import { affiliateRegistrationSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { webhookBodies } from "@affiliate/rest-shapes/schemas/webhooks";
import { createDocument } from "zod-openapi";
import type { RouteCatalog } from "./http/route-catalog.js";

const description = `The public REST API of the affiliate platform.

Every /api/v1 request carries the product's secret key in \`x-api-key\` (test-mode keys, \`sk_test_\`, are
refused with 403). The tracking endpoint, \`POST /events\`, takes the live key or the test key; a test key
selects sandbox mode there. Reads wrap their payload in \`data\`; registration answers are not wrapped.
Errors are \`{ error, details? }\`; validation failures are \`{ error: "Validation failed", details: {
formErrors, fieldErrors } }\`; an error with a machine-readable cause carries it in \`details\` (e.g. the 409
of an already refunded payment names its \`commission_id\`). The one exception: an invalid stats \`period\`
answers 400 \`{ data: { error } }\`. Lists are newest first and cursor-paginated; iterate until \`has_more\`
is false. Requests are rate-limited per key (429 with Retry-After); an unreachable service behind the gateway
answers 503 with Retry-After, and nothing was applied; 504 means the outcome is unknown (repeat with the same
Idempotency-Key, or read the resource). Every response carries \`x-request-id\`.`;

/** `commission.created` -> `webhookCommissionCreated`: the operation id of a webhook's delivery. */
const webhookOperationId = (type: string) =>
  `webhook${type.replace(/(^|[._])([a-z])/g, (_match, _separator, letter: string) => letter.toUpperCase())}`;

export type OpenApiDocument = ReturnType<typeof createDocument>;

/**
 * An object a request may carry is strict (contract section 11): the gateway refuses fields its
 * schema does not name, so the document says `additionalProperties: false` for every request
 * object that does not decide otherwise itself (a loose object, a record).
 */
function strictRequestObjects({ jsonSchema, zodSchema, io }: OverrideContext): void {
  const def = zodSchema._zod.def as { type: string; catchall?: unknown };
  if (io === "input" && def.type === "object" && def.catchall === undefined) jsonSchema.additionalProperties = false;
}

type OverrideContext = Parameters<NonNullable<NonNullable<Parameters<typeof createDocument>[1]>["override"]>>[0];

/**
 * The OpenAPI 3.1 document of the routes `catalog` holds: each operation is the route's own
 * declaration (the zod schemas it validates with, its answers), so the document cannot drift
 * from the code. Build it once every route is registered (after the app is ready).
 */
export function openApiDocument(catalog: RouteCatalog): OpenApiDocument {
  return createDocument(
    {
      openapi: "3.1.0",
      info: { title: "Affiliate Program API", version: "1.0.0", description },
      // Relative: the gateway that serves this document.
      servers: [{ url: "/", description: "The gateway serving this document" }],
      security: [{ apiKey: [] }],
      tags: [
        { name: "Tracking", description: "Clicks, signups and payments; live or sandbox" },
        { name: "Affiliates", description: "Affiliates and their partnerships in the program" },
        { name: "Commissions", description: "What affiliates earned, per payment and level" },
        { name: "Refunds", description: "Refunds of tracked payments: commissions voided or scaled down" },
        { name: "Payouts", description: "Approved commissions bundled into transfers to affiliates" },
        { name: "Stats", description: "The program's KPIs and daily series" },
        { name: "Program", description: "The program's settings" },
        { name: "Webhooks", description: "Signed event notifications to the merchant's endpoints" },
        { name: "Customers", description: "Erasure of an end-customer's personal data, and its receipts" },
        {
          name: "Affiliate API",
          description:
            "An affiliate's own program, read with a token the merchant mints for one partnership (POST /api/v1/affiliates/{id}/tokens) or that an emailed sign-in link buys. Any origin may call it (CORS, no cookies); every answer is that partnership's alone, and another partnership's ids are 404.",
        },
        {
          name: "Console",
          description:
            "Sessions of the merchant console (/console): the secret key exchanged for a short-lived bearer token kept in memory",
        },
        { name: "Operations", description: "Probes and documentation; no key needed" },
      ],
      components: {
        securitySchemes: {
          apiKey: {
            type: "apiKey",
            in: "header",
            name: "x-api-key",
            description:
              "The product's secret key (sk_live_…); POST /events also takes the test key (sk_test_…) for sandbox mode.",
          },
          consoleSession: {
            type: "http",
            scheme: "bearer",
            description:
              "A merchant console session (cst_…) in `Authorization: Bearer cst_…`, instead of the key, on the management API: opened with the secret key by POST /api/v1/console/sessions, short-lived, ended by sign-out and by key rotation.",
          },
          affiliateToken: {
            type: "http",
            scheme: "bearer",
            description:
              "An affiliate token (apt_…) in `Authorization: Bearer apt_…`: reads one active partnership's own data. It dies at expiry, on revocation and when the partnership stops being active.",
          },
        },
        // Bulk entries are validated one by one, so the bulk body references this schema by name.
        schemas: { AffiliateRegistration: affiliateRegistrationSchema },
      },
      paths: catalog.paths(),
      // Every event a webhook endpoint can receive, with its body: `data` is the resource in the
      // shape of its GET answer (the same schemas and mappers make both).
      webhooks: Object.fromEntries(
        Object.entries(webhookBodies).map(([type, schema]) => [
          type,
          {
            post: {
              operationId: webhookOperationId(type),
              summary: type,
              requestBody: { required: true, content: { "application/json": { schema } } },
              responses: { 200: { description: "Any 2xx acknowledges the delivery; anything else is retried." } },
            },
          },
        ]),
      ),
    },
    { override: strictRequestObjects },
  );
}
