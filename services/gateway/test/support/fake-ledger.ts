import { DomainError, toConnectError } from "@affiliate/platform";
import { StatusSchema } from "@affiliate/proto/common";
import {
  type Commission,
  CommissionAction,
  CommissionReviewSchema,
  CommissionSchema,
  CommissionStatus,
  EventType,
  HoldReason,
  LedgerService,
  type Metrics,
  MetricsSchema,
  type PartnershipStats,
  PartnershipStatsSchema,
  Period,
  type RefundRequest,
  type RefundResult,
  RefundResultSchema,
  ReviewDecision,
  type TrackedEvent,
  TrackedEventSchema,
  type TrackRequest,
} from "@affiliate/proto/ledger";
import type { Partnership } from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ServiceImpl, type Transport } from "@connectrpc/connect";
import { CallLog, serveRecorded } from "./recorded-service.js";

export type LedgerMethod = keyof ServiceImpl<typeof LedgerService>;

const dayMs = 24 * 3600 * 1000;
const periodDays: Partial<Record<Period, number>> = {
  [Period.PERIOD_7D]: 7,
  [Period.PERIOD_30D]: 30,
  [Period.PERIOD_90D]: 90,
  [Period.PERIOD_12M]: 365,
};

/** Metrics whose every field differs, so a test can tell which one went where. */
export function metrics(base: number): Metrics {
  return create(MetricsSchema, {
    clicks: BigInt(base),
    signups: BigInt(base + 1),
    conversions: BigInt(base + 2),
    revenueCents: BigInt(base * 1000 + 3),
    commissionsCents: BigInt(base * 100 + 4),
  });
}

/**
 * An in-memory ledger behind the real generated contract. Tracking is simplified (a code the test
 * made known attributes; a payment earns 20% at level 1, pending), commissions are seeded by the
 * test, and stats answer figures the test sets. It counts calls, records requests, and can be
 * told to fail a method with a given ConnectError.
 */
export class FakeLedger extends CallLog<LedgerMethod> {
  readonly transport: Transport;
  readonly client: Client<typeof LedgerService>;
  readonly commissions = new Map<string, Commission>();
  /** All-time figures per partnership id; ids not here answer zeros, as the ledger does. */
  readonly partnershipStats = new Map<string, PartnershipStats>();
  /** Referral code -> partnership id, for attribution in Track. */
  readonly referralCodes = new Map<string, string>();
  /** What GetStats answers, whatever the period. */
  stats = { current: metrics(10), previous: metrics(5), conversionRate: 0.25 };
  readonly #payments = new Map<string, TrackedEvent>();
  /** A payment's external id -> its level-1 commission id, for refunds by external_id. */
  readonly externalIds = new Map<string, string>();
  /** Refunded cents of each payment, by its level-1 commission id. */
  readonly refunded = new Map<string, bigint>();
  readonly #originalAmounts = new Map<string, bigint>();
  /** Completed refunds by product and idempotency key: the fingerprint and the stored result. */
  readonly #keys = new Map<string, { fingerprint: string; result: RefundResult }>();
  #sequence = 0;
  readonly now = new Date("2025-03-04T05:06:07.890Z");

