import { asRead } from "@affiliate/platform";
import { EventType, type LedgerService } from "@affiliate/proto/ledger";
import type { PartnersService } from "@affiliate/proto/partners";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Ledger, Programs } from "../domain/ports.js";

/**
 * The ledger's Track and Refund in the domain's words. Both are safe to repeat for these calls:
 * a payment's external id makes its Track a replay, and a refund to a cumulative total applies
 * only the difference.
 */
export function ledgerOver(client: Client<typeof LedgerService>): Ledger {
  return {
    async track(input) {
      const referral = input.referral;
      const { event, replayed } = await client.track({
        productId: input.productId,
        testMode: input.testMode,
        type: input.type === "signup" ? EventType.SIGNUP : EventType.PAYMENT,
        referralCode: referral && "referralCode" in referral ? referral.referralCode : undefined,
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
      };
    },
    async refundToTotal(input) {
      try {
        const { result } = await client.refund({
          productId: input.productId,
          identification: { case: "externalId", value: input.externalId },
          refundedTotalCents: input.refundedTotalCents === undefined ? undefined : BigInt(input.refundedTotalCents),
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
        // The ledger says NOT_FOUND both for a payment it does not have and for a payment that
        // earned no commission; only its message tells them apart.
        if (connect.code === Code.NotFound) {
          return connect.rawMessage.startsWith("No commission")
            ? { kind: "no_commission" }
            : { kind: "payment_not_found" };
        }
        // A full refund (a lost dispute) of a payment refunded in full already: nothing to do.
        if (connect.code === Code.AlreadyExists && input.refundedTotalCents === undefined) {
          return { kind: "refunded", commissionId: "", appliedCents: 0, fullyRefunded: true };
        }
        throw error;
      }
    },
  };
}

/** The program's currency, read once per product (it is read-only for now: contract section 3). */
export function programsOver(client: Client<typeof PartnersService>): Programs {
  const currencies = new Map<string, string>();
  return {
    async currencyOf(productId) {
      const known = currencies.get(productId);
      if (known) return known;
      const { program } = await asRead(client.getProgram({ productId }));
      if (!program) throw new Error(`partners returned no program for product ${productId}`);
      currencies.set(productId, program.currency);
      return program.currency;
    },
  };
}
