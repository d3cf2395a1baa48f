import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { type Logger, observeHttpRequest, stringifyExact } from "@affiliate/platform";
import type { IntegrationsService } from "@affiliate/proto/integrations";
import type { LedgerService } from "@affiliate/proto/ledger";
import type { NotifierService } from "@affiliate/proto/notifier";
import type { PartnersService } from "@affiliate/proto/partners";
import type { PayoutsService } from "@affiliate/proto/payouts";
import type { PrivacyService } from "@affiliate/proto/privacy";
import type { Client } from "@connectrpc/connect";
import cors, { type FastifyCorsOptions } from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import { trace } from "@opentelemetry/api";
import fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import {
  authenticate,
  authenticateAffiliate,
  bearerTokenOf,
  type KeyPolicy,
  type ResolveConsoleSession,
} from "./auth/authenticate.js";
import { consoleSessionsWith, credentialFingerprint, type KeyCache } from "./auth/key-cache.js";
import type { GatewayConfig } from "./config.js";
import { errorHandler, HttpError, RateLimitedError } from "./errors.js";
import { EventBudget } from "./event-budget.js";
import { RouteCatalog } from "./http/route-catalog.js";
import { maxBodyDepth, nestsDeeperThan } from "./json-depth.js";
import { type OpenApiDocument, openApiDocument } from "./openapi.js";
import { partnershipLookup } from "./partnership-lookup.js";
import { affiliateApiRoutes } from "./routes/affiliate-api.js";
import { affiliateLoginRoutes } from "./routes/affiliate-login.js";
import {
  addressHasher,
  attributionScriptRoutes,
  clickRoutes,
  loadAttributionScript,
  referralLinkRoutes,
  type ScriptFile,
} from "./routes/attribution.js";
import { opsRoutes, type ReadinessReport } from "./routes/ops.js";
import { affiliatePayoutMethodRoutes, merchantPayoutMethodRoutes } from "./routes/payout-methods.js";
import { loadConsoleFiles, loadPortalFiles, type PortalFiles, portalRoutes } from "./routes/portal.js";
import { stripeReceiverRoutes } from "./routes/stripe-receiver.js";
import { trackingRoutes } from "./routes/tracking.js";
import { affiliatesRoutes } from "./routes/v1/affiliates.js";
import { commissionsRoutes } from "./routes/v1/commissions.js";
import { consoleSessionsRoutes } from "./routes/v1/console-sessions.js";
import { couponsRoutes } from "./routes/v1/coupons.js";
import { customersRoutes } from "./routes/v1/customers.js";
import { integrationsRoutes } from "./routes/v1/integrations.js";
import { keysRoutes } from "./routes/v1/keys.js";
import { payoutFilesRoutes } from "./routes/v1/payout-files.js";
import { payoutsRoutes } from "./routes/v1/payouts.js";
import { programRoutes } from "./routes/v1/program.js";
import { refundsRoutes } from "./routes/v1/refunds.js";
import { statsRoutes } from "./routes/v1/stats.js";
import { webhooksRoutes } from "./routes/v1/webhooks.js";
import { ledgerStats, type PartnershipStatsSource } from "./stats-source.js";
import { TrackCoalescer } from "./track-coalescer.js";

export interface GatewayDeps {
  partners: Client<typeof PartnersService>;
  ledger: Client<typeof LedgerService>;
  payouts: Client<typeof PayoutsService>;
  notifier: Client<typeof NotifierService>;
  privacy: Client<typeof PrivacyService>;
  integrations: Client<typeof IntegrationsService>;
  /** Which services the gateway calls are not ready (GET /readyz). */
  ready: ReadinessReport;
  logger: Logger;
  config: Pick<
    GatewayConfig,
    | "RATE_LIMIT_PER_MINUTE"
    | "TRACKING_RATE_LIMIT_PER_MINUTE"
    | "ACTIVE_AFFILIATES_CACHE_MS"
    | "TRACK_COALESCE_MS"
    | "TRACK_COALESCE_MAX_EVENTS"
    | "TRUST_PROXY"
    | "CLICK_RATE_LIMIT_PER_MINUTE"
    | "CLICK_ADDRESS_HASH_KEY"
  >;
  keyCache: KeyCache;
  /** Where partnership figures come from: the ledger's, unless a test gives another. */
  stats?: PartnershipStatsSource;
  /** The affiliate portal's files: @affiliate/portal's build, unless given others; false: not served. */
  portal?: PortalFiles | false;
  /** The attribution script: @affiliate/attribution-script's build, unless a test gives another. */
  attributionScript?: ScriptFile;
  /** The merchant console's files: @affiliate/console's build, unless given others; false: not served. */
  console?: PortalFiles | false;
}

