import { Writable } from "node:stream";
// As privacy's and payouts' tests do: the ledger has no package entry points, so its build output is imported.
import { CachedPartnersDirectory } from "@affiliate/ledger/rpc/partners-directory";
import * as ledgerServer from "@affiliate/ledger/server";
import * as partnersServer from "@affiliate/partners/server";
import {
  createLogger,
  createSql,
  errorMapping,
  type JobWorker,
  migrate,
  PageTokens,
  SealingKey,
  type Sql,
} from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { IntegrationsService } from "@affiliate/proto/integrations";
import { LedgerService } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import Stripe from "stripe";
import type { FetchedCustomer, Ledger } from "../src/domain/ports.js";
import { providerCustomers } from "../src/domain/provider-customers.js";
import type { ReceivedEvent } from "../src/domain/types.js";
import { commandOf } from "../src/providers/stripe/map-event.js";
import { stripeEventSchema } from "../src/providers/stripe/payloads.js";
import { ledgerOver, programsOver } from "../src/rpc/downstream.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";
import { startApplyWorker } from "../src/worker.js";

/** Every line the service logged, as it would be written: tests look for what must not be in it. */
export const logLines: string[] = [];
const logger = createLogger(
  "integrations-test",
  "debug",
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
);
const errors = { router: { interceptors: [errorMapping(logger)] } };

export interface Harness {
  sql: Sql;
  /** The test's own database (for refuseWrites). */
  databaseUrl: string;
  ledgerSql: Sql;
  integrations: Client<typeof IntegrationsService>;
  /** The service's ErasureOwnerService, as privacy calls it. */
  erasure: Client<typeof ErasureOwnerService>;
  ledger: Client<typeof LedgerService>;
  partners: Client<typeof PartnersService>;
  admin: Client<typeof PartnersAdminService>;
  /** The time the worker and the receiver see; tests move it. */
  now: { value: Date };
  /** Stops the apply worker (a process killed) and starts another; `stopped` leaves none running. */
  restartWorker(options?: { ledger?: (real: Ledger) => Ledger; stopped?: boolean }): Promise<void>;
  /** Applies every due event with the current worker. */
  drain(): Promise<number>;
  /** What reconciliation fetches: set by a test (a local fake of Stripe's events API, or this). */
  eventsSince: (apiKey: string, since: Date) => AsyncIterable<ReceivedEvent>;
  /** What reading a customer from "Stripe" answers (connections with an API key): set by a test. */
  fetchCustomer: (apiKey: string, customerId: string) => Promise<FetchedCustomer>;
  close(): Promise<void>;
}

/**
 * Integrations over an in-memory transport on a fresh database, calling the real ledger and
 * partners (their own schemas in the same database, over in-memory transports).
 */
export async function startHarness(): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase();
  const pool = (name: string) => createSql(database.url, { schema: name, max: 6, applicationName: `${name}-test` });
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
  const ledger = createClient(
    LedgerService,
    createRouterTransport(
      ledgerServer.routes({ sql: ledgerSql, partners: directory, pageTokens, clock: () => new Date() }),
      errors,
    ),
  );
  const now = { value: new Date() };
  const clock = () => now.value;
  const sealing = new SealingKey("test-integrations-encryption-key-0123456789", { salt: "test", info: "secrets" });
  let worker: JobWorker | undefined;
  const harness: Harness = {
    sql,
    databaseUrl: database.url,
    ledgerSql,
    ledger,
    partners,
    admin: createClient(PartnersAdminService, partnersTransport),
    now,
    integrations: undefined as unknown as Client<typeof IntegrationsService>,
    erasure: undefined as unknown as Client<typeof ErasureOwnerService>,
    eventsSince: async function* () {},
    fetchCustomer: async () => ({}),
    async restartWorker(options = {}) {
      await worker?.stop();
      worker = undefined;
      if (options.stopped) return;
      const real = ledgerOver(ledger);
      worker = startApplyWorker({
        sql,
        ledger: options.ledger ? options.ledger(real) : real,
        programs: programsOver(partners),
        clock,
        logger,
        pollMs: 50,
        commandOf: (payload) => commandOf(stripeEventSchema.parse(payload)),
        customers: providerCustomers({
          sql,
          sealing,
          fetchWith: (apiKey, customerId) => harness.fetchCustomer(apiKey, customerId),
        }),
      });
    },
    drain: async () => (worker ? worker.drain() : 0),
    async close() {
      await worker?.stop();
      await Promise.all([sql.end(), ledgerSql.end(), partnersSql.end()]);
      await database.drop();
    },
  };
  const transport = createRouterTransport(
    routes({
      sql,
      sealing,
      clock,
      pageTokens,
      eventsSince: (apiKey, since) => harness.eventsSince(apiKey, since),
      defaultWaitMs: 5000,
    }),
    errors,
  );
  harness.integrations = createClient(IntegrationsService, transport);
  harness.erasure = createClient(ErasureOwnerService, transport);
  await harness.restartWorker();
  return harness;
}

