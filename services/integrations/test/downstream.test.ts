/**
 * rpc/downstream.ts against an in-memory ledger with the real generated types, its errors sent as
 * the platform's RPC server sends them: the use cases learn what the ledger answered by its code
 * and reason, never by the wording of its message.
 */
import { createLogger, DomainError, errorMapping } from "@affiliate/platform";
import { LedgerService } from "@affiliate/proto/ledger";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ServiceCallFailed } from "../src/domain/ports.js";
import { ledgerOver, noCommissionReason } from "../src/rpc/downstream.js";

const logger = createLogger("downstream-test", "silent");

/** The port over a ledger whose Refund fails with `error`. */
function ledgerRefusingRefundsWith(error: Error) {
  const transport = createRouterTransport(
    ({ service }) =>
      service(LedgerService, {
        refund: async () => {
          throw error;
        },
      }),
    { router: { interceptors: [errorMapping(logger)] } },
  );
  return ledgerOver(createClient(LedgerService, transport));
}

const refund = { productId: "prd_1", externalId: "in_1", refundedTotalCents: 500, reason: "refunded in Stripe" };

/** What a failed call reaches the use cases as. */
async function failureOf(call: Promise<unknown>) {
  try {
    await call;
    return "no failure";
  } catch (error) {
    return error instanceof ServiceCallFailed ? { refused: error.refused, message: error.message } : error;
  }
}

describe("the ledger's Refund, as the use cases read it", () => {
  it("a payment that earned no commission is told by the reason, whatever the message says", async () => {
    for (const message of ["No commission matches this payment", "Nothing was earned on this payment"]) {
      const ledger = ledgerRefusingRefundsWith(
        DomainError.withInfo("not_found", message, { reason: noCommissionReason }),
      );
      expect(await ledger.refundToTotal(refund), message).toEqual({ kind: "no_commission" });
    }
  });

  it("NOT_FOUND without that reason is a payment not recorded yet, even in the no-commission wording", async () => {
    for (const message of [
      "No payment matches the identifier for this product",
      "No commission matches this payment",
    ]) {
      const ledger = ledgerRefusingRefundsWith(new DomainError("not_found", message));
      expect(await ledger.refundToTotal(refund), message).toEqual({ kind: "payment_not_found" });
    }
  });

  it("another refusal fails with the ledger's message; an unavailable ledger is a transient failure", async () => {
    const refused = ledgerRefusingRefundsWith(new DomainError("out_of_range", "refund_amount_cents is too large"));
    expect(await failureOf(refused.refundToTotal(refund))).toEqual({
      refused: true,
      message: "refund_amount_cents is too large",
    });
    const unavailable = ledgerRefusingRefundsWith(new DomainError("unavailable", "the ledger is restarting"));
    expect(await failureOf(unavailable.refundToTotal(refund))).toEqual({
      refused: false,
      message: "the ledger is restarting",
    });
  });
});