export const maxBodyBytes = 1024 * 1024;

const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

/** A caller's request id is kept when it is sane, so its logs and ours line up; else a new one. */
function requestIdOf(request: IncomingMessage): string {
  const given = request.headers["x-request-id"];
  return typeof given === "string" && requestIdPattern.test(given) ? given : randomUUID();
}

/**
 * Per credential when one is sent (an API key, or an affiliate token: hashed, raw credentials
 * are never kept), per client address otherwise.
 */
function rateLimitKey(request: FastifyRequest): string {
  const apiKey = request.headers["x-api-key"];
  if (typeof apiKey === "string" && apiKey !== "") return `key:${credentialFingerprint(apiKey)}`;
  const token = bearerTokenOf(request);
  return token !== undefined ? `token:${credentialFingerprint(token)}` : clientAddressKey(request);
}

/** Per client address, whatever the request carries: for routes a credential does not guard. */
const clientAddressKey = (request: FastifyRequest) => `ip:${request.ip}`;

/** The affiliate API's prefix: any origin may call it (contract section 14). */
export const affiliateApiPrefix = "/affiliate/v1";

/**
 * CORS (@fastify/cors) open to any origin, without cookies (so no Allow-Credentials, and `*` is
 * allowed), on every answer of the paths that browsers on other origins call, errors included,
 * so a browser can read a 401: the affiliate API (contract section 14), and the click endpoint,
 * the public program and the script itself, which the browser script uses from merchants' pages
 * (section 17). A preflight is answered in the plugin's onRequest hook, before any key is asked
 * for (it carries none); any other path stays same-origin, its preflight the usual 404.
 */
const openToAnyOrigin = {
  origin: "*",
  credentials: false,
  exposedHeaders: ["x-request-id", "retry-after"],
  maxAge: 600,
  // An OPTIONS on these paths is answered as a preflight whatever it carries (the plugin's strict
  // mode answers 400 to one without Origin or Access-Control-Request-Method).
  strictPreflight: false,
} satisfies FastifyCorsOptions;

const affiliateApiCors: FastifyCorsOptions = {
  ...openToAnyOrigin,
  methods: ["GET", "POST", "PUT", "DELETE"],
  allowedHeaders: ["authorization", "content-type"],
};

/** The routes the browser script calls with a publishable key (and the script), from any merchant's page. */
const scriptPaths = new Set(["/events/click", "/program/public", "/js/v1/affiliate.js"]);
const scriptCors: FastifyCorsOptions = {
  ...openToAnyOrigin,
  methods: ["GET", "POST"],
  allowedHeaders: ["x-api-key", "content-type"],
};

const sameOrigin: FastifyCorsOptions = { origin: false };

function corsOf(request: FastifyRequest): FastifyCorsOptions {
  const path = request.url.split("?", 1)[0] ?? "";
  if (path === affiliateApiPrefix || path.startsWith(`${affiliateApiPrefix}/`)) return affiliateApiCors;
  return scriptPaths.has(path) ? scriptCors : sameOrigin;
}

/** Requests per minute per `keyOf(request)` for every route registered in `scope` afterwards. */
async function rateLimited(scope: FastifyInstance, max: number, keyOf: (request: FastifyRequest) => string) {
  await scope.register(rateLimit, {
    max,
    timeWindow: 60_000,
    keyGenerator: keyOf,
    errorResponseBuilder: (_request, context) => new RateLimitedError(Math.max(1, Math.ceil(context.ttl / 1000))),
  });
}

