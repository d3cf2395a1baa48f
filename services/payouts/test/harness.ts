import type { PayoutDetails } from "@affiliate/contract-rules";
import { createLogger, createSql, errorMapping, migrate, newId, PageTokens, type Sql } from "@affiliate/platform";
import {
  type CommissionRefunded,
  CommissionRefundedSchema,
  CommissionSchema,
  CommissionStatus,
  LedgerService,
} from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnershipStatus, PartnersService, WiseReceiverType } from "@affiliate/proto/partners";
import {
  type Payout,
  PayoutApprovedSchema,
  PayoutCompletedSchema,
  PayoutCreatedSchema,
  PayoutRejectedSchema,
  PayoutsService,
} from "@affiliate/proto/payouts";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { create, type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import {
  type Client,
  Code,
  ConnectError,
  type ConnectRouter,
  createClient,
  createRouterTransport,
} from "@connectrpc/connect";
import type { PayoutDeps } from "../src/domain/finish-drafts.js";
import { ledgerOver, partnersOver } from "../src/rpc/downstream.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";
import { payoutInvariantViolations } from "../src/store/invariants.js";

export const silentLogger = createLogger("payouts-test", "silent");
const errors = { router: { interceptors: [errorMapping(silentLogger)] } };

type FakeStatus = "pending" | "approved" | "paid" | "refunded";
const statusToProto: Record<FakeStatus, CommissionStatus> = {
  pending: CommissionStatus.PENDING,
  approved: CommissionStatus.APPROVED,
  paid: CommissionStatus.PAID,
  refunded: CommissionStatus.REFUNDED,
};

export interface FakeCommission {
  id: string;
  productId: string;
  partnershipId: string;
  amountCents: number;
  status: FakeStatus;
  /** "" when in no payout, as on the wire. */
  payoutId: string;
  paymentRefundedCents: number;
}

/**
 * The ledger's payout RPCs over an in-memory map, implemented honestly: a claim links each
 * claim's partnership's approved, unlinked commissions in one synchronous step (atomic in one
 * event loop) and returns every commission linked to the payout ids (idempotent), ReleaseCommissions
 * unlinks what is not paid. Tests can pause calls with hooks to force interleavings.
 */
export class FakeLedger {
  readonly commissions = new Map<string, FakeCommission>();
  /** Awaited before ListPayableBalances answers. */
  beforeBalances: () => Promise<void> = async () => {};
  /** Awaited before a claim links anything; given the call's payout ids. */
  beforeClaim: (payoutIds: string[]) => Promise<void> = async () => {};
  /** Every payout id ReleaseCommissions was asked to unlink. */
  readonly unlinked: string[] = [];
  /** The payout ids of each ReleaseCommissions call, in call order. */
  readonly unlinkCalls: string[][] = [];
  /** How many claims each ClaimCommissions call carried. */
  readonly claimSizes: number[] = [];

  add(productId: string, partnershipId: string, amountCents: number, status: FakeStatus = "approved"): string {
    const id = newId("com");
    this.commissions.set(id, {
      id,
      productId,
      partnershipId,
      amountCents,
      status,
      payoutId: "",
      paymentRefundedCents: 0,
    });
    return id;
  }

  get(id: string): FakeCommission {
    const commission = this.commissions.get(id);
    if (!commission) throw new Error(`no commission ${id}`);
    return commission;
  }

  linkedTo(payoutId: string): string[] {
    return [...this.commissions.values()].filter((c) => c.payoutId === payoutId).map((c) => c.id);
  }

  /** What the ledger does when it consumes payout.completed. */
  settle(payoutId: string): void {
    for (const c of this.commissions.values())
      if (c.payoutId === payoutId && c.status === "approved") c.status = "paid";
  }

  /** What the ledger does when it consumes payout.rejected. */
  unlink(productId: string, payoutId: string): number {
    let unlinked = 0;
    for (const c of this.commissions.values()) {
      if (c.productId === productId && c.payoutId === payoutId && c.status !== "paid") {
        c.payoutId = "";
        unlinked += 1;
      }
    }
    return unlinked;
  }

  /**
   * Refunds a commission to `newAmountCents`, the payment's refunded total becoming
   * `paymentRefundedCents`, and returns the CommissionRefunded event the ledger would publish.
   */
  refund(commissionId: string, change: { newAmountCents: number; paymentRefundedCents: number }): CommissionRefunded {
    const c = this.get(commissionId);
    const before = { ...c };
    c.amountCents = change.newAmountCents;
    c.paymentRefundedCents = change.paymentRefundedCents;
    if (change.newAmountCents === 0) c.status = "refunded";
    return create(CommissionRefundedSchema, {
      id: newId("msg"),
      occurredAt: timestampNow(),
      commission: create(CommissionSchema, {
        id: c.id,
        productId: c.productId,
        partnershipId: c.partnershipId,
        amountCents: BigInt(c.amountCents),
        status: statusToProto[c.status],
        level: 1,
        payoutId: c.payoutId,
      }),
      previousAmountCents: BigInt(before.amountCents),
      newAmountCents: BigInt(c.amountCents),
      previousStatus: statusToProto[before.status],
      clawbackCents: BigInt(before.status === "paid" ? before.amountCents - c.amountCents : 0),
      paymentRefundedCents: BigInt(c.paymentRefundedCents),
    });
  }

  routes(router: ConnectRouter) {
    router.service(LedgerService, {
      listPayableBalances: async ({ productId }) => {
        await this.beforeBalances();
        // Summed as bigints, exactly, as the real ledger sums in SQL.
        const sums = new Map<string, { amount: bigint; count: number }>();
        for (const c of this.commissions.values()) {
          if (c.productId !== productId || c.status !== "approved" || c.payoutId !== "") continue;
          const sum = sums.get(c.partnershipId) ?? { amount: 0n, count: 0 };
          sums.set(c.partnershipId, { amount: sum.amount + BigInt(c.amountCents), count: sum.count + 1 });
        }
        return {
          balances: [...sums].map(([partnershipId, s]) => ({
            partnershipId,
            amountCents: s.amount,
            commissionCount: BigInt(s.count),
          })),
        };
      },
      claimCommissions: async ({ productId, claims }) => {
        if (claims.length > 1000) throw new ConnectError("At most 1000 claims per call", Code.InvalidArgument);
        const payoutIds = claims.map((claim) => claim.payoutId);
        await this.beforeClaim(payoutIds);
        this.claimSizes.push(claims.length);
        const payoutOf = new Map(claims.map((claim) => [claim.partnershipId, claim.payoutId]));
        const all = [...this.commissions.values()].filter((c) => c.productId === productId);
        for (const c of all) {
          const payoutId = payoutOf.get(c.partnershipId);
          if (payoutId && c.status === "approved" && !c.payoutId) c.payoutId = payoutId;
        }
        const wanted = new Set(payoutIds);
        return {
          commissions: all
            .filter((c) => wanted.has(c.payoutId))
            .sort((a, b) => (a.payoutId === b.payoutId ? (a.id < b.id ? -1 : 1) : a.payoutId < b.payoutId ? -1 : 1))
            .map((c) => ({ commissionId: c.id, payoutId: c.payoutId, amountCents: BigInt(c.amountCents) })),
        };
      },
      releaseCommissions: async ({ productId, payoutIds }) => {
        this.unlinkCalls.push(payoutIds);
        this.unlinked.push(...payoutIds);
        const unlinked = payoutIds.reduce((sum, payoutId) => sum + this.unlink(productId, payoutId), 0);
        return { releasedCount: BigInt(unlinked) };
      },
    });
  }
}

/** Partners' program, partnership and product reads over in-memory maps. */
export class FakePartners {
  readonly minimums = new Map<string, number>();
  readonly partnerships = new Map<string, { productId: string; status: PartnershipStatus }>();
  readonly batchSizes: number[] = [];
  /** Payout methods in clear, by partnership, as RevealPayoutMethods answers them. */
  readonly payoutMethods = new Map<string, PayoutDetails>();
  /** How many ids each RevealPayoutMethods call carried. */
  readonly revealSizes: number[] = [];

  product(payoutMinimumCents = 5000): string {
    const id = newId("prd");
    this.minimums.set(id, payoutMinimumCents);
    return id;
  }

  partnership(productId: string, status = PartnershipStatus.ACTIVE): string {
    const id = newId("ptn");
    this.partnerships.set(id, { productId, status });
    return id;
  }

  routes(router: ConnectRouter) {
    router.service(PartnersService, {
      getProgram: ({ productId }) => {
        const minimum = this.minimums.get(productId);
        if (minimum === undefined) throw new ConnectError(`Product ${productId} not found`, Code.NotFound);
        return { program: { productId, payoutMinimumCents: BigInt(minimum), currency: "usd" } };
      },
      revealPayoutMethods: ({ productId, partnershipIds }) => {
        if (partnershipIds.length > 100) throw new ConnectError("At most 100 ids", Code.InvalidArgument);
        this.revealSizes.push(partnershipIds.length);
        return {
          methods: partnershipIds.flatMap((id) => {
            const details = this.payoutMethods.get(id);
            if (!details || this.partnerships.get(id)?.productId !== productId) return [];
            return [
              {
                partnershipId: id,
                details:
                  details.type === "paypal"
                    ? { case: "paypal" as const, value: { email: details.email } }
                    : {
                        case: "wise" as const,
                        value: {
                          accountHolderName: details.accountHolderName,
                          email: details.email ?? "",
                          iban: details.iban ?? "",
                          currency: details.currency ?? "",
                          receiverType:
                            details.receiverType === "institution"
                              ? WiseReceiverType.INSTITUTION
                              : WiseReceiverType.PERSON,
                        },
                      },
              },
            ];
          }),
        };
      },
      batchGetPartnerships: ({ productId, partnershipIds }) => {
        if (partnershipIds.length > 100) throw new ConnectError("At most 100 ids", Code.InvalidArgument);
        this.batchSizes.push(partnershipIds.length);
        return {
          partnerships: partnershipIds.flatMap((id) => {
            const p = this.partnerships.get(id);
            return p && p.productId === productId ? [{ id, productId, status: p.status }] : [];
          }),
        };
      },
    });
    router.service(PartnersAdminService, {
      listProducts: () => ({ products: [...this.minimums.keys()].map((id) => ({ id, name: id })) }),
    });
  }
}

export interface Harness {
  sql: Sql;
  /** The test's own database (for refuseWrites). */
  databaseUrl: string;
  payouts: Client<typeof PayoutsService>;
  ledger: FakeLedger;
  partners: FakePartners;
  /** The use cases' dependencies, for calling domain functions directly. */
  deps: PayoutDeps;
  /** Moves the service's clock (draft recovery looks at ages). */
  clock: { offsetMs: number };
  close(): Promise<void>;
}

/** The payouts service over an in-memory transport on a fresh database, with fake partners and ledger. */
export async function startHarness(): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase();
  const sql = createSql(database.url, { schema, max: 8, applicationName: "payouts-test" });
  await migrate(sql, schema, migrationsDirectory);
  const ledger = new FakeLedger();
  const partners = new FakePartners();
  const ledgerTransport = createRouterTransport((router) => ledger.routes(router), errors);
  const partnersTransport = createRouterTransport((router) => partners.routes(router), errors);
  const clock = { offsetMs: 0 };
  const deps: PayoutDeps = {
    sql,
    ledger: ledgerOver(createClient(LedgerService, ledgerTransport)),
    partners: partnersOver(
      createClient(PartnersService, partnersTransport),
      createClient(PartnersAdminService, partnersTransport),
    ),
    logger: silentLogger,
    clock: () => new Date(Date.now() + clock.offsetMs),
  };
  const transport = createRouterTransport(
    routes({ ...deps, pageTokens: new PageTokens("test-page-token-secret") }),
    errors,
  );
  return {
    sql,
    databaseUrl: database.url,
    payouts: createClient(PayoutsService, transport),
    ledger,
    partners,
    deps,
    clock,
    async close() {
      await sql.end();
      await database.drop();
    },
  };
}

