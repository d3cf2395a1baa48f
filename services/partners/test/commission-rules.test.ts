import { fieldErrorsOf } from "@affiliate/platform";
import {
  CommissionType,
  PartnershipCommissionOverrideChangedSchema,
  PartnershipStatus,
} from "@affiliate/proto/partners";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async () => (await h.admin.createProduct({ name: "Rules" })).product?.id ?? "";
const register = async (productId: string) =>
  (await h.partners.registerAffiliate({ productId, registration: { email: uniqueEmail() }, notify: false })).partnership
    ?.id ?? "";

/** The field errors of a call that must fail INVALID_ARGUMENT. */
async function fieldErrorsOfCall(call: Promise<unknown>): Promise<Record<string, string[]>> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConnectError)) throw new Error("expected the call to fail");
  expect(error.code).toBe(Code.InvalidArgument);
  return fieldErrorsOf(error)?.fieldErrors ?? {};
}

describe("program commission rules (contract section 12)", () => {
  it("starts as a lifetime percentage without a link template", async () => {
    const { program } = await h.partners.getProgram({ productId: await newProduct() });
    expect(program).toMatchObject({
      commissionType: CommissionType.PERCENT,
      commissionFlatCents: 0n,
      maxCommissionMonths: 0,
      maxCommissionPayments: 0,
      referralUrlTemplate: "",
    });
  });

  it("sets a flat amount, limits and a template, and clears limits with 0 and the template with empty text", async () => {
    const productId = await newProduct();
    const { program } = await h.partners.updateProgram({
      productId,
      commissionType: CommissionType.FLAT,
      commissionFlatCents: 5000n,
      maxCommissionMonths: 12,
      maxCommissionPayments: 24,
      referralUrlTemplate: "https://acme.com/?ref={code}",
    });
    expect(program).toMatchObject({
      commissionType: CommissionType.FLAT,
      commissionFlatCents: 5000n,
      maxCommissionMonths: 12,
      maxCommissionPayments: 24,
      referralUrlTemplate: "https://acme.com/?ref={code}",
    });
    const cleared = await h.partners.updateProgram({
      productId,
      maxCommissionMonths: 0,
      referralUrlTemplate: "",
      commissionType: CommissionType.UNSPECIFIED,
    });
    expect(cleared.program).toMatchObject({
      commissionType: CommissionType.FLAT,
      maxCommissionMonths: 0,
      maxCommissionPayments: 24,
      referralUrlTemplate: "",
    });
  });

  it("names the field of each bad value and changes nothing", async () => {
    const productId = await newProduct();
    const cases = [
      [{ commissionType: CommissionType.FLAT }, "commission_flat_cents"],
      [{ commissionType: CommissionType.FLAT, commissionFlatCents: 0n }, "commission_flat_cents"],
      [{ commissionFlatCents: 100_000_000_001n }, "commission_flat_cents"],
      [{ commissionFlatCents: -1n }, "commission_flat_cents"],
      [{ maxCommissionMonths: 121 }, "max_commission_months"],
      [{ maxCommissionMonths: -1 }, "max_commission_months"],
      [{ maxCommissionPayments: 1001 }, "max_commission_payments"],
      [{ referralUrlTemplate: "https://acme.com/?ref=" }, "referral_url_template"],
      [{ referralUrlTemplate: "ftp://acme.com/{code}" }, "referral_url_template"],
      [{ referralUrlTemplate: "acme.com/{code}" }, "referral_url_template"],
      [{ commissionType: 7 as CommissionType }, "commission_type"],
    ] as const;
    for (const [change, field] of cases) {
      const errors = await fieldErrorsOfCall(h.partners.updateProgram({ productId, holdDays: 3, ...change }));
      expect(
        Object.keys(errors),
        JSON.stringify(change, (_, v) => (typeof v === "bigint" ? `${v}` : v)),
      ).toEqual([field]);
    }
    expect((await h.partners.getProgram({ productId })).program).toMatchObject({
      holdDays: 30,
      commissionType: CommissionType.PERCENT,
      maxCommissionMonths: 0,
      referralUrlTemplate: "",
    });
  });

  it("keeps a flat program's amount: it cannot be set to nothing while the program is flat", async () => {
    const productId = await newProduct();
    await h.partners.updateProgram({ productId, commissionType: CommissionType.FLAT, commissionFlatCents: 100n });
    const errors = await fieldErrorsOfCall(h.partners.updateProgram({ productId, commissionFlatCents: 0n }));
    expect(Object.keys(errors)).toEqual(["commission_flat_cents"]);
    const percent = await h.partners.updateProgram({
      productId,
      commissionType: CommissionType.PERCENT,
      commissionFlatCents: 0n,
    });
    expect(percent.program).toMatchObject({ commissionType: CommissionType.PERCENT, commissionFlatCents: 0n });
  });
});

