import { asRead, errorInfoOf } from "@affiliate/platform";
import { CommissionSkipped, EventType, HoldReason, HoldResolution, type LedgerService } from "@affiliate/proto/ledger";
import type { PartnersService } from "@affiliate/proto/partners";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { type Ledger, type PaymentNotFound, type Programs, ServiceCallFailed } from "../domain/ports.js";

const skippedOf: Record<CommissionSkipped, "max_commission_months" | "max_commission_payments" | undefined> = {
  [CommissionSkipped.UNSPECIFIED]: undefined,
  [CommissionSkipped.MAX_COMMISSION_MONTHS]: "max_commission_months",
  [CommissionSkipped.MAX_COMMISSION_PAYMENTS]: "max_commission_payments",
};

/**
 * The ledger's reason (ErrorInfo) for a refund of a payment it has that earned no commission. It
 * answers NOT_FOUND for that as for a payment it does not have: only the reason tells a refund
 * with nothing to do from one that must wait for its payment.
 */
export const noCommissionReason = "no_commission";

/** The codes by which a service refuses a command: asking again gets the same answer. */
const refusalCodes = new Set([
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.NotFound,
  Code.AlreadyExists,
]);

/**
 * The port with every method's Connect errors in the use cases' words (ServiceCallFailed): a
 * refusal, or a transient failure, with the service's own message. Anything else is thrown as it
 * was.
 */
function inDomainTerms<Port extends object>(port: Port): Port {
  const wrapped = Object.entries(port).map(([name, method]: [string, (...args: unknown[]) => Promise<unknown>]) => [
    name,
    async (...args: unknown[]) => {
      try {
        return await method(...args);
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        throw new ServiceCallFailed(error.rawMessage, refusalCodes.has(error.code), { cause: error });
      }
    },
  ]);
  return Object.fromEntries(wrapped) as Port;
}

/** NOT_FOUND from the ledger: for these calls, a payment it does not have (yet). */
async function unlessPaymentMissing<T>(call: () => Promise<T>): Promise<T | PaymentNotFound> {
  try {
    return await call();
  } catch (error) {
    if (ConnectError.from(error).code === Code.NotFound) return { kind: "payment_not_found" };
    throw error;
  }
}

/**
 * The ledger's Track, Refund and dispute holds in the domain's words, errors included. All are
 * safe to repeat for these calls: a payment's external id makes its Track a replay, a refund to a
 * cumulative total applies only the difference, and a dispute's hold and release are idempotent
 * by its id.
 */
export function ledgerOver(client: Client<typeof LedgerService>): Ledger {
  return inDomainTerms<Ledger>({
    async track(input) {
      const referral = input.referral;
      const { event, replayed } = await client.track({
        productId: input.productId,
        testMode: input.testMode,
        type: input.type === "signup" ? EventType.SIGNUP : EventType.PAYMENT,
        referralCode: referral && "referralCode" in referral ? referral.referralCode : undefined,
        // The ledger's word for a code the merchant sent is "link", its default.
        referralSource:
          referral && "referralCode" in referral && referral.source !== "link" ? referral.source : undefined,
        visitorId: referral && "visitorId" in referral ? referral.visitorId : undefined,
        customerEmail: input.email,
        providerCustomerId: input.customerId,
        occurredAt: timestampFromDate(input.occurredAt),
        ...(input.type === "payment" ? { externalId: input.externalId, amountCents: BigInt(input.amountCents) } : {}),
      });
      if (!event) throw new Error("ledger answered Track without an event");
      return {
        trackingEventId: event.id,
        commissionIds: event.commissions.map((c) => c.id).filter((id) => id !== ""),
        partnershipId: event.partnershipId,
        replayed,
        commissionSkipped: skippedOf[event.commissionSkipped],
      };
    },
    async wouldAttribute(input) {
      const referral = input.referral;
      const { partnershipId, alreadyRecorded } = await client.previewCommissions({
        payment: {
          productId: input.productId,
          testMode: false,
          type: EventType.PAYMENT,
          referralCode: referral && "referralCode" in referral ? referral.referralCode : undefined,
          visitorId: referral && "visitorId" in referral ? referral.visitorId : undefined,
          customerEmail: input.email,
          providerCustomerId: input.customerId,
          occurredAt: timestampFromDate(input.occurredAt),
          amountCents: BigInt(input.amountCents),
          externalId: input.externalId,
        },
      });
      // A payment recorded already (through the API) is a replay whatever comes: nothing to wait for.
      return partnershipId !== "" || alreadyRecorded;
    },
    async refundToTotal(input) {
      try {
        const { result } = await client.refund({
          productId: input.productId,
          identification: { case: "externalId", value: input.externalId },
          refundedTotalCents: BigInt(input.refundedTotalCents),
          reason: input.reason,
          requestFingerprint: "",
        });
        if (!result) throw new Error("ledger answered Refund without a result");
        return {
          kind: "refunded",
          commissionId: result.commissionId,
          appliedCents: Number(result.refundAmountCents),
          fullyRefunded: result.fullyRefunded,
        };
      } catch (error) {
        const connect = ConnectError.from(error);
        if (connect.code === Code.NotFound) {
          return errorInfoOf(connect)?.reason === noCommissionReason
            ? { kind: "no_commission" }
            : { kind: "payment_not_found" };
        }
        throw error;
      }
    },
    holdForDispute(input) {
      return unlessPaymentMissing(async () => {
        const { commissions, replayed } = await client.holdPaymentCommissions({
          productId: input.productId,
          externalId: input.externalId,
          holdId: input.disputeId,
          reason: HoldReason.DISPUTE,
        });
        return {
          kind: "held" as const,
          replayed,
          commissions: commissions.map((c) => ({
            id: c.id,
            held: c.holdReason !== HoldReason.UNSPECIFIED,
            payoutId: c.payoutId,
          })),
        };
      });
    },
    closeDispute(input) {
      return unlessPaymentMissing(async () => {
        const { commissions, replayed, refund } = await client.releasePaymentCommissions({
          productId: input.productId,
          externalId: input.externalId,
          holdId: input.disputeId,
          reason: HoldReason.DISPUTE,
          resolution: input.lost ? HoldResolution.REFUNDED : HoldResolution.LIFTED,
          refundReason: input.lost ? input.reason : undefined,
        });
        return {
          kind: "closed" as const,
          replayed,
          commissionIds: commissions.map((c) => c.id),
          refundedCents: Number(refund?.refundAmountCents ?? 0n),
        };
      });
    },
  });
}

/** The program's currency, read once per product (it is read-only for now: contract section 3). */
export function programsOver(client: Client<typeof PartnersService>): Programs {
  const currencies = new Map<string, string>();
  return inDomainTerms<Programs>({
    async currencyOf(productId) {
      const known = currencies.get(productId);
      if (known) return known;
      const { program } = await asRead(client.getProgram({ productId }));
      if (!program) throw new Error(`partners returned no program for product ${productId}`);
      currencies.set(productId, program.currency);
      return program.currency;
    },
  });
}
