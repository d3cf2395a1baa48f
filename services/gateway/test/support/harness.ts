import { Writable } from "node:stream";
import { createLogger, type Logger } from "@affiliate/platform";
import { IntegrationsService } from "@affiliate/proto/integrations";
import { LedgerService } from "@affiliate/proto/ledger";
import { NotifierService } from "@affiliate/proto/notifier";
import { PartnersService } from "@affiliate/proto/partners";
import { PayoutsService } from "@affiliate/proto/payouts";
import { PrivacyService } from "@affiliate/proto/privacy";
import { type Client, createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import { expect } from "vitest";
import type { z } from "zod";
import { authenticateWith, KeyCache } from "../../src/auth/key-cache.js";
import type { ReadinessReport } from "../../src/routes/ops.js";
import { buildServer } from "../../src/server.js";
import type { PartnershipStatsSource } from "../../src/stats-source.js";
import { FakeLedger } from "./fake-ledger.js";
import { FakePartners, type FakeProduct } from "./fake-partners.js";
import { FakePayouts } from "./fake-payouts.js";
import { FakePrivacy } from "./fake-privacy.js";

export interface GatewayOptions {
  /** Where partners RPCs go; the fake partners' in-memory transport unless given. */
  transport?: Transport;
  /** Where ledger RPCs go; the fake ledger's in-memory transport unless given. */
  ledgerTransport?: Transport;
  /** Where payouts RPCs go; the fake payouts service's in-memory transport unless given. */
  payoutsTransport?: Transport;
  notifierTransport?: Transport;
  /** Where privacy RPCs go; the fake privacy service's in-memory transport unless given. */
  privacyTransport?: Transport;
  rateLimitPerMinute?: number;
  trackingRateLimitPerMinute?: number;
  /** Clicks per minute per client address on /r/:code and POST /events/click. */
  clickRateLimitPerMinute?: number;
  /** TRUST_PROXY, parsed: the proxies whose X-Forwarded-For the gateway believes (none unless given). */
  trustProxy?: string[];
  /** POST /events coalescing window; 0 sends each event as its own Track call. */
  trackCoalesceMs?: number;
  /** A coalesced batch is sent once it holds this many events (100 unless given). */
  trackCoalesceMaxEvents?: number;
  stats?: PartnershipStatsSource;
  ready?: ReadinessReport;
  /** Whether the key cache is serving (as when key rotations are followed). */
  trusted?: boolean;
  logger?: Logger;
}

export interface TestGateway {
  app: FastifyInstance;
  fake: FakePartners;
  ledger: FakeLedger;
  payouts: FakePayouts;
  privacy: FakePrivacy;
  partners: Client<typeof PartnersService>;
  keyCache: KeyCache;
  product: FakeProduct;
  /** An active partnership (of another product than `product`), and a live affiliate token of it. */
  affiliate(): { partnershipId: string; token: string };
  /**
   * Sends a request with the product's live key unless `key` says otherwise (null: no header);
   * to the affiliate API, with the affiliate's token as a bearer instead of the key.
   */
  call(
    method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
    url: string,
    options?: { key?: string | null; body?: unknown; headers?: Record<string, string>; payload?: string },
  ): Promise<LightMyRequestResponse>;
}

export function createGateway(options: GatewayOptions = {}): TestGateway {
  const fake = new FakePartners();
  const product = fake.addProduct();
  // Made on first use, in a program of its own: a test of the merchant's routes finds the fake
  // exactly as it left it.
  let affiliateMade: { partnershipId: string; token: string } | undefined;
  const affiliate = () => {
    if (!affiliateMade) {
      const affiliateProduct = fake.addProduct("Affiliate's program");
      const partnershipId = fake.seed(affiliateProduct.productId, "affiliate@example.com").id;
      affiliateMade = { partnershipId, token: fake.mintToken(affiliateProduct.productId, partnershipId) };
    }
    return affiliateMade;
  };
  const ledger = new FakeLedger();
  const payouts = new FakePayouts();
  const privacy = new FakePrivacy();
  const partners = createClient(PartnersService, options.transport ?? fake.transport);
  const keyCache = new KeyCache({ resolve: authenticateWith(partners), ttlMs: 60_000 });
  keyCache.setTrusted(options.trusted ?? true);
  const app = buildServer({
    partners,
    ledger: createClient(LedgerService, options.ledgerTransport ?? ledger.transport),
    payouts: createClient(PayoutsService, options.payoutsTransport ?? payouts.transport),
    // The notifier's routes are tested against the real service (services/notifier/test).
    notifier: createClient(NotifierService, options.notifierTransport ?? createRouterTransport(() => {})),
    privacy: createClient(PrivacyService, options.privacyTransport ?? privacy.transport),
    // The integrations routes are tested against the real service (services/integrations/test).
    integrations: createClient(
      IntegrationsService,
      createRouterTransport(() => {}),
    ),
    ready: options.ready ?? (async () => []),
    logger: options.logger ?? createLogger("gateway-test", "silent"),
    config: {
      RATE_LIMIT_PER_MINUTE: options.rateLimitPerMinute ?? 6000,
      TRACKING_RATE_LIMIT_PER_MINUTE: options.trackingRateLimitPerMinute ?? 60_000,
      CLICK_RATE_LIMIT_PER_MINUTE: options.clickRateLimitPerMinute ?? 6000,
      CLICK_ADDRESS_HASH_KEY: "gateway-test-click-address-hash-key-0123456789",
      ACTIVE_AFFILIATES_CACHE_MS: 5000,
      TRACK_COALESCE_MS: options.trackCoalesceMs ?? 2,
      TRACK_COALESCE_MAX_EVENTS: options.trackCoalesceMaxEvents ?? 100,
      TRUST_PROXY: options.trustProxy ?? [],
    },
    keyCache,
    ...(options.stats ? { stats: options.stats } : {}),
  });
  return {
    app,
    fake,
    ledger,
    payouts,
    privacy,
    partners,
    keyCache,
    product,
    affiliate,
    call(method, url, { key = product.liveKey, body, headers = {}, payload } = {}) {
      const credential =
        key === null
          ? {}
          : url.startsWith("/affiliate/v1/") && key === product.liveKey
            ? { authorization: `Bearer ${affiliate().token}` }
            : { "x-api-key": key };
      return app.inject({
        method,
        url,
        headers: { ...credential, ...headers },
        ...(body !== undefined ? { payload: body as object } : {}),
        ...(payload !== undefined ? { payload } : {}),
      });
    },
  };
}

/** A platform-style logger whose lines are collected, for assertions on what gets logged. */
export function capturingLogger(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: "info" }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join("")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/**
 * Asserts `body` is exactly what `schema` describes: it parses, and parsing strips nothing
 * (an extra field would be dropped by the parse and the comparison would fail).
 */
export function expectBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`response does not match its schema: ${parsed.error.message}`);
  expect(parsed.data).toEqual(body);
  return parsed.data;
}

export { FakeLedger, FakePartners, FakePayouts, FakePrivacy };
