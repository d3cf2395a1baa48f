import { PartnershipStatus, PartnershipStatusChangedSchema, ProgramUpdatedSchema } from "@affiliate/proto/partners";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async () => (await h.admin.createProduct({ name: "Attribution" })).product?.id ?? "";
const register = async (productId: string, extra: { referralCode?: string; sponsorReferralCode?: string } = {}) =>
  (await h.partners.registerAffiliate({ productId, registration: { email: uniqueEmail(), ...extra }, notify: false }))
    .partnership;

describe("resolving attribution for the ledger", () => {
  it("resolves a code case-insensitively with the program and the active sponsor", async () => {
    const productId = await newProduct();
    await h.partners.updateProgram({ productId, commissionRateBps: 3000, holdDays: 7 });
    const sponsor = await register(productId, { referralCode: "boss" });
    const recruit = await register(productId, { referralCode: "Recruit", sponsorReferralCode: "boss" });
    const res = await h.partners.resolveAttribution({ productId, target: { case: "referralCode", value: "RECRUIT" } });
    expect(res).toMatchObject({
      partnershipId: recruit?.id,
      referralCode: "Recruit",
      status: PartnershipStatus.ACTIVE,
      activeSponsorPartnershipId: sponsor?.id,
      program: { commissionRateBps: 3000, tier2RateBps: 500, holdDays: 7, attributionWindowDays: 60 },
    });
    const byId = await h.partners.resolveAttribution({
      productId,
      target: { case: "partnershipId", value: recruit?.id ?? "" },
    });
    expect(byId.partnershipId).toBe(recruit?.id);
  });

  it("leaves out a sponsor who is no longer active, and reports the partnership's own status", async () => {
    const productId = await newProduct();
    const sponsor = await register(productId, { referralCode: "old-boss" });
    const recruit = await register(productId, { sponsorReferralCode: "old-boss" });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: sponsor?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: recruit?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    const res = await h.partners.resolveAttribution({
      productId,
      target: { case: "partnershipId", value: recruit?.id ?? "" },
    });
    expect(res).toMatchObject({ status: PartnershipStatus.REMOVED, activeSponsorPartnershipId: "" });
  });

  it("answers not found for an unknown code or another product's partnership, and invalid without a target", async () => {
    const productId = await newProduct();
    const foreign = await register(await newProduct(), { referralCode: "elsewhere" });
    for (const target of [
      { case: "referralCode" as const, value: "nobody" },
      { case: "referralCode" as const, value: "elsewhere" },
      { case: "partnershipId" as const, value: foreign?.id ?? "" },
    ]) {
      const error = await h.partners.resolveAttribution({ productId, target }).catch(ConnectError.from);
      expect((error as ConnectError).code).toBe(Code.NotFound);
    }
    const empty = await h.partners.resolveAttribution({ productId }).catch(ConnectError.from);
    expect((empty as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe("batch reads", () => {
  it("returns the product's partnerships among the ids, and skips others", async () => {
    const productId = await newProduct();
    const [a, b] = [await register(productId), await register(productId)];
    const foreign = await register(await newProduct());
    const { partnerships } = await h.partners.batchGetPartnerships({
      productId,
      partnershipIds: [a?.id ?? "", foreign?.id ?? "", b?.id ?? "", "ptn_missing"],
    });
    expect(partnerships.map((p) => p.id).sort()).toEqual([a?.id, b?.id].sort());
  });

  it("refuses more than 100 ids", async () => {
    const productId = await newProduct();
    const ids = Array.from({ length: 101 }, (_, i) => `ptn_${i}`);
    const error = await h.partners.batchGetPartnerships({ productId, partnershipIds: ids }).catch(ConnectError.from);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe("counting partnerships", () => {
  it("counts the product's partnerships of one status, or all", async () => {
    const productId = await newProduct();
    const [a, b] = [await register(productId), await register(productId)];
    await register(productId);
    await register(await newProduct());
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: a?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: b?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    expect((await h.partners.countPartnerships({ productId, status: PartnershipStatus.ACTIVE })).count).toBe(1n);
    expect((await h.partners.countPartnerships({ productId, status: PartnershipStatus.REMOVED })).count).toBe(2n);
    expect((await h.partners.countPartnerships({ productId })).count).toBe(3n);
  });
});

describe("events for caches", () => {
  it("every status change and every program update is published", async () => {
    const productId = await newProduct();
    await h.partners.updateProgram({ productId, autoApprove: false, tier2RateBps: 700 });
    const pending = await register(productId);
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: pending?.id ?? "",
      status: PartnershipStatus.ACTIVE,
    });
    const rows = await h.sql<{ subject: string; payload: Uint8Array }[]>`
      select subject, payload from outbox
      where subject in ('partners.program.updated', 'partners.partnership.status_changed') order by seq`;
    const program = rows
      .filter((r) => r.subject === "partners.program.updated")
      .map((r) => fromBinary(ProgramUpdatedSchema, r.payload));
    expect(program.find((e) => e.program?.productId === productId)?.program).toMatchObject({
      autoApprove: false,
      tier2RateBps: 700,
    });
    const changes = rows
      .filter((r) => r.subject === "partners.partnership.status_changed")
      .map((r) => fromBinary(PartnershipStatusChangedSchema, r.payload));
    expect(changes.find((e) => e.partnership?.id === pending?.id)).toMatchObject({
      previousStatus: PartnershipStatus.PENDING,
      partnership: { status: PartnershipStatus.ACTIVE },
    });
  });
});