/**
 * Rate limit and key check for every route registered in `scope` afterwards: the limiter runs
 * first (onRequest), the key is checked in preParsing, before a body is read for an unknown
 * caller. Each scope has its own budget per key: requests per minute, or for tracking an
 * EventBudget, of which each request spends one event on arrival.
 */
async function guard(
  scope: FastifyInstance,
  keyCache: KeyCache,
  policy: KeyPolicy,
  limit: number | EventBudget,
  consoleSessions?: ResolveConsoleSession,
) {
  if (limit instanceof EventBudget) {
    scope.addHook("onRequest", async (request) => limit.spend(rateLimitKey(request), 1));
  } else {
    await rateLimited(scope, limit, rateLimitKey);
  }
  const auth =
    policy === "affiliate" ? authenticateAffiliate(keyCache) : authenticate(keyCache, policy, consoleSessions);
  scope.addHook("preParsing", async (request) => {
    await auth(request);
  });
}

/**
 * The gateway's HTTP server, routes and hooks, ready for `listen` or `inject`. It holds no state
 * of its own beyond the key cache it is given.
 */
export function buildServer(deps: GatewayDeps): FastifyInstance {
  const app = fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request, written below without addresses or headers.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: requestIdOf,
    bodyLimit: maxBodyBytes,
    // request.ip, which the per-address budgets key on: the client's behind the proxies the
    // operator named, the connection's otherwise.
    trustProxy: deps.config.TRUST_PROXY.length > 0 ? deps.config.TRUST_PROXY : false,
    // A path whose percent-encoding is not UTF-8 names nothing: answered by the one error handler.
    frameworkErrors: errorHandler,
  });

  // Every route, as Fastify registers it: the API's own declarations, from which the document is
  // written, and anything else, so a test can tell that nothing escapes them.
  const catalog = new RouteCatalog();
  app.decorate("routeCatalog", catalog);
  app.addHook("onRoute", catalog.record);

  // Bodies are JSON only; anything else is answered 415 instead of reaching validation as text.
  app.removeContentTypeParser("text/plain");
  // A request that carries no body but says it is JSON (a POST to an action, from a client that
  // always sends the header) is read as `{}` (contract section 11); any other body as Fastify
  // reads JSON, refusing prototype and constructor poisoning.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body === "") done(null, {});
    else parseJson(request, body as string, done);
  });
  // Every body, answers and errors alike: sums of cents are bigints, written exactly.
  app.setReplySerializer(stringifyExact);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: "Route not found" }));

  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
    trace.getActiveSpan()?.setAttribute("http.request_id", request.id);
  });
  app.register(cors, { hook: "onRequest", delegator: (request, callback) => callback(null, corsOf(request)) });
  app.addHook("preValidation", async (request) => {
    // A body kept as bytes (the Stripe receiver's) has no depth to check.
    if (!Buffer.isBuffer(request.body) && nestsDeeperThan(request.body, maxBodyDepth)) {
      throw new HttpError(400, { error: `Request body nests deeper than ${maxBodyDepth} levels` });
    }
  });
  app.addHook("onResponse", async (request, reply) => {
    observeHttpRequest({
      method: request.method,
      route: request.routeOptions.url,
      statusCode: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? "(none)",
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      "request completed",
    );
  });

  const { partners, ledger, payouts, privacy } = deps;
  const lookup = partnershipLookup(partners, { activeCountTtlMs: deps.config.ACTIVE_AFFILIATES_CACHE_MS });
  const stats = deps.stats ?? ledgerStats(ledger);

  // Tracking: live and test keys, its own per-key budget, counted in events.
  const trackingBudget = new EventBudget(deps.config.TRACKING_RATE_LIMIT_PER_MINUTE);
  const coalescer =
    deps.config.TRACK_COALESCE_MS > 0
      ? new TrackCoalescer(ledger, {
          maxWaitMs: deps.config.TRACK_COALESCE_MS,
          maxEvents: deps.config.TRACK_COALESCE_MAX_EVENTS,
        })
      : undefined;
  app.register(async (tracking) => {
    await guard(tracking, deps.keyCache, "tracking", trackingBudget);
    await tracking.register(trackingRoutes, {
      ledger,
      coalescer,
      spendMoreEvents: (request, events) => trackingBudget.spend(rateLimitKey(request), events),
    });
  });

  // What records clicks without a secret key (contract section 17): the referral link (no key)
  // and the browser script's click (a publishable key), limited per client address, never per
  // product or key; and the script itself, which is the same file for everyone.
  const hashAddress = addressHasher(deps.config.CLICK_ADDRESS_HASH_KEY);
  app.register(async (clicks) => {
    await rateLimited(clicks, deps.config.CLICK_RATE_LIMIT_PER_MINUTE, clientAddressKey);
    await clicks.register(async (keyed) => {
      const auth = authenticate(deps.keyCache, "click");
      keyed.addHook("preParsing", async (request) => {
        await auth(request);
      });
      await keyed.register(clickRoutes, { ledger, partners, hashAddress });
    });
    await clicks.register(referralLinkRoutes, { partners, ledger, hashAddress });
  });
  app.register(attributionScriptRoutes, { script: deps.attributionScript ?? loadAttributionScript() });

  // The management API: live keys, or a console session opened with one.
  app.register(
    async (v1) => {
      await guard(v1, deps.keyCache, "management", deps.config.RATE_LIMIT_PER_MINUTE, consoleSessionsWith(partners));
      await v1.register(affiliatesRoutes, { partners, stats });
      await v1.register(commissionsRoutes, { ledger, lookup });
      await v1.register(refundsRoutes, { ledger });
      await v1.register(payoutFilesRoutes, { payouts });
      await v1.register(payoutsRoutes, { payouts, lookup });
      await v1.register(merchantPayoutMethodRoutes, { partners });
      await v1.register(programRoutes, { partners });
      await v1.register(statsRoutes, { ledger, lookup });
      await v1.register(webhooksRoutes, { notifier: deps.notifier });
      await v1.register(customersRoutes, { privacy });
      await v1.register(integrationsRoutes, { integrations: deps.integrations });
      await v1.register(keysRoutes, { partners });
      await v1.register(couponsRoutes, { partners, integrations: deps.integrations });
      await v1.register(consoleSessionsRoutes, { partners });
    },
    { prefix: "/api/v1" },
  );

  // The affiliate API: an affiliate token, its own per-token budget; sign-in per client address.
  app.register(
    async (affiliate) => {
      await affiliate.register(async (api) => {
        await guard(api, deps.keyCache, "affiliate", deps.config.RATE_LIMIT_PER_MINUTE);
        await api.register(affiliateApiRoutes, { partners, ledger, payouts });
        await api.register(affiliatePayoutMethodRoutes, { partners });
      });
      await affiliate.register(async (login) => {
        await rateLimited(login, deps.config.RATE_LIMIT_PER_MINUTE, clientAddressKey);
        await login.register(affiliateLoginRoutes, { partners });
      });
    },
    { prefix: affiliateApiPrefix },
  );

  // Stripe's deliveries: no key (the signature is checked by integrations), the body as raw bytes.
  app.register(stripeReceiverRoutes, { integrations: deps.integrations });

  // The affiliate portal's page and assets (contract section 14): no key, its own CSP.
  const portal = deps.portal ?? loadPortalFiles();
  if (portal) app.register(portalRoutes, { files: portal });
  // The merchant console (contract section 19): the same policy; it signs in on the API above.
  const consoleFiles = deps.console ?? loadConsoleFiles();
  if (consoleFiles) app.register(portalRoutes, { files: consoleFiles, path: "/console" });

  // Last: the document describes every route registered before it (and these three).
  let document: OpenApiDocument | undefined;
  app.register(opsRoutes, { ready: deps.ready, document: () => (document ??= openApiDocument(catalog)) });

  return app;
}
