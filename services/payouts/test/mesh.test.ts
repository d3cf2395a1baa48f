/**
 * Payouts with the real partners and ledger, in-process on one test database (each service its
 * own schema) and real JetStream between them: the outbox relays publish, the ledger consumes
 * payout.completed, payouts consumes commission.refunded. One merchant's story from payment to
 * clawback.
 */

import { consumePayoutEvents } from "@affiliate/ledger/events/payout-events";
import { CachedPartnersDirectory } from "@affiliate/ledger/rpc/partners-directory";
import * as ledgerServer from "@affiliate/ledger/server";
import * as partnersServer from "@affiliate/partners/server";
import {
  connectNats,
  createSql,
  type DurableConsumer,
  ensureStream,
  errorMapping,
  migrate,
  type NatsConnection,
  newId,
  type OutboxRelay,
  PageTokens,
  type Sql,
  startOutboxRelay,
} from "@affiliate/platform";
import { CommissionStatus, EventType, HoldReason, HoldResolution, LedgerService } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { PayoutAction, PayoutStatus, PayoutsService } from "@affiliate/proto/payouts";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PayoutDeps } from "../src/domain/finish-drafts.js";
import { consumeCommissionRefunds } from "../src/events/commission-refunded.js";
import { ledgerOver, partnersOver } from "../src/rpc/downstream.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";
import { payoutInvariantViolations } from "../src/store/invariants.js";
import { eventually, silentLogger } from "./harness.js";

const errors = { router: { interceptors: [errorMapping(silentLogger)] } };

let database: TestDatabase;
let events: TestNamespace;
let nc: NatsConnection;
const pools: Sql[] = [];
const relays: OutboxRelay[] = [];
const consumers: DurableConsumer[] = [];
let sql: Sql;
let payouts: Client<typeof PayoutsService>;
let ledger: Client<typeof LedgerService>;
let partners: Client<typeof PartnersService>;
let admin: Client<typeof PartnersAdminService>;

beforeAll(async () => {
  database = await createTestDatabase();
  events = createTestNamespace();
  const { namespace } = events;
  const pool = (name: string) => {
    const created = createSql(database.url, { schema: name, max: 4, applicationName: `${name}-test` });
    pools.push(created);
    return created;
  };
  const partnersSql = pool(partnersServer.schema);
  const ledgerSql = pool(ledgerServer.schema);
  sql = pool(schema);
  await migrate(partnersSql, partnersServer.schema, partnersServer.migrationsDirectory);
  await migrate(ledgerSql, ledgerServer.schema, ledgerServer.migrationsDirectory);
  await migrate(sql, schema, migrationsDirectory);

  nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "payouts-mesh-test");
  const js = nc.jetstream();
  const jsm = await nc.jetstreamManager();
  await ensureStream(jsm, { service: "ledger", namespace });
  await ensureStream(jsm, { service: "payouts", namespace });
  const common = { js, namespace, logger: silentLogger };
  relays.push(startOutboxRelay({ ...common, nats: nc, sql: ledgerSql, schema: ledgerServer.schema, pollMs: 100 }));
  relays.push(startOutboxRelay({ ...common, nats: nc, sql, schema, pollMs: 100 }));
  consumers.push(...(await consumePayoutEvents({ ...common, jsm, sql: ledgerSql })));
  consumers.push(await consumeCommissionRefunds({ ...common, jsm, sql }));

  const pageTokens = new PageTokens("test-page-token-secret");
  const partnersTransport = createRouterTransport(partnersServer.routes({ sql: partnersSql, pageTokens }), errors);
  partners = createClient(PartnersService, partnersTransport);
  admin = createClient(PartnersAdminService, partnersTransport);
  const directory = new CachedPartnersDirectory(partners, { ttlMs: 60_000, maxEntries: 1000 });
  const ledgerTransport = createRouterTransport(
    ledgerServer.routes({ sql: ledgerSql, partners: directory, pageTokens, clock: () => new Date() }),
    errors,
  );
  ledger = createClient(LedgerService, ledgerTransport);
  const deps: PayoutDeps = {
    sql,
    ledger: ledgerOver(ledger),
    partners: partnersOver(partners, admin),
    logger: silentLogger,
    clock: () => new Date(),
  };
  payouts = createClient(PayoutsService, createRouterTransport(routes({ ...deps, pageTokens }), errors));
});

afterAll(async () => {
  for (const consumer of consumers) await consumer.stop();
  for (const relay of relays) await relay.stop();
  await nc?.close();
  for (const pool of pools) await pool.end();
  await events?.cleanup();
  await database?.drop();
});

