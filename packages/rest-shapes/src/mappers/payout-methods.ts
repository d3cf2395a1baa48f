import type { PayoutDetails } from "@affiliate/contract-rules";
import { type PayoutMethod, type SetPayoutMethodRequestSchema, WiseReceiverType } from "@affiliate/proto/partners";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PublicPayoutMethod } from "../schemas/payout-methods.js";
import { ContractViolation, isoTime, required } from "./common.js";

/** A payout method as every read shows it (partners answers it masked). */
export function toPublicPayoutMethod(response: { method?: PayoutMethod }): PublicPayoutMethod {
  const method = required(response.method, "method", "partners");
  const updated_at = isoTime(method.updatedAt, "method.updated_at", "partners");
  const { details } = method;
  if (details.case === "paypal") {
    return {
      type: "paypal",
      email: details.value.email,
      account_holder_name: null,
      iban: null,
      currency: null,
      receiver_type: null,
      updated_at,
    };
  }
  if (details.case !== "wise") throw new ContractViolation("payout method without details");
  const wise = details.value;
  return {
    type: "wise",
    email: wise.email || null,
    account_holder_name: wise.accountHolderName,
    iban: wise.iban || null,
    currency: wise.currency || null,
    receiver_type: wise.receiverType === WiseReceiverType.INSTITUTION ? "institution" : "person",
    updated_at,
  };
}

/** The SetPayoutMethod request of a partnership's checked details. */
export function payoutMethodRequest(
  productId: string,
  partnershipId: string,
  details: PayoutDetails,
): MessageInitShape<typeof SetPayoutMethodRequestSchema> {
  return {
    productId,
    method: {
      partnershipId,
      details:
        details.type === "paypal"
          ? { case: "paypal", value: { email: details.email } }
          : {
              case: "wise",
              value: {
                accountHolderName: details.accountHolderName,
                email: details.email ?? "",
                iban: details.iban ?? "",
                currency: details.currency ?? "",
                receiverType:
                  details.receiverType === "institution" ? WiseReceiverType.INSTITUTION : WiseReceiverType.PERSON,
              },
            },
    },
  };
}
