import { affiliateRegistrationSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { webhookBodies } from "@affiliate/rest-shapes/schemas/webhooks";
import { createDocument } from "zod-openapi";
import { opsPaths } from "./routes/ops.js";
import { trackingPaths } from "./routes/tracking.js";
import { affiliatesPaths } from "./routes/v1/affiliates.js";
import { commissionsPaths } from "./routes/v1/commissions.js";
import { customersPaths } from "./routes/v1/customers.js";
import { payoutsPaths } from "./routes/v1/payouts.js";
import { programPaths } from "./routes/v1/program.js";
import { refundsPaths } from "./routes/v1/refunds.js";
import { statsPaths } from "./routes/v1/stats.js";
import { webhooksPaths } from "./routes/v1/webhooks.js";

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

export type OpenApiDocument = ReturnType<typeof createDocument>;

let document: OpenApiDocument | undefined;

/**
 * The OpenAPI 3.1 document, built from the same zod schemas the routes validate with, so the
 * documentation cannot drift from the code. Built once per process.
 */
export function openApiDocument(): OpenApiDocument {
  document ??= createDocument({
    openapi: "3.1.0",
    info: { title: "Affiliate Program API", version: "1.0.0", description },
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
      },
      // Bulk entries are validated one by one, so the bulk body references this schema by name.
      schemas: { AffiliateRegistration: affiliateRegistrationSchema },
    },
    paths: {
      ...trackingPaths,
      ...affiliatesPaths,
      ...commissionsPaths,
      ...refundsPaths,
      ...payoutsPaths,
      ...statsPaths,
      ...programPaths,
      ...webhooksPaths,
      ...customersPaths,
      ...opsPaths,
    },
    // Every event a webhook endpoint can receive, with its body: `data` is the resource in the
    // shape of its GET answer (the same schemas and mappers make both).
    webhooks: Object.fromEntries(
      Object.entries(webhookBodies).map(([type, schema]) => [
        type,
        {
          post: {
            summary: type,
            requestBody: { required: true, content: { "application/json": { schema } } },
            responses: { 200: { description: "Any 2xx acknowledges the delivery; anything else is retried." } },
          },
        },
      ]),
    ),
  });
  return document;
}