it("pays a commission, follows a partial refund, and claws back the rest into the next payout", async () => {
  const { product } = await admin.createProduct({ name: "Acme" });
  const productId = product?.id ?? "";
  await partners.updateProgram({ productId, holdDays: 0, payoutMinimumCents: 1000n });
  const { partnership } = await partners.registerAffiliate({
    productId,
    registration: { email: "affiliate@example.com" },
    notify: false,
  });
  const pay = async (amountCents: bigint) => {
    const { event } = await ledger.track({
      productId,
      type: EventType.PAYMENT,
      referralCode: partnership?.referralCode ?? "",
      amountCents,
    });
    return event?.commissions[0]?.id ?? "";
  };
  const commission = async (commissionId: string) =>
    (await ledger.getCommission({ productId, commissionId })).commission;
  const payout = async (payoutId: string) => (await payouts.getPayout({ productId, payoutId })).payout;

  // A 100.00 payment earns 20.00, approved at once (hold 0 days), and is paid out.
  const first = await pay(10_000n);
  const [created] = (await payouts.generatePayouts({ productId })).payouts;
  const payoutId = created?.id ?? "";
  expect(created).toMatchObject({ status: PayoutStatus.PENDING, amountCents: 2000n, commissionCount: 1n });
  expect((await commission(first))?.payoutId).toBe(payoutId);

  // Half the payment is refunded while the payout is open: it is recalculated.
  await ledger.refund({
    productId,
    identification: { case: "commissionId", value: first },
    refundAmountCents: 5000n,
    requestFingerprint: "a",
  });
  await eventually("the payout recalculated", async () => (await payout(payoutId))?.amountCents === 1000n);

  // Paid: the ledger marks the commission paid when it consumes payout.completed.
  await payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
  await payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID, reference: "tr_42" });
  await eventually("the commission paid", async () => (await commission(first))?.status === CommissionStatus.PAID);

  // The rest is refunded after payment: a clawback waits for the next payout, which nets it.
  await ledger.refund({ productId, identification: { case: "commissionId", value: first }, requestFingerprint: "b" });
  await eventually("the clawback", async () => {
    const rows = await sql`select amount_cents from adjustments where payout_id is null`;
    return rows.length === 1 && rows[0]?.amountCents === -1000;
  });
  const second = await pay(20_000n);
  const [next] = (await payouts.generatePayouts({ productId })).payouts;
  expect(next).toMatchObject({ amountCents: 3000n, adjustmentCents: -1000n, commissionCount: 1n });
  expect((await commission(second))?.payoutId).toBe(next?.id);
  expect(await payout(payoutId)).toMatchObject({
    status: PayoutStatus.COMPLETED,
    amountCents: 1000n,
    gatewayTransferId: "tr_42",
  });

  // Rejecting it hands the commission back to the ledger and the clawback back to the pool.
  await payouts.updatePayout({ productId, payoutId: next?.id ?? "", action: PayoutAction.REJECT });
  await eventually("the commission released", async () => (await commission(second))?.payoutId === "");
  expect(await sql`select payout_id from adjustments`).toEqual([{ payoutId: null }]);
  expect(await payoutInvariantViolations(sql)).toEqual([]);
});

