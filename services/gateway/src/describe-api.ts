import { createLogger } from "@affiliate/platform";
import { IntegrationsService } from "@affiliate/proto/integrations";
import { LedgerService } from "@affiliate/proto/ledger";
import { NotifierService } from "@affiliate/proto/notifier";
import { PartnersService } from "@affiliate/proto/partners";
import { PayoutsService } from "@affiliate/proto/payouts";
import { PrivacyService } from "@affiliate/proto/privacy";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { KeyCache } from "./auth/key-cache.js";
import { type OpenApiDocument, openApiDocument } from "./openapi.js";
import { buildServer } from "./server.js";

/**
 * The OpenAPI document the gateway serves, without a server or a service: the app is built with
 * clients that answer nothing (no route is called), so its routes register and the document is
 * written from their declarations, exactly as `GET /api/v1/openapi.json` answers it. For tools
 * (the OpenAPI lint of `npm run lint`) and clients generated from it.
 */
export async function describeApi(): Promise<OpenApiDocument> {
  const nowhere = createRouterTransport(() => {});
  const app = buildServer({
    partners: createClient(PartnersService, nowhere),
    ledger: createClient(LedgerService, nowhere),
    payouts: createClient(PayoutsService, nowhere),
    notifier: createClient(NotifierService, nowhere),
    privacy: createClient(PrivacyService, nowhere),
    integrations: createClient(IntegrationsService, nowhere),
    ready: async () => [],
    logger: createLogger("gateway-describe", "silent"),
    config: {
      RATE_LIMIT_PER_MINUTE: 1,
      TRACKING_RATE_LIMIT_PER_MINUTE: 1,
      ACTIVE_AFFILIATES_CACHE_MS: 0,
      TRACK_COALESCE_MS: 0,
      TRACK_COALESCE_MAX_EVENTS: 1,
      TRUST_PROXY: [],
      CLICK_RATE_LIMIT_PER_MINUTE: 1,
      CLICK_ADDRESS_HASH_KEY: "describe-api-serves-no-request-so-no-click-is-hashed",
    },
    // The portal's and the console's pages are not operations: the document needs none of their files.
    portal: false,
    console: false,
    keyCache: new KeyCache({
      resolve: async () => {
        throw new Error("describeApi serves no request");
      },
      ttlMs: 0,
    }),
  });
  try {
    await app.ready();
    return openApiDocument(app.routeCatalog);
  } finally {
    await app.close();
  }
}
