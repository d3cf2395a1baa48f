import { createDocument, type oas31 } from "zod-openapi";
import { opsPaths } from "./routes/ops.js";
import { affiliatesPaths } from "./routes/v1/affiliates.js";
import { programPaths } from "./routes/v1/program.js";
import { affiliateRegistrationSchema } from "./schemas/affiliates.js";

const description = `The public REST API of the affiliate platform.

Every /api/v1 request carries the product's secret key in \`x-api-key\` (test-mode keys, \`sk_test_\`, are
refused with 403). Reads wrap their payload in \`data\`; registration answers are not wrapped. Errors are
\`{ error, details? }\`; validation failures are \`{ error: "Validation failed", details: { formErrors,
fieldErrors } }\`. Lists are newest first and cursor-paginated; iterate until \`has_more\` is false.
Requests are rate-limited per key (429 with Retry-After); an unreachable service behind the gateway
answers 503 with Retry-After. Every response carries \`x-request-id\`.`;

let document: oas31.OpenAPIObject | undefined;

/**
 * The OpenAPI 3.1 document, built from the same zod schemas the routes validate with, so the
 * documentation cannot drift from the code. Built once per process.
 */
export function openApiDocument(): oas31.OpenAPIObject {
  document ??= createDocument({
    openapi: "3.1.0",
    info: { title: "Affiliate Program API", version: "1.0.0", description },
    security: [{ apiKey: [] }],
    tags: [
      { name: "Affiliates", description: "Affiliates and their partnerships in the program" },
      { name: "Program", description: "The program's settings" },
      { name: "Operations", description: "Probes and documentation; no key needed" },
    ],
    components: {
      securitySchemes: {
        apiKey: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "The product's secret key (sk_…).",
        },
      },
      // Bulk entries are validated one by one, so the bulk body references this schema by name.
      schemas: { AffiliateRegistration: affiliateRegistrationSchema },
    },
    paths: { ...affiliatesPaths, ...programPaths, ...opsPaths },
  });
  return document;
}