describe("disputes", () => {
  /** A product (hold 0, minimum 0) with one affiliate; pays `amountCents` with an external id. */
  async function programWithAffiliate() {
    const { product } = await admin.createProduct({ name: "Disputed" });
    const productId = product?.id ?? "";
    await partners.updateProgram({ productId, holdDays: 0, payoutMinimumCents: 0n });
    const { partnership } = await partners.registerAffiliate({
      productId,
      registration: { email: `affiliate-${productId}@example.com` },
      notify: false,
    });
    const pay = async (amountCents: bigint) => {
      const externalId = `pi_${newId("evt")}`;
      const { event } = await ledger.track({
        productId,
        type: EventType.PAYMENT,
        referralCode: partnership?.referralCode ?? "",
        amountCents,
        externalId,
      });
      return { externalId, commissionId: event?.commissions[0]?.id ?? "" };
    };
    return { productId, partnershipId: partnership?.id ?? "", pay };
  }
  const dispute = (productId: string, externalId: string, holdId: string) => ({
    productId,
    externalId,
    holdId,
    reason: HoldReason.DISPUTE,
  });
  const lose = (productId: string, externalId: string, holdId: string) =>
    ledger.releasePaymentCommissions({
      ...dispute(productId, externalId, holdId),
      resolution: HoldResolution.REFUNDED,
      refundReason: "dispute lost",
    });

  it("a held commission stays out of a generated payout until its dispute is won", async () => {
    const { productId, pay } = await programWithAffiliate();
    const disputed = await pay(10_000n);
    const other = await pay(5_000n);
    await ledger.holdPaymentCommissions(dispute(productId, disputed.externalId, "dp_held"));
    const [first] = (await payouts.generatePayouts({ productId })).payouts;
    expect(first).toMatchObject({ amountCents: 1000n, commissionCount: 1n });
    const linked = (await ledger.listCommissions({ productId, payoutId: first?.id ?? "", pageSize: 10 })).commissions;
    expect(linked.map((c) => c.id)).toEqual([other.commissionId]);

    await ledger.releasePaymentCommissions({
      ...dispute(productId, disputed.externalId, "dp_held"),
      resolution: HoldResolution.LIFTED,
    });
    const [second] = (await payouts.generatePayouts({ productId })).payouts;
    expect(second).toMatchObject({ amountCents: 2000n, commissionCount: 1n });
    expect(await payoutInvariantViolations(sql)).toEqual([]);
  });

  it("a dispute lost on a paid commission claws it back into the next payout", async () => {
    const { productId, partnershipId, pay } = await programWithAffiliate();
    const paid = await pay(10_000n);
    const [payout] = (await payouts.generatePayouts({ productId })).payouts;
    await payouts.updatePayout({ productId, payoutId: payout?.id ?? "", action: PayoutAction.APPROVE });
    await payouts.updatePayout({
      productId,
      payoutId: payout?.id ?? "",
      action: PayoutAction.MARK_PAID,
      reference: "tr_1",
    });
    await eventually("the commission paid", async () => {
      const { commission } = await ledger.getCommission({ productId, commissionId: paid.commissionId });
      return commission?.status === CommissionStatus.PAID;
    });

    // Opened after the payout: nothing to hold (the money went out); lost: a clawback of all of it.
    const held = await ledger.holdPaymentCommissions(dispute(productId, paid.externalId, "dp_paid"));
    expect(held.commissions.map((c) => c.holdReason)).toEqual([HoldReason.UNSPECIFIED]);
    const lost = await lose(productId, paid.externalId, "dp_paid");
    expect(Number(lost.refund?.refundAmountCents)).toBe(10_000);
    // Redelivered: nothing more.
    expect((await lose(productId, paid.externalId, "dp_paid")).replayed).toBe(true);
    await eventually("the clawback", async () => {
      const rows = await sql`select amount_cents from adjustments where partnership_id = ${partnershipId}`;
      return rows.length === 1 && rows[0]?.amountCents === -2000;
    });

    const next = await pay(30_000n);
    const [nextPayout] = (await payouts.generatePayouts({ productId })).payouts;
    expect(nextPayout).toMatchObject({ amountCents: 4000n, adjustmentCents: -2000n, commissionCount: 1n });
    const { commission } = await ledger.getCommission({ productId, commissionId: next.commissionId });
    expect(commission?.payoutId).toBe(nextPayout?.id);
    expect(await payoutInvariantViolations(sql)).toEqual([]);
  });

  it("disputes opened while payouts are generated: each commission is in a payout or held, never both, never lost", async () => {
    const { productId, pay } = await programWithAffiliate();
    const payments: { externalId: string; commissionId: string }[] = [];
    for (let i = 0; i < 10; i++) payments.push(await pay(BigInt(1000 * (i + 1))));
    const [generated] = await Promise.all([
      payouts.generatePayouts({ productId }),
      ...payments.map((p, i) => ledger.holdPaymentCommissions(dispute(productId, p.externalId, `dp_race_${i}`))),
    ]);
    const linked = new Set(
      (
        await Promise.all(
          generated.payouts.map(
            async (payout) =>
              (
                await ledger.listCommissions({ productId, payoutId: payout.id, pageSize: 100 })
              ).commissions,
          ),
        )
      )
        .flat()
        .map((c) => c.id),
    );
    const read = await Promise.all(
      payments.map(async (p) => (await ledger.getCommission({ productId, commissionId: p.commissionId })).commission),
    );
    for (const commission of read) {
      const held = commission?.holdReason === HoldReason.DISPUTE;
      expect(held !== linked.has(commission?.id ?? "")).toBe(true);
      expect(held ? commission?.payoutId : "").toBe("");
    }
    // The payout holds exactly the commissions linked to it, at their amounts.
    const expected = read.filter((c) => linked.has(c?.id ?? "")).reduce((sum, c) => sum + (c?.amountCents ?? 0n), 0n);
    expect(generated.payouts.reduce((sum, p) => sum + p.amountCents, 0n)).toBe(expected);

    // Every dispute lost: held commissions are voided; those in the (open) payout are taken out of it.
    await Promise.all(payments.map((p, i) => lose(productId, p.externalId, `dp_race_${i}`)));
    for (const payout of generated.payouts) {
      await eventually("the payout recalculated", async () => {
        const { payout: now } = await payouts.getPayout({ productId, payoutId: payout.id });
        return now?.amountCents === 0n;
      });
    }
    expect(await payoutInvariantViolations(sql)).toEqual([]);
  });
});
