import { CommissionType, type PartnersService, type Program } from "@affiliate/proto/partners";
import { ContractViolation, fraudChangesToProto, toPublicProgram } from "@affiliate/rest-shapes/mappers";
import { programResponseSchema, updateProgramBodySchema } from "@affiliate/rest-shapes/schemas/program";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { defineRoute } from "../../http/define-route.js";

export interface ProgramRouteDeps {
  partners: Client<typeof PartnersService>;
}

function programOf(response: { program?: Program }) {
  if (!response.program) throw new ContractViolation("program missing from the partners response");
  return toPublicProgram(response.program);
}

const tags: [string] = ["Program"];

/** The key's product's program settings (contract section 3). */
export async function programRoutes(app: FastifyInstance, { partners }: ProgramRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/program",
    operationId: "getProgram",
    tags,
    summary: "Read the program settings",
    access: "management",
    answers: { 200: { description: "The settings", schema: programResponseSchema } },
    handler: async ({ request }) => ({ data: programOf(await partners.getProgram({ productId: request.productId })) }),
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/program",
    operationId: "updateProgram",
    tags,
    summary: "Change any subset of the writable settings",
    description:
      'Changes apply to payments recorded afterwards; no existing commission is re-rated. `fraud` takes any subset of its fields (an unknown signal is a 400 naming it). An empty object changes nothing and returns the settings. product_id, name and currency are read-only. `commission_type: "flat"` needs a `commission_flat_cents` of 1 or more (given or already set); `null` removes a limit or the link template.',
    access: "management",
    body: updateProgramBodySchema,
    answers: { 200: { description: "The settings after the change", schema: programResponseSchema } },
    handler: async ({ body: changes, request }) => {
      const productId = request.productId;
      // Nothing to change is a read: no write, no event.
      if (Object.keys(changes).length === 0) return { data: programOf(await partners.getProgram({ productId })) };
      const response = await partners.updateProgram({
        productId,
        commissionRateBps: changes.commission_rate_bps,
        tier2RateBps: changes.tier2_rate_bps,
        holdDays: changes.hold_days,
        payoutMinimumCents:
          changes.payout_minimum_cents === undefined ? undefined : BigInt(changes.payout_minimum_cents),
        attributionWindowDays: changes.attribution_window_days,
        autoApprove: changes.auto_approve,
        commissionType:
          changes.commission_type === undefined
            ? CommissionType.UNSPECIFIED
            : changes.commission_type === "flat"
              ? CommissionType.FLAT
              : CommissionType.PERCENT,
        commissionFlatCents:
          changes.commission_flat_cents === undefined ? undefined : BigInt(changes.commission_flat_cents),
        // null (no limit, no template) is 0 and "" on the wire.
        maxCommissionMonths: changes.max_commission_months === null ? 0 : changes.max_commission_months,
        maxCommissionPayments: changes.max_commission_payments === null ? 0 : changes.max_commission_payments,
        referralUrlTemplate: changes.referral_url_template === null ? "" : changes.referral_url_template,
        fraud: fraudChangesToProto(changes.fraud),
      });
      return { data: programOf(response) };
    },
  });
}
