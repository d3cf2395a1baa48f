import * as integrationsServer from "@affiliate/integrations/server";
import { consumePayoutEvents } from "@affiliate/ledger/events/payout-events";
import { CachedPartnersDirectory } from "@affiliate/ledger/rpc/partners-directory";
import * as ledgerServer from "@affiliate/ledger/server";
import * as notifierServer from "@affiliate/notifier/server";
import * as partnersServer from "@affiliate/partners/server";
import { consumeCommissionRefunds } from "@affiliate/payouts/events/commission-refunded";
import { ledgerOver, partnersOver } from "@affiliate/payouts/rpc/downstream";
import * as payoutsServer from "@affiliate/payouts/server";
import {
  connectNats,
  createLogger,
  createRpcTransport,
  createSql,
  type DurableConsumer,
  ensureStream,
  migrate,
  type NatsConnection,
  type OutboxRelay,
  PageTokens,
  type RpcServer,
  SealingKey,
  type Sql,
  startOutboxRelay,
  startRpcServer,
} from "@affiliate/platform";
import { IntegrationsService } from "@affiliate/proto/integrations";
import { LedgerService } from "@affiliate/proto/ledger";
import { NotifierService } from "@affiliate/proto/notifier";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { PayoutsService } from "@affiliate/proto/payouts";
import { PrivacyService } from "@affiliate/proto/privacy";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { type Client, type ConnectRouter, createClient } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { authenticateWith, KeyCache } from "../../src/auth/key-cache.js";
import { buildServer } from "../../src/server.js";
import { FakePrivacy } from "./fake-privacy.js";

