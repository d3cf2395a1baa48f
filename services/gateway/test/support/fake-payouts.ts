import { DomainError, toConnectError } from "@affiliate/platform";
import type { Partnership } from "@affiliate/proto/partners";
import { type Payout, PayoutAction, PayoutSchema, PayoutStatus, PayoutsService } from "@affiliate/proto/payouts";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ServiceImpl, type Transport } from "@connectrpc/connect";
import { CallLog, serveRecorded } from "./recorded-service.js";

export type PayoutsMethod = keyof ServiceImpl<typeof PayoutsService>;

/** What a partnership has ready for its next payout (approved commissions and adjustments). */
export interface Balance {
  partnership: Partnership;
  amountCents: bigint;
  adjustmentCents?: bigint;
  commissionCount: bigint;
}

/** The payouts service's refusals (spec 3.2, 7), as its UpdatePayout words them. */
const rules: Record<Exclude<PayoutAction, PayoutAction.UNSPECIFIED>, { from: PayoutStatus[]; refusal: string }> = {
  [PayoutAction.APPROVE]: {
    from: [PayoutStatus.PENDING, PayoutStatus.FAILED],
    refusal: "Payout must be in pending or failed state to approve",
  },
  [PayoutAction.REJECT]: { from: [PayoutStatus.PENDING], refusal: "Payout must be in pending state to reject" },
  [PayoutAction.MARK_PAID]: {
    from: [PayoutStatus.APPROVED],
    refusal: "Payout must be in approved state to mark as paid",
  },
  [PayoutAction.MARK_FAILED]: {
    from: [PayoutStatus.APPROVED],
    refusal: "Payout must be in approved state to mark as failed",
  },
};

/**
 * An in-memory payouts service behind the real generated contract. Payouts are seeded by the test
 * or generated from balances it sets; the actions follow spec 3.2. It counts calls, records
 * requests, and can be told to fail a method with a given ConnectError.
 */
export class FakePayouts extends CallLog<PayoutsMethod> {
  readonly transport: Transport;
  readonly client: Client<typeof PayoutsService>;
  readonly payouts = new Map<string, Payout>();
  /** What GeneratePayouts turns into pending payouts (those of the calling product), then forgets. */
  balances: Balance[] = [];
  /** The deadline (ms left) the last GeneratePayouts call arrived with. */
  lastGenerationDeadlineMs: number | undefined;
  readonly now = new Date("2025-03-04T05:06:07.890Z");
  #sequence = 0;

  constructor() {
    super();
    ({ transport: this.transport, client: this.client } = serveRecorded(PayoutsService, this.#implementation(), this));
  }

  /** Puts a payout of the partnership straight into the store. */
  seedPayout(partnership: Partnership, fields: Partial<Omit<Payout, "$typeName" | "$unknown">> = {}): Payout {
    const id = this.#id();
    const payout = create(PayoutSchema, {
      id,
      productId: partnership.productId,
      partnershipId: partnership.id,
      status: PayoutStatus.PENDING,
      amountCents: 6000n,
      adjustmentCents: 0n,
      commissionCount: 3n,
      createdAt: timestampFromDate(new Date(this.now.getTime() + this.#sequence * 1000)),
      ...fields,
    });
    this.payouts.set(id, payout);
    return payout;
  }

  #id(): string {
    this.#sequence++;
    return `po_${String(this.#sequence).padStart(6, "0")}`;
  }

  #payoutOrThrow(productId: string, id: string): Payout {
    const payout = this.payouts.get(id);
    if (!payout || payout.productId !== productId) throw new ConnectError(`Payout ${id} not found`, Code.NotFound);
    return payout;
  }

  #implementation(): Partial<ServiceImpl<typeof PayoutsService>> {
    return {
      generatePayouts: ({ productId }, context) => {
        this.lastGenerationDeadlineMs = context.timeoutMs();
        const due = this.balances.filter((balance) => balance.partnership.productId === productId);
        this.balances = this.balances.filter((balance) => !due.includes(balance));
        const payouts = due.map((balance) =>
          this.seedPayout(balance.partnership, {
            amountCents: balance.amountCents,
            adjustmentCents: balance.adjustmentCents ?? 0n,
            commissionCount: balance.commissionCount,
          }),
        );
        return { payouts };
      },
      listPayouts: ({ productId, status, partnershipId, pageSize, pageToken }) => {
        const matching = [...this.payouts.values()]
          .filter(
            (p) =>
              p.productId === productId &&
              (status === PayoutStatus.UNSPECIFIED || p.status === status) &&
              (partnershipId === undefined || p.partnershipId === partnershipId),
          )
          .sort((a, b) => b.id.localeCompare(a.id));
        let offset = 0;
        if (pageToken) {
          const match = /^page:(\d+)$/.exec(Buffer.from(pageToken, "base64url").toString());
          if (!match) throw toConnectError(DomainError.invalidField("cursor", "The cursor was not issued by this API"));
          offset = Number(match[1]);
        }
        const more = offset + pageSize < matching.length;
        return {
          payouts: matching.slice(offset, offset + pageSize),
          nextPageToken: more ? Buffer.from(`page:${offset + pageSize}`).toString("base64url") : "",
        };
      },
      getPayout: ({ productId, payoutId }) => ({ payout: this.#payoutOrThrow(productId, payoutId) }),
      updatePayout: ({ productId, payoutId, action, reference }) => {
        if (action === PayoutAction.UNSPECIFIED) {
          throw toConnectError(
            DomainError.invalidField("action", "Action must be approve, reject, mark_paid or mark_failed"),
          );
        }
        if (reference !== undefined && reference.length > 500) {
          throw toConnectError(DomainError.invalidField("reference", "At most 500 characters"));
        }
        const payout = this.#payoutOrThrow(productId, payoutId);
        const rule = rules[action];
        if (!rule.from.includes(payout.status)) throw new ConnectError(rule.refusal, Code.FailedPrecondition);
        switch (action) {
          case PayoutAction.APPROVE:
            payout.status = PayoutStatus.APPROVED;
            payout.approvedAt = timestampFromDate(this.now);
            return { payout, deleted: false };
          case PayoutAction.REJECT:
            this.payouts.delete(payout.id);
            return { payout, deleted: true };
          case PayoutAction.MARK_PAID:
            payout.status = PayoutStatus.COMPLETED;
            payout.paidAt = timestampFromDate(this.now);
            payout.gatewayTransferId = reference ?? "";
            return { payout, deleted: false };
          case PayoutAction.MARK_FAILED:
            payout.status = PayoutStatus.FAILED;
            payout.failureReason = reference ?? "";
            return { payout, deleted: false };
        }
      },
    };
  }
}