  constructor() {
    super();
    ({ transport: this.transport, client: this.client } = serveRecorded(LedgerService, this.#implementation(), this));
  }

  /** Sets a partnership's all-time figures, every field different. */
  setFigures(partnershipId: string, base: number): PartnershipStats {
    const figures = create(PartnershipStatsSchema, {
      clicks: BigInt(base),
      conversions: BigInt(base + 1),
      earnedCents: BigInt(base * 100 + 2),
      pendingCount: BigInt(base + 3),
      approvedCount: BigInt(base + 4),
      pendingAmountCents: BigInt(base * 100 + 5),
      approvedAmountCents: BigInt(base * 100 + 6),
    });
    this.partnershipStats.set(partnershipId, figures);
    return figures;
  }

  /** Puts a commission of the partnership straight into the store. */
  seedCommission(
    partnership: Partnership,
    fields: Partial<Omit<Commission, "$typeName" | "$unknown">> = {},
  ): Commission {
    const id = this.#id("com");
    const commission = create(CommissionSchema, {
      id,
      productId: partnership.productId,
      partnershipId: partnership.id,
      amountCents: 2000n,
      status: CommissionStatus.PENDING,
      level: 1,
      holdUntil: timestampFromDate(new Date(this.now.getTime() + 30 * dayMs)),
      createdAt: timestampFromDate(new Date(this.now.getTime() + this.#sequence * 1000)),
      referralCode: partnership.referralCode,
      customerEmail: "buyer@example.com",
      paymentAmountCents: 10_000n,
      eventId: this.#id("evt"),
      ...fields,
    });
    this.commissions.set(commission.id, commission);
    return commission;
  }

  #id(prefix: string): string {
    this.#sequence++;
    return `${prefix}_${String(this.#sequence).padStart(6, "0")}`;
  }

  #commissionOrThrow(productId: string, id: string): Commission {
    const commission = this.commissions.get(id);
    if (!commission || commission.productId !== productId) {
      throw new ConnectError(`Commission ${id} not found`, Code.NotFound);
    }
    return commission;
  }

  /** The level-1 commission of the payment a refund identifies (the ledger's findPayment). */
  #paymentOf(request: RefundRequest): Commission {
    const notFound = () =>
      toConnectError(new DomainError("not_found", "No payment matches the identifier for this product"));
    const ofProduct = (id: string | undefined) => {
      const commission = id === undefined ? undefined : this.commissions.get(id);
      if (!commission || commission.productId !== request.productId || commission.level !== 1) throw notFound();
      return commission;
    };
    const { identification } = request;
    switch (identification.case) {
      case "commissionId":
        return ofProduct(identification.value);
      case "externalId":
        return ofProduct(this.externalIds.get(identification.value));
      case "emailAndAmount": {
        const email = identification.value.email.trim().toLowerCase();
        const matches = [...this.commissions.values()].filter(
          (c) =>
            c.productId === request.productId &&
            c.level === 1 &&
            c.customerEmail === email &&
            c.paymentAmountCents === identification.value.paymentAmountCents,
        );
        if (matches.length > 1) {
          throw toConnectError(
            DomainError.withInfo("already_exists", "ambiguous_payment", {
              reason: "ambiguous_payment",
              details: { message: "The email and amount match several payments" },
            }),
          );
        }
        return ofProduct(matches[0]?.id);
      }
      default:
        throw toConnectError(DomainError.invalidField("identification", "Required"));
    }
  }

  /** Spec 4.9 and 3.1, simplified to the level-1 commission; amounts from the cumulative total. */
  #refund(request: RefundRequest): RefundResult {
    const commission = this.#paymentOf(request);
    const payment = commission.paymentAmountCents;
    const refunded = this.refunded.get(commission.id) ?? 0n;
    const remaining = payment - refunded;
    if (remaining === 0n) {
      throw toConnectError(
        DomainError.withInfo("already_exists", `Commission ${commission.id} is already fully refunded`, {
          reason: "already_refunded",
          details: { commission_id: commission.id },
        }),
      );
    }
    const refund = request.refundAmountCents ?? remaining;
    if (refund <= 0n || refund > payment) {
      throw toConnectError(
        DomainError.withInfo(
          "out_of_range",
          "refund_amount_cents must be greater than 0 and at most the payment amount",
          {
            reason: "refund_out_of_range",
            details: { payment_amount_cents: Number(payment) },
          },
        ),
      );
    }
    if (refund > remaining) {
      throw toConnectError(
        DomainError.withInfo("out_of_range", "refund_amount_cents exceeds what remains of the payment", {
          reason: "refund_out_of_range",
          details: { payment_amount_cents: Number(payment), refundable_cents: Number(remaining) },
        }),
      );
    }
    const original = this.#originalAmounts.get(commission.id) ?? commission.amountCents;
    this.#originalAmounts.set(commission.id, original);
    const after = refunded + refund;
    this.refunded.set(commission.id, after);
    const previous = commission.amountCents;
    const fullyRefunded = after === payment;
    if (commission.status !== CommissionStatus.REJECTED && commission.status !== CommissionStatus.REFUNDED) {
      // round(original × left / payment), halves up.
      commission.amountCents = (2n * original * (payment - after) + payment) / (2n * payment);
      if (fullyRefunded) commission.status = CommissionStatus.REFUNDED;
    }
    if (request.reason !== undefined) commission.reason = request.reason;
    return create(RefundResultSchema, {
      commissionId: commission.id,
      partnershipId: commission.partnershipId,
      paymentAmountCents: payment,
      refundAmountCents: refund,
      previousCommissionCents: previous,
      newCommissionCents: commission.amountCents,
      status: commission.status,
      fullyRefunded,
    });
  }

