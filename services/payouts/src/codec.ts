import {
  PayoutAction as PayoutActionProto,
  PayoutFileFormat as PayoutFileFormatProto,
  PayoutLineKind,
  type PayoutLine as PayoutLineProto,
  PayoutLineSchema,
  type Payout as PayoutProto,
  PayoutSchema,
  PayoutStatus as PayoutStatusProto,
} from "@affiliate/proto/payouts";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { PayoutFileFormat } from "./domain/payout-files/formats.js";
import type { Payout, PayoutAction, PayoutStatus } from "./domain/types.js";
import type { PayoutLine } from "./store/payouts.js";

export const payoutStatusToProto: Record<PayoutStatus, PayoutStatusProto> = {
  pending: PayoutStatusProto.PENDING,
  approved: PayoutStatusProto.APPROVED,
  failed: PayoutStatusProto.FAILED,
  processing: PayoutStatusProto.PROCESSING,
  completed: PayoutStatusProto.COMPLETED,
};

export const payoutActionToProto: Record<PayoutAction, PayoutActionProto> = {
  approve: PayoutActionProto.APPROVE,
  reject: PayoutActionProto.REJECT,
  mark_paid: PayoutActionProto.MARK_PAID,
  mark_failed: PayoutActionProto.MARK_FAILED,
};

export const payoutFileFormatToProto: Record<PayoutFileFormat, PayoutFileFormatProto> = {
  csv: PayoutFileFormatProto.CSV,
  paypal: PayoutFileFormatProto.PAYPAL,
  wise: PayoutFileFormatProto.WISE,
};

export function payoutToProto(p: Payout): PayoutProto {
  return create(PayoutSchema, {
    id: p.id,
    productId: p.productId,
    partnershipId: p.partnershipId,
    status: payoutStatusToProto[p.status],
    amountCents: BigInt(p.amountCents),
    adjustmentCents: BigInt(p.adjustmentCents),
    commissionCount: BigInt(p.commissionCount),
    createdAt: timestampFromDate(p.createdAt),
    approvedAt: p.approvedAt ? timestampFromDate(p.approvedAt) : undefined,
    paidAt: p.paidAt ? timestampFromDate(p.paidAt) : undefined,
    gatewayTransferId: p.gatewayTransferId ?? "",
    failureReason: p.failureReason ?? "",
  });
}

/** A payout's lines, in their order: GetPayout's and ListPayouts' answers encode them alike. */
export function linesToProto(lines: readonly PayoutLine[]): PayoutLineProto[] {
  return lines.map((line) =>
    create(PayoutLineSchema, {
      kind: line.kind === "commission" ? PayoutLineKind.COMMISSION : PayoutLineKind.ADJUSTMENT,
      id: line.id,
      commissionId: line.commissionId,
      amountCents: BigInt(line.amountCents),
    }),
  );
}