let counter = 0;
export const unique = (tag: string) => `${tag}_${Date.now().toString(36)}${++counter}`;

/** A product (hold 0) with one active affiliate, connected to Stripe; its code and receiver. */
export async function connectedProgram(h: Harness, options: { apiKey?: string } = {}) {
  const { product } = await h.admin.createProduct({ name: unique("product") });
  const productId = product?.id ?? "";
  await h.partners.updateProgram({ productId, holdDays: 0 });
  const { partnership } = await h.partners.registerAffiliate({
    productId,
    registration: { email: `${unique("aff")}@example.com` },
    notify: false,
  });
  const secret = `whsec_${unique("secret").replace(/_/g, "")}`;
  const { connection } = await h.integrations.connectStripe({
    productId,
    webhookSecret: secret,
    apiKey: options.apiKey,
  });
  return {
    productId,
    code: partnership?.referralCode ?? "",
    partnershipId: partnership?.id ?? "",
    connectionId: connection?.id ?? "",
    secret,
  };
}

/** A Stripe event around `object`, shaped as Stripe sends it. */
export function stripeEvent(type: string, object: Record<string, unknown>, options: { livemode?: boolean } = {}) {
  return {
    id: unique("evt"),
    object: "event",
    api_version: "2024-06-20",
    created: Math.floor(Date.now() / 1000),
    livemode: options.livemode ?? true,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    data: { object },
  };
}

/** Delivers `event` as Stripe would: its JSON signed with Stripe's own test header helper. */
export async function deliver(
  h: Harness,
  program: { connectionId: string; secret: string },
  event: unknown,
  options: { timestamp?: number; secret?: string; payload?: string } = {},
) {
  const payload = options.payload ?? JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? program.secret,
    ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
  });
  return h.integrations.receiveStripeEvent({
    connectionId: program.connectionId,
    payload: new TextEncoder().encode(payload),
    signature,
  });
}

/** Fixtures shaped like Stripe's payloads (API version 2024-06-20), with the fields the adapter reads and more. */
export const fixtures = {
  customer: (code: string, email: string) => ({
    id: unique("cus"),
    object: "customer",
    created: Math.floor(Date.now() / 1000) - 60,
    email,
    livemode: true,
    metadata: { referral_code: code },
    name: "Customer",
  }),
  invoice: (customer: { id: string; email: string }, amountCents: number, currency = "usd") => ({
    id: unique("in"),
    object: "invoice",
    amount_due: amountCents,
    amount_paid: amountCents,
    amount_remaining: 0,
    billing_reason: "subscription_create",
    currency,
    customer: customer.id,
    customer_email: customer.email,
    livemode: true,
    metadata: {},
    paid: true,
    payment_intent: unique("pi"),
    status: "paid",
    status_transitions: { paid_at: Math.floor(Date.now() / 1000) - 5 },
    subscription: unique("sub"),
  }),
  /** A dispute of the invoice's charge: `needs_response` when opened, then `won`, `lost` or `warning_closed`. */
  dispute: (
    invoice: { payment_intent: string; currency: string; amount_paid: number },
    status: string,
    id?: string,
  ) => ({
    id: id ?? unique("dp"),
    object: "dispute",
    amount: invoice.amount_paid,
    balance_transactions: [],
    charge: unique("ch"),
    created: Math.floor(Date.now() / 1000) - 30,
    currency: invoice.currency,
    evidence_details: { due_by: Math.floor(Date.now() / 1000) + 7 * 86400, has_evidence: false },
    is_charge_refundable: false,
    livemode: true,
    metadata: {},
    payment_intent: invoice.payment_intent,
    reason: "fraudulent",
    status,
  }),
  charge: (
    invoice: { id: string; payment_intent: string; currency: string; amount_paid: number },
    refunded: number,
  ) => ({
    id: unique("ch"),
    object: "charge",
    amount: invoice.amount_paid,
    amount_captured: invoice.amount_paid,
    amount_refunded: refunded,
    currency: invoice.currency,
    invoice: invoice.id,
    payment_intent: invoice.payment_intent,
    paid: true,
    refunded: refunded === invoice.amount_paid,
    status: "succeeded",
  }),
};