  #track(request: TrackRequest) {
    const key = `${request.productId}|${request.testMode}|${request.externalId ?? ""}`;
    const original = request.type === EventType.PAYMENT && request.externalId ? this.#payments.get(key) : undefined;
    if (original) return { event: original, replayed: true };
    const partnershipId = request.referralCode ? this.referralCodes.get(request.referralCode) : undefined;
    if (request.type === EventType.CLICK && !partnershipId) {
      throw new ConnectError("Unknown referral code", Code.NotFound);
    }
    const amount = request.amountCents ?? 0n;
    const commissions =
      request.type === EventType.PAYMENT && partnershipId
        ? [
            {
              id: request.testMode ? "" : this.#id("com"),
              level: 1,
              amountCents: (amount * 20n) / 100n,
              status: CommissionStatus.PENDING,
            },
          ]
        : [];
    const event = create(TrackedEventSchema, {
      id: this.#id("evt"),
      type: request.type,
      partnershipId: partnershipId ?? "",
      visitorId: request.visitorId ?? (request.type === EventType.CLICK ? "vis_generated" : ""),
      occurredAt: request.occurredAt ?? timestampFromDate(this.now),
      testMode: request.testMode,
      commissions,
    });
    if (request.type === EventType.PAYMENT && request.externalId) this.#payments.set(key, event);
    return { event, replayed: false };
  }

  // Only what the gateway calls: the rest of the contract answers UNIMPLEMENTED.
  #implementation(): Partial<ServiceImpl<typeof LedgerService>> {
    return {
      refund: (request) => {
        if (request.idempotencyKey === undefined) return { result: this.#refund(request), replayed: false };
        const scope = `${request.productId}|${request.idempotencyKey}`;
        const stored = this.#keys.get(scope);
        if (stored && stored.fingerprint !== request.requestFingerprint) {
          throw toConnectError(
            DomainError.withInfo(
              "already_exists",
              "This idempotency key was already used with a different request body",
              {
                reason: "idempotency_key_reused",
              },
            ),
          );
        }
        if (stored) return { result: stored.result, replayed: true };
        const result = this.#refund(request);
        this.#keys.set(scope, { fingerprint: request.requestFingerprint, result });
        return { result, replayed: false };
      },
      track: (request) => this.#track(request),
      // Each event as Track answers it; a thrown ConnectError becomes that event's Status.
      trackBatch: ({ events }) => ({
        results: events.map((event) => {
          try {
            return { outcome: { case: "tracked" as const, value: this.#track(event) } };
          } catch (error) {
            const { code, rawMessage } = ConnectError.from(error);
            return { outcome: { case: "error" as const, value: create(StatusSchema, { code, message: rawMessage }) } };
          }
        }),
      }),
      getCommission: ({ productId, commissionId }) => ({
        commission: this.#commissionOrThrow(productId, commissionId),
      }),
      listCommissions: ({ productId, status, partnershipId, payoutId, flagged, pageSize, pageToken }) => {
        const matching = [...this.commissions.values()]
          .filter(
            (c) =>
              c.productId === productId &&
              (status === CommissionStatus.UNSPECIFIED || c.status === status) &&
              (partnershipId === undefined || c.partnershipId === partnershipId) &&
              (payoutId === undefined || c.payoutId === payoutId) &&
              (!flagged || c.holdReason === HoldReason.REVIEW),
          )
          .sort((a, b) => b.id.localeCompare(a.id));
        let offset = 0;
        if (pageToken) {
          const match = /^page:(\d+)$/.exec(Buffer.from(pageToken, "base64url").toString());
          if (!match) {
            throw toConnectError(
              DomainError.invalidField("cursor", "Invalid cursor: pass next_cursor from a previous page unchanged"),
            );
          }
          offset = Number(match[1]);
        }
        const more = offset + pageSize < matching.length;
        return {
          commissions: matching.slice(offset, offset + pageSize),
          nextPageToken: more ? Buffer.from(`page:${offset + pageSize}`).toString("base64url") : "",
        };
      },
      updateCommission: ({ productId, commissionId, action, reason }) => {
        const commission = this.#commissionOrThrow(productId, commissionId);
        if (action === CommissionAction.APPROVE) {
          if (commission.status !== CommissionStatus.PENDING) {
            throw new ConnectError(
              `Only a pending commission can be approved; this one is ${CommissionStatus[commission.status].toLowerCase()}`,
              Code.FailedPrecondition,
            );
          }
          commission.status = CommissionStatus.APPROVED;
        } else {
          const rejectable =
            commission.status === CommissionStatus.PENDING ||
            (commission.status === CommissionStatus.APPROVED && commission.payoutId === "");
          if (!rejectable) {
            throw new ConnectError(
              "Only a pending commission, or an approved one not in a payout, can be rejected",
              Code.FailedPrecondition,
            );
          }
          commission.status = CommissionStatus.REJECTED;
        }
        if (reason !== undefined) commission.reason = reason;
        return { commission };
      },
      reviewCommission: ({ productId, commissionId, decision, note, key }) => {
        const commission = this.#commissionOrThrow(productId, commissionId);
        if (commission.review) {
          throw new ConnectError(`Commission ${commissionId} was already reviewed`, Code.AlreadyExists);
        }
        if (commission.holdReason !== HoldReason.REVIEW) {
          throw new ConnectError(`Commission ${commissionId} is not flagged for review`, Code.FailedPrecondition);
        }
        commission.holdReason = HoldReason.UNSPECIFIED;
        commission.status = decision === ReviewDecision.REJECT ? CommissionStatus.REJECTED : CommissionStatus.APPROVED;
        commission.review = create(CommissionReviewSchema, { decision, note, key, reviewedAt: timestampNow() });
        return { commission };
      },
      getStats: ({ period }) => {
        if (periodDays[period] === undefined) {
          throw toConnectError(DomainError.invalidField("period", "Period must be 7d, 30d, 90d or 12m"));
        }
        return this.stats;
      },
      getTimeseries: ({ period }) => {
        const days = periodDays[period];
        if (days === undefined) {
          throw toConnectError(DomainError.invalidField("period", "Period must be 7d, 30d, 90d or 12m"));
        }
        const today = Date.UTC(this.now.getUTCFullYear(), this.now.getUTCMonth(), this.now.getUTCDate());
        const points = Array.from({ length: days }, (_, i) => metrics(i));
        return {
          firstDate: new Date(today - (days - 1) * dayMs).toISOString().slice(0, 10),
          clicks: points.map((m) => m.clicks),
          signups: points.map((m) => m.signups),
          conversions: points.map((m) => m.conversions),
          revenueCents: points.map((m) => m.revenueCents),
          commissionsCents: points.map((m) => m.commissionsCents),
        };
      },
      batchGetPartnershipStats: ({ partnershipIds }) => {
        if (partnershipIds.length > 100) {
          throw toConnectError(DomainError.invalidField("partnership_ids", "At most 100 ids per call"));
        }
        return {
          stats: Object.fromEntries(
            partnershipIds.map((id) => [id, this.partnershipStats.get(id) ?? create(PartnershipStatsSchema)]),
          ),
        };
      },
    };
  }
}