describe("a partnership's commission override", () => {
  it("stores only the fields given, keeps a null limit apart from an inherited one, and shows it on reads", async () => {
    const productId = await newProduct();
    const partnershipId = await register(productId);
    const { partnership } = await h.partners.updatePartnership({
      productId,
      partnershipId,
      commissionOverrideChange: {
        case: "setCommissionOverride",
        value: { commissionRateBps: 4000, maxCommissionMonths: 0 },
      },
    });
    expect(partnership?.commissionOverride).toMatchObject({
      commissionType: CommissionType.UNSPECIFIED,
      commissionRateBps: 4000,
      maxCommissionMonths: 0,
    });
    expect(partnership?.commissionOverride?.maxCommissionPayments).toBeUndefined();
    expect(partnership?.commissionOverride?.tier2RateBps).toBeUndefined();
    const stored = await h.sql<{ commissionOverride: unknown }[]>`
      select commission_override from partnerships where id = ${partnershipId}`;
    expect(stored[0]?.commissionOverride).toEqual({ commissionRateBps: 4000, maxCommissionMonths: null });

    const read = await h.partners.getPartnership({ productId, partnershipId });
    expect(read.partnership?.commissionOverride?.commissionRateBps).toBe(4000);
    const resolved = await h.partners.resolveAttribution({
      productId,
      target: { case: "partnershipId", value: partnershipId },
    });
    expect(resolved.commissionOverride).toMatchObject({ commissionRateBps: 4000, maxCommissionMonths: 0 });
  });

  it("replaces the override as a whole, and removes it on clear or when it overrides nothing", async () => {
    const productId = await newProduct();
    const partnershipId = await register(productId);
    const set = (value: object) =>
      h.partners.updatePartnership({
        productId,
        partnershipId,
        commissionOverrideChange: { case: "setCommissionOverride", value },
      });
    await set({ commissionRateBps: 4000 });
    const replaced = await set({ maxCommissionPayments: 3 });
    expect(replaced.partnership?.commissionOverride?.commissionRateBps).toBeUndefined();
    expect(replaced.partnership?.commissionOverride?.maxCommissionPayments).toBe(3);
    const cleared = await h.partners.updatePartnership({
      productId,
      partnershipId,
      commissionOverrideChange: { case: "clearCommissionOverride", value: true },
    });
    expect(cleared.partnership?.commissionOverride).toBeUndefined();
    await set({ tier2RateBps: 900 });
    expect((await set({})).partnership?.commissionOverride).toBeUndefined();
  });

  it("refuses bad values naming the field, and a flat override without its own amount; nothing changes", async () => {
    const productId = await newProduct();
    const partnershipId = await register(productId);
    const cases = [
      [{ commissionRateBps: 10_001 }, "commission_rate_bps"],
      [{ tier2RateBps: -5 }, "tier2_rate_bps"],
      [{ commissionFlatCents: 100_000_000_001n }, "commission_flat_cents"],
      [{ commissionType: CommissionType.FLAT }, "commission_flat_cents"],
      [{ maxCommissionMonths: 121 }, "max_commission_months"],
      [{ maxCommissionPayments: -1 }, "max_commission_payments"],
    ] as const;
    for (const [value, field] of cases) {
      const errors = await fieldErrorsOfCall(
        h.partners.updatePartnership({
          productId,
          partnershipId,
          status: PartnershipStatus.REMOVED,
          commissionOverrideChange: { case: "setCommissionOverride", value },
        }),
      );
      expect(errors).toEqual({ commission_override: [expect.stringMatching(new RegExp(`^${field}: `))] });
    }
    const { partnership } = await h.partners.getPartnership({ productId, partnershipId });
    expect(partnership?.status).toBe(PartnershipStatus.ACTIVE);
    expect(partnership?.commissionOverride).toBeUndefined();
  });

  it("applies a status change and an override together, or neither", async () => {
    const productId = await newProduct();
    const partnershipId = await register(productId);
    const refused = await h.partners
      .updatePartnership({
        productId,
        partnershipId,
        status: PartnershipStatus.ACTIVE, // already active: not a transition
        commissionOverrideChange: { case: "setCommissionOverride", value: { commissionRateBps: 100 } },
      })
      .catch((e: ConnectError) => e.code);
    expect(refused).toBe(Code.FailedPrecondition);
    expect(
      (await h.partners.getPartnership({ productId, partnershipId })).partnership?.commissionOverride,
    ).toBeUndefined();

    const both = await h.partners.updatePartnership({
      productId,
      partnershipId,
      status: PartnershipStatus.REMOVED,
      commissionOverrideChange: { case: "setCommissionOverride", value: { commissionRateBps: 100 } },
    });
    expect(both.partnership).toMatchObject({
      status: PartnershipStatus.REMOVED,
      commissionOverride: { commissionRateBps: 100 },
    });
  });

  it("answers not found for another product's partnership and publishes each change", async () => {
    const [mine, theirs] = [await newProduct(), await newProduct()];
    const foreign = await register(theirs);
    const code = await h.partners
      .updatePartnership({
        productId: mine,
        partnershipId: foreign,
        commissionOverrideChange: { case: "setCommissionOverride", value: { commissionRateBps: 1 } },
      })
      .catch((e: ConnectError) => e.code);
    expect(code).toBe(Code.NotFound);
    expect(
      (await h.partners.getPartnership({ productId: theirs, partnershipId: foreign })).partnership?.commissionOverride,
    ).toBeUndefined();

    const own = await register(mine);
    await h.partners.updatePartnership({
      productId: mine,
      partnershipId: own,
      commissionOverrideChange: { case: "setCommissionOverride", value: { commissionRateBps: 1 } },
    });
    const rows = await h.sql<{ payload: Uint8Array }[]>`
      select payload from outbox where subject = 'partners.partnership.commission_override_changed' order by seq`;
    const events = rows.map((r) => fromBinary(PartnershipCommissionOverrideChangedSchema, r.payload));
    expect(events.filter((e) => e.partnership?.id === foreign)).toEqual([]);
    const mineEvent = events.find((e) => e.partnership?.id === own);
    expect(mineEvent?.partnership?.commissionOverride?.commissionRateBps).toBe(1);
    expect(mineEvent?.partnership?.affiliate?.email).toBe("");
  });
});
