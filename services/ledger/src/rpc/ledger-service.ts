import { DomainError, enumFilter, fromProtoEnum, type PageTokens } from "@affiliate/platform";
import {
  CommissionAction,
  type HoldReason,
  type LedgerService,
  PartnershipStatsSchema,
  type Period,
} from "@affiliate/proto/ledger";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  commissionStatusToProto,
  commissionToProto,
  holdReasonToProto,
  holdResolutionToProto,
  metricsToProto,
  periodFromProto,
  previewToProto,
  refundResultToProto,
  reviewDecisionToProto,
  timeseriesToProto,
  trackInputFromProto,
  trackOutcomeToProto,
  trackResultToProto,
} from "../codec.js";
import { closePaymentHold } from "../domain/close-payment-hold.js";
import { holdPaymentCommissions } from "../domain/hold-payment-commissions.js";
import { listCommissionsPage } from "../domain/list-commissions.js";
import { claimCommissions, listPayableBalances, unlinkCommissions } from "../domain/payout-claims.js";
import { previewCommissions } from "../domain/preview-commissions.js";
import { type PaymentIdentification, refundPayment } from "../domain/refund-payment.js";
import { reviewCommission } from "../domain/review-commission.js";
import { getStats, getTimeseries } from "../domain/stats.js";
import { assertBatchSize, type TrackDeps, trackBatch } from "../domain/track-batch.js";
import { trackEvent } from "../domain/track-event.js";
import type { TrackInput, TrackOutcome } from "../domain/types.js";
import { updateCommission } from "../domain/update-commission.js";
import { getCommissionOrThrow, getCommissions } from "../store/commissions.js";
import { partnershipStats } from "../store/rollups.js";

export interface LedgerServiceDeps extends TrackDeps {
  pageTokens: PageTokens;
}

const toNumber = (value: bigint | undefined) => (value === undefined ? undefined : Number(value));

function holdReasonOrThrow(reason: HoldReason) {
  const value = fromProtoEnum(holdReasonToProto, reason);
  // A review's hold comes from the fraud checks only, never from a payment provider.
  if (value !== "dispute") throw DomainError.invalidField("reason", "Reason must be dispute");
  return value;
}

function periodOrThrow(period: Period) {
  const value = periodFromProto[period];
  if (!value) throw DomainError.invalidField("period", "Period must be 7d, 30d, 90d or 12m");
  return value;
}

