import { checkPayoutDetails, maxAccountHolderNameLength, type PayoutDetails } from "@affiliate/contract-rules";
import { z } from "zod";
import { text } from "./common.js";

/**
 * An affiliate's payout method (contract section 19). The body is checked field by field with the
 * payout-details rules of @affiliate/contract-rules, the ones partners applies again before
 * sealing the details.
 */
// A field of the other method (an `iban` beside type paypal) is an unknown field: the gateway's
// strict input reads a discriminated union by its discriminator.
const paypalMethodSchema = z
  .object({
    type: z.literal("paypal"),
    email: text({ max: 254 }).meta({ description: "The PayPal account's email.", example: "ada@example.com" }),
  })
  .meta({ id: "PaypalPayoutMethodRequest" });

const wiseMethodSchema = z
  .object({
    type: z.literal("wise"),
    account_holder_name: text({ min: 1, max: maxAccountHolderNameLength }).meta({
      description: "The name on the recipient's account, as the bank knows it.",
      example: "Ada Lovelace",
    }),
    iban: text({ max: 42 }).optional().meta({
      description: "The IBAN (spaces allowed). Without one, `email` is required.",
      example: "DE89 3704 0044 0532 0130 00",
    }),
    email: text({ max: 254 })
      .optional()
      .meta({ description: "The recipient's email: Wise asks it for bank details when there is no IBAN." }),
    currency: text({ max: 3 })
      .optional()
      .meta({ description: "What the recipient receives (ISO 4217, e.g. EUR); default: the program's currency." }),
    receiver_type: z
      .enum(["person", "institution"])
      .optional()
      .meta({ description: "Wise's receiverType; default person." }),
  })
  .meta({ id: "WisePayoutMethodRequest" });

/** The details of a valid body in the platform's words. */
export function payoutDetailsOfBody(
  body: z.output<typeof paypalMethodSchema> | z.output<typeof wiseMethodSchema>,
): PayoutDetails {
  if (body.type === "paypal") return { type: "paypal", email: body.email };
  return {
    type: "wise",
    accountHolderName: body.account_holder_name,
    email: body.email,
    iban: body.iban,
    currency: body.currency,
    receiverType: body.receiver_type ?? "person",
  };
}

export const setPayoutMethodBodySchema = z
  .discriminatedUnion("type", [paypalMethodSchema, wiseMethodSchema])
  .superRefine((body, context) => {
    const checked = checkPayoutDetails(payoutDetailsOfBody(body));
    for (const [field, messages] of Object.entries(checked.problems ?? {})) {
      for (const message of messages) context.addIssue({ code: "custom", path: [field], message });
    }
  })
  .meta({ id: "SetPayoutMethodRequest" });

export type SetPayoutMethodBody = z.output<typeof setPayoutMethodBodySchema>;

/** A payout method as every read shows it: personal details masked. */
export const payoutMethodSchema = z
  .object({
    type: z.enum(["paypal", "wise"]),
    email: z
      .string()
      .nullable()
      .meta({ description: "Masked (`a***@example.com`); null when none.", example: "a***@example.com" }),
    account_holder_name: z.string().nullable().meta({ description: "Wise: masked (`A*** L***`); null for PayPal." }),
    iban: z.string().nullable().meta({ description: "Wise: masked (`DE89**************3000`); null when none." }),
    currency: z.string().nullable().meta({ description: "Wise: the currency received; null: the program's." }),
    receiver_type: z
      .enum(["person", "institution"])
      .nullable()
      .meta({ description: "Wise: person or institution; null for PayPal." }),
    updated_at: z.iso.datetime().meta({ description: "When the affiliate last set it." }),
  })
  .meta({ id: "PayoutMethod" });

export type PublicPayoutMethod = z.output<typeof payoutMethodSchema>;

export const payoutMethodResponseSchema = z.object({ data: payoutMethodSchema });