export interface RealMesh {
  app: FastifyInstance;
  /** Direct clients of the services, as any caller other than the gateway would hold them. */
  partners: Client<typeof PartnersService>;
  ledger: Client<typeof LedgerService>;
  payouts: Client<typeof PayoutsService>;
  notifier: Client<typeof NotifierService>;
  /** The integrations schema: no apply worker runs here, so a test writes an event's outcome itself. */
  integrationsSql: Sql;
  /** The ledger's schema, for what no API shows (what a click stored). */
  ledgerSql: Sql;
  /** What reconciliation fetches from "Stripe": nothing unless a test sets it. */
  stripeEventsSince: IntegrationsDeps["eventsSince"];
  /** A new product; returns its id and live key. */
  newProduct(): Promise<{ productId: string; key: string }>;
  /** An HTTP request to the gateway with `key`. */
  call(
    key: string,
    method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT",
    url: string,
    options?: { body?: unknown; payload?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

type IntegrationsDeps = Parameters<typeof integrationsServer.routes>[0];

/**
 * The gateway in front of the real partners, ledger, payouts, notifier and integrations (privacy is its fake), each served by the
 * platform's RPC server (HTTP/2, its interceptors: bad text refused, domain errors mapped) as
 * `npm start` runs them, on a fresh test database with one schema each. By default no NATS: the
 * flows read here (registration, tracking, stats, payouts, webhook endpoints) commit their events
 * to outboxes only. With `payoutEvents`, the ledger and payouts follow each other over real
 * JetStream as in production (their outbox relays publish; the ledger settles commissions on
 * payout.completed, payouts claws back on commission.refunded), so a paid commission's refund
 * becomes an adjustment in the next payout.
 */
export async function startRealMesh(options: { payoutEvents?: boolean } = {}): Promise<RealMesh> {
  const logger = createLogger("gateway-real-mesh-test", "silent");
  const database: TestDatabase = await createTestDatabase();
  const pools: Sql[] = [];
  const servers: RpcServer[] = [];
  const pool = async (schema: string, migrations: string) => {
    const sql = createSql(database.url, { schema, max: 4, applicationName: `${schema}-gateway-test` });
    pools.push(sql);
    await migrate(sql, schema, migrations);
    return sql;
  };
  const serve = async (routes: (router: ConnectRouter) => void) => {
    const server = await startRpcServer({ routes, port: 0, host: "127.0.0.1", logger, readiness: async () => true });
    servers.push(server);
    return createRpcTransport(`http://127.0.0.1:${server.port}`);
  };
  const pageTokens = new PageTokens("test-page-token-secret");
  const clock = () => new Date();

  const partnersTransport = await serve(
    partnersServer.routes({ sql: await pool(partnersServer.schema, partnersServer.migrationsDirectory), pageTokens }),
  );
  const partners = createClient(PartnersService, partnersTransport);
  const admin = createClient(PartnersAdminService, partnersTransport);
  const directory = new CachedPartnersDirectory(partners, { ttlMs: 60_000, maxEntries: 1000 });
  const ledgerSql = await pool(ledgerServer.schema, ledgerServer.migrationsDirectory);
  const ledger = createClient(
    LedgerService,
    await serve(ledgerServer.routes({ sql: ledgerSql, partners: directory, pageTokens, clock })),
  );
  const payoutsSql = await pool(payoutsServer.schema, payoutsServer.migrationsDirectory);
  const payouts = createClient(
    PayoutsService,
    await serve(
      payoutsServer.routes({
        sql: payoutsSql,
        ledger: ledgerOver(ledger),
        partners: partnersOver(partners, admin),
        logger,
        clock,
        pageTokens,
      }),
    ),
  );

  const relays: OutboxRelay[] = [];
  const consumers: DurableConsumer[] = [];
  let nats: { connection: NatsConnection; events: TestNamespace } | undefined;
  if (options.payoutEvents) {
    const connection = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "gateway-real-mesh-test");
    nats = { connection, events: createTestNamespace() };
    const { namespace } = nats.events;
    const js = connection.jetstream();
    const jsm = await connection.jetstreamManager();
    for (const service of ["ledger", "payouts"]) await ensureStream(jsm, { service, namespace });
    const common = { js, namespace, logger, nats: connection };
    relays.push(startOutboxRelay({ ...common, sql: ledgerSql, schema: ledgerServer.schema, pollMs: 100 }));
    relays.push(startOutboxRelay({ ...common, sql: payoutsSql, schema: payoutsServer.schema, pollMs: 100 }));
    consumers.push(...(await consumePayoutEvents({ ...common, jsm, sql: ledgerSql })));
    consumers.push(await consumeCommissionRefunds({ ...common, jsm, sql: payoutsSql }));
  }

  const notifierSql = await pool(notifierServer.schema, notifierServer.migrationsDirectory);
  const notifier = createClient(
    NotifierService,
    await serve(notifierServer.routes({ sql: notifierSql, clock, allowPrivate: false, pageTokens })),
  );

  // Connections and the receiver; events are stored, not applied (no apply worker here:
  // services/integrations/test applies them against the real ledger). A retry or reconciliation
  // waits for outcomes that no worker will write: briefly.
  const integrationsSql = await pool(integrationsServer.schema, integrationsServer.migrationsDirectory);
  const integrations = createClient(
    IntegrationsService,
    await serve(
      integrationsServer.routes({
        sql: integrationsSql,
        sealing: new SealingKey("test-integrations-encryption-key-0123456789", { salt: "test", info: "test" }),
        clock,
        pageTokens,
        eventsSince: (apiKey, since) => mesh.stripeEventsSince(apiKey, since),
        defaultWaitMs: 300,
      }),
    ),
  );

  const keyCache = new KeyCache({ resolve: authenticateWith(partners), ttlMs: 60_000 });
  keyCache.setTrusted(true);
  const app = buildServer({
    partners,
    ledger,
    payouts,
    notifier,
    // The privacy saga needs every owner's erasure RPCs and keys; its in-memory fake stands in.
    privacy: createClient(PrivacyService, new FakePrivacy().transport),
    integrations,
    ready: async () => [],
    logger,
    config: {
      RATE_LIMIT_PER_MINUTE: 1_000_000,
      TRACKING_RATE_LIMIT_PER_MINUTE: 1_000_000,
      CLICK_RATE_LIMIT_PER_MINUTE: 1_000_000,
      CLICK_ADDRESS_HASH_KEY: "gateway-test-click-address-hash-key-0123456789",
      ACTIVE_AFFILIATES_CACHE_MS: 0,
      // Single events coalesced as in production.
      TRACK_COALESCE_MS: 2,
      TRACK_COALESCE_MAX_EVENTS: 100,
      TRUST_PROXY: [],
    },
    keyCache,
  });

  const mesh: RealMesh = {
    app,
    partners,
    ledger,
    payouts,
    notifier,
    integrationsSql,
    ledgerSql,
    stripeEventsSince: async function* () {},
    async newProduct() {
      const { product, keys } = await admin.createProduct({ name: "Acme" });
      return { productId: product?.id ?? "", key: keys?.secretKey ?? "" };
    },
    call(key, method, url, { body, payload, headers = {} } = {}) {
      return app.inject({
        method,
        url,
        headers: { "x-api-key": key, ...headers },
        ...(body !== undefined ? { payload: body as object } : {}),
        ...(payload !== undefined ? { payload } : {}),
      });
    },
    async close() {
      await app.close();
      for (const consumer of consumers) await consumer.stop();
      for (const relay of relays) await relay.stop();
      await nats?.connection.close();
      for (const server of servers) await server.close();
      for (const sql of pools) await sql.end();
      await nats?.events.cleanup();
      await database.drop();
    },
  };
  return mesh;
}