/** Thin handlers: decode, call one use case, encode. */
export function createLedgerService(deps: LedgerServiceDeps): ServiceImpl<typeof LedgerService> {
  const { sql, pageTokens, clock } = deps;
  return {
    async track(req) {
      return trackResultToProto(await trackEvent(deps, trackInputFromProto(req)));
    },

    async trackBatch(req) {
      assertBatchSize(req.events.length);
      // An event with a bad type fails alone, like any other invalid event.
      const decoded = req.events.map((event) => {
        try {
          return trackInputFromProto(event);
        } catch (error) {
          if (error instanceof DomainError) return error;
          throw error;
        }
      });
      const inputs = decoded.filter((event): event is TrackInput => !(event instanceof DomainError));
      const outcomes = inputs.length > 0 ? await trackBatch(deps, inputs) : [];
      let next = 0;
      return {
        results: decoded.map((event) =>
          trackOutcomeToProto(event instanceof DomainError ? event : (outcomes[next++] as TrackOutcome)),
        ),
      };
    },

    async previewCommissions(req) {
      if (!req.payment) throw DomainError.invalidField("payment", "A payment to preview is required");
      return previewToProto(await previewCommissions(deps, trackInputFromProto(req.payment)));
    },

    async getCommission(req) {
      return { commission: commissionToProto(await getCommissionOrThrow(sql, req.productId, req.commissionId)) };
    },

    async batchGetCommissions(req) {
      if (req.commissionIds.length > 100) throw DomainError.invalidField("commission_ids", "At most 100 ids per call");
      const found = await getCommissions(sql, req.productId, [...new Set(req.commissionIds)]);
      return { commissions: Object.fromEntries(found.map((c) => [c.id, commissionToProto(c)])) };
    },

    async listCommissions(req) {
      const page = await listCommissionsPage(sql, pageTokens, {
        productId: req.productId,
        status: enumFilter(commissionStatusToProto, req.status),
        partnershipId: req.partnershipId,
        payoutId: req.payoutId,
        flagged: req.flagged || undefined,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { commissions: page.commissions.map(commissionToProto), nextPageToken: page.nextPageToken };
    },

    async updateCommission(req) {
      const action =
        req.action === CommissionAction.APPROVE
          ? "approve"
          : req.action === CommissionAction.REJECT
            ? "reject"
            : undefined;
      if (!action) throw DomainError.invalidField("action", "Action must be approve or reject");
      const commission = await updateCommission(sql, req.productId, req.commissionId, { action, reason: req.reason });
      return { commission: commissionToProto(commission) };
    },

    async reviewCommission(req) {
      const decision = fromProtoEnum(reviewDecisionToProto, req.decision);
      if (!decision) throw DomainError.invalidField("decision", "Decision must be approve or reject");
      const commission = await reviewCommission(sql, {
        productId: req.productId,
        commissionId: req.commissionId,
        decision,
        note: req.note,
        key: req.key,
        now: clock(),
      });
      return { commission: commissionToProto(commission) };
    },

    async getStats(req) {
      const scope = { productId: req.productId, partnershipId: req.partnershipId };
      const stats = await getStats(sql, scope, periodOrThrow(req.period), clock());
      return {
        current: metricsToProto(stats.current),
        previous: metricsToProto(stats.previous),
        conversionRate: stats.conversionRate,
      };
    },

    async getTimeseries(req) {
      const scope = { productId: req.productId, partnershipId: req.partnershipId };
      return timeseriesToProto(await getTimeseries(sql, scope, periodOrThrow(req.period), clock()));
    },

    async batchGetPartnershipStats(req) {
      if (req.partnershipIds.length > 100)
        throw DomainError.invalidField("partnership_ids", "At most 100 ids per call");
      const found = await partnershipStats(sql, req.productId, req.partnershipIds);
      const stats = Object.fromEntries(
        req.partnershipIds.map((id) => {
          const s = found.get(id);
          return [
            id,
            create(PartnershipStatsSchema, {
              clicks: BigInt(s?.clicks ?? 0),
              conversions: BigInt(s?.conversions ?? 0),
              earnedCents: BigInt(s?.earnedCents ?? 0),
              pendingCount: BigInt(s?.pendingCount ?? 0),
              approvedCount: BigInt(s?.approvedCount ?? 0),
              pendingAmountCents: BigInt(s?.pendingAmountCents ?? 0),
              approvedAmountCents: BigInt(s?.approvedAmountCents ?? 0),
            }),
          ];
        }),
      );
      return { stats };
    },

    async refund(req) {
      const id = req.identification;
      let identification: PaymentIdentification;
      if (id.case === "commissionId" && id.value) identification = { commissionId: id.value };
      else if (id.case === "externalId" && id.value) identification = { externalId: id.value };
      else if (id.case === "emailAndAmount" && id.value.email) {
        identification = { email: id.value.email, paymentAmountCents: Number(id.value.paymentAmountCents) };
      } else {
        throw new DomainError("invalid_argument", "Validation failed", {}, [
          "Provide one of commission_id, external_id, or email plus payment_amount_cents",
        ]);
      }
      const { result, replayed } = await refundPayment(sql, {
        productId: req.productId,
        identification,
        refundAmountCents: toNumber(req.refundAmountCents),
        refundedTotalCents: toNumber(req.refundedTotalCents),
        reason: req.reason,
        idempotencyKey: req.idempotencyKey,
        requestFingerprint: req.requestFingerprint,
      });
      return { result: refundResultToProto(result), replayed };
    },

    async listPayableBalances(req) {
      const balances = await listPayableBalances(sql, req.productId);
      return {
        balances: balances.map((b) => ({
          partnershipId: b.partnershipId,
          amountCents: BigInt(b.amountCents),
          commissionCount: BigInt(b.commissionCount),
        })),
      };
    },

    async claimCommissions(req) {
      const claims = req.claims.map((c) => ({ partnershipId: c.partnershipId, payoutId: c.payoutId }));
      const claimed = await claimCommissions(sql, req.productId, claims);
      return {
        commissions: claimed.map((c) => ({
          commissionId: c.commissionId,
          amountCents: BigInt(c.amountCents),
          payoutId: c.payoutId,
        })),
      };
    },

    async holdPaymentCommissions(req) {
      const held = await holdPaymentCommissions(sql, {
        productId: req.productId,
        externalId: req.externalId,
        holdId: req.holdId,
        reason: holdReasonOrThrow(req.reason),
      });
      return { commissions: held.commissions.map(commissionToProto), replayed: held.replayed };
    },

    async releasePaymentCommissions(req) {
      const resolution = fromProtoEnum(holdResolutionToProto, req.resolution);
      if (!resolution) throw DomainError.invalidField("resolution", "Resolution must be lifted or refunded");
      const closed = await closePaymentHold(sql, {
        productId: req.productId,
        externalId: req.externalId,
        holdId: req.holdId,
        reason: holdReasonOrThrow(req.reason),
        resolution,
        refundReason: req.refundReason,
      });
      return {
        commissions: closed.commissions.map(commissionToProto),
        replayed: closed.replayed,
        refund: closed.refund ? refundResultToProto(closed.refund) : undefined,
      };
    },

    async releaseCommissions(req) {
      const unlinked = await unlinkCommissions(sql, req.productId, req.payoutIds);
      return { releasedCount: BigInt(unlinked) };
    },
  };
}
