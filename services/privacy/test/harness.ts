// As payouts' mesh test does: the ledger has no package entry points, so its build output is imported.
import { CachedPartnersDirectory } from "@affiliate/ledger/rpc/partners-directory";
import * as ledgerServer from "@affiliate/ledger/server";
import * as partnersServer from "@affiliate/partners/server";
import { createLogger, createSql, errorMapping, migrate, PageTokens, type Sql } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { EventType, LedgerService } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { PrivacyService } from "@affiliate/proto/privacy";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type ServiceImpl,
} from "@connectrpc/connect";
import { EmailKeys } from "../src/domain/email-keys.js";
import type { ErasureDeps } from "../src/domain/erase-customer.js";
import { erasureOwnerOver } from "../src/rpc/owners.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";

const logger = createLogger("privacy-test", "silent");
const errors = { router: { interceptors: [errorMapping(logger)] } };

/**
 * An in-memory owner standing in for the notifier (its stored deliveries quote emails) behind
 * the real generated ErasureOwnerService: it remembers its counts per erasure, as every owner
 * must, and can be taken down to play an owner outage.
 */
export class NotifierStandIn {
  down = false;
  /** Stored deliveries: the customer each quotes (null once erased). */
  readonly deliveries: { productId: string; email: string | null }[] = [];
  readonly counts = new Map<string, number>();
  readonly client: Client<typeof ErasureOwnerService>;

  constructor() {
    const unavailable = () => new ConnectError("notifier is down", Code.Unavailable);
    const matching = (productId: string, email: string) =>
      this.deliveries.filter((d) => d.productId === productId && d.email === email);
    const service: ServiceImpl<typeof ErasureOwnerService> = {
      eraseCustomer: async ({ productId, email, erasureId }) => {
        if (this.down) throw unavailable();
        const found = matching(productId, email);
        for (const delivery of found) delivery.email = null;
        this.counts.set(erasureId, (this.counts.get(erasureId) ?? 0) + found.length);
        return { stores: [{ store: "webhook_deliveries", records: BigInt(this.counts.get(erasureId) ?? 0) }] };
      },
      findCustomer: async ({ productId, email }) => {
        if (this.down) throw unavailable();
        return { stores: [{ store: "webhook_deliveries", records: BigInt(matching(productId, email).length) }] };
      },
    };
    this.client = createClient(
      ErasureOwnerService,
      createRouterTransport((router) => router.service(ErasureOwnerService, service)),
    );
  }
}

export interface Harness {
  /** The privacy schema's pool. */
  sql: Sql;
  /** The test's own database (for refuseWrites). */
  databaseUrl: string;
  ledgerSql: Sql;
  partnersSql: Sql;
  privacy: Client<typeof PrivacyService>;
  ledger: Client<typeof LedgerService>;
  partners: Client<typeof PartnersService>;
  admin: Client<typeof PartnersAdminService>;
  notifier: NotifierStandIn;
  /** What the saga runs with: the real ledger and partners, the notifier stand-in. */
  deps: ErasureDeps;
  close(): Promise<void>;
}

/**
 * Privacy over an in-memory transport on a fresh database, calling the real ledger and partners
 * (their own schemas in the same database, over in-memory transports) and the notifier stand-in.
 */
export async function startHarness(options: { leaseMs?: number } = {}): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase();
  const pool = (name: string) => createSql(database.url, { schema: name, max: 4, applicationName: `${name}-test` });
  const partnersSql = pool(partnersServer.schema);
  const ledgerSql = pool(ledgerServer.schema);
  const sql = pool(schema);
  await migrate(partnersSql, partnersServer.schema, partnersServer.migrationsDirectory);
  await migrate(ledgerSql, ledgerServer.schema, ledgerServer.migrationsDirectory);
  await migrate(sql, schema, migrationsDirectory);

  const pageTokens = new PageTokens("test-page-token-secret");
  const partnersTransport = createRouterTransport(partnersServer.routes({ sql: partnersSql, pageTokens }), errors);
  const partners = createClient(PartnersService, partnersTransport);
  const directory = new CachedPartnersDirectory(partners, { ttlMs: 60_000, maxEntries: 1000 });
  const ledgerTransport = createRouterTransport(
    ledgerServer.routes({ sql: ledgerSql, partners: directory, pageTokens, clock: () => new Date() }),
    errors,
  );
  const notifier = new NotifierStandIn();
  const deps: ErasureDeps = {
    sql,
    keys: new EmailKeys("test-erasure-hash-key-0123456789abcdef"),
    leaseMs: options.leaseMs ?? 60_000,
    owners: [
      erasureOwnerOver("ledger", createClient(ErasureOwnerService, ledgerTransport), 30_000),
      erasureOwnerOver("partners", createClient(ErasureOwnerService, partnersTransport), 30_000),
      erasureOwnerOver("notifier", notifier.client, 30_000),
    ],
  };
  const privacyTransport = createRouterTransport(routes({ ...deps, logger }), errors);
  return {
    sql,
    databaseUrl: database.url,
    ledgerSql,
    partnersSql,
    privacy: createClient(PrivacyService, privacyTransport),
    ledger: createClient(LedgerService, ledgerTransport),
    partners,
    admin: createClient(PartnersAdminService, partnersTransport),
    notifier,
    deps,
    async close() {
      await Promise.all([sql.end(), ledgerSql.end(), partnersSql.end()]);
      await database.drop();
    },
  };
}

let counter = 0;
export const unique = (tag: string) => `${tag}-${Date.now().toString(36)}-${++counter}`;
export const uniqueEmail = (tag = "cust") => `${unique(tag)}@example.com`;

/** A product with hold 0 and one active affiliate; returns the product id and the affiliate's code. */
export async function newProgram(h: Harness, affiliateEmail = uniqueEmail("aff")) {
  const { product } = await h.admin.createProduct({ name: unique("product") });
  const productId = product?.id ?? "";
  await h.partners.updateProgram({ productId, holdDays: 0 });
  const { partnership } = await h.partners.registerAffiliate({
    productId,
    registration: { email: affiliateEmail },
    notify: false,
  });
  return { productId, code: partnership?.referralCode ?? "", partnershipId: partnership?.id ?? "" };
}

/** A live payment by the customer; returns the payment's level-1 commission id. */
export async function pay(
  h: Harness,
  program: { productId: string; code: string },
  customerEmail: string,
  amountCents = 10_000,
) {
  const { event } = await h.ledger.track({
    productId: program.productId,
    type: EventType.PAYMENT,
    referralCode: program.code,
    amountCents: BigInt(amountCents),
    externalId: unique("ch"),
    customerEmail,
    ip: "203.0.113.7",
    userAgent: "Mozilla/5.0",
    providerCustomerId: unique("cus"),
  });
  return { eventId: event?.id ?? "", commissionId: event?.commissions[0]?.id ?? "" };
}

/** The receipt's stores as a plain record. */
export const storesOf = (erasure: { stores: { store: string; records: bigint }[] } | undefined) =>
  Object.fromEntries((erasure?.stores ?? []).map(({ store, records }) => [store, Number(records)]));