/** The offending payouts of THE INVARIANT query: empty when healthy. */
export const invariantViolations = (h: Harness) => payoutInvariantViolations(h.sql);

const eventSchemas: Record<string, DescMessage> = {
  "payouts.payout.created": PayoutCreatedSchema,
  "payouts.payout.approved": PayoutApprovedSchema,
  "payouts.payout.rejected": PayoutRejectedSchema,
  "payouts.payout.completed": PayoutCompletedSchema,
};

/** The payout events waiting in the outbox (no relay runs in these tests), oldest first. */
export async function outboxEvents(h: Harness, payoutId?: string): Promise<{ subject: string; payout: Payout }[]> {
  const rows = await h.sql<{ subject: string; payload: Buffer }[]>`select subject, payload from outbox order by seq`;
  return rows
    .map((row) => {
      const schema = eventSchemas[row.subject];
      if (!schema) throw new Error(`unexpected subject ${row.subject}`);
      const message = fromBinary(schema, row.payload) as unknown as { payout?: Payout };
      if (!message.payout) throw new Error(`event without payout on ${row.subject}`);
      return { subject: row.subject, payout: message.payout };
    })
    .filter((event) => payoutId === undefined || event.payout.id === payoutId);
}

/** The ConnectError a call failed with, or undefined when it succeeded. */
export const failure = (promise: Promise<unknown>) => promise.then(() => undefined, ConnectError.from);

/**
 * Polls `condition` until it returns a truthy value. The deadline only bounds a broken run; it is
 * generous and never what a test asserts.
 */
export async function eventually<T>(description: string, condition: () => Promise<T> | T): Promise<NonNullable<T>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export { PartnershipStatus };
