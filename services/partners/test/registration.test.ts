import { fieldErrorsOf } from "@affiliate/platform";
import { PartnershipStatus, RegistrationOutcome } from "@affiliate/proto/partners";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countOf, type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async (name = "Program") => (await h.admin.createProduct({ name })).product?.id ?? "";
const failure = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    const connectError = ConnectError.from(error);
    return {
      code: connectError.code,
      message: connectError.rawMessage,
      fields: fieldErrorsOf(connectError)?.fieldErrors,
    };
  }
  throw new Error("expected the call to fail");
};

describe("registering one affiliate", () => {
  it("creates the profile and an active partnership with a generated code", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const res = await h.partners.registerAffiliate({ productId, registration: { email, name: "Ada" }, notify: true });
    expect(res.outcome).toBe(RegistrationOutcome.CREATED);
    expect(res.partnership).toMatchObject({
      productId,
      status: PartnershipStatus.ACTIVE,
      affiliate: { email, name: "Ada" },
      sponsorPartnershipId: "",
    });
    expect(res.partnership?.id).toMatch(/^ptn_/);
    expect(res.partnership?.affiliate?.id).toMatch(/^aff_/);
    expect(res.partnership?.referralCode).toMatch(/^[A-Z2-9]{8}$/);
  });

  it("trims and lowercases the email", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const res = await h.partners.registerAffiliate({
      productId,
      registration: { email: `  ${email.toUpperCase()} ` },
      notify: false,
    });
    expect(res.partnership?.affiliate?.email).toBe(email);
    expect(res.partnership?.affiliate?.name).toBe("");
  });

  it("joins an existing profile from another program without creating one", async () => {
    const [first, second] = [await newProduct("First"), await newProduct("Second")];
    const email = uniqueEmail();
    const created = await h.partners.registerAffiliate({
      productId: first,
      registration: { email, name: "Kept" },
      notify: true,
    });
    const joined = await h.partners.registerAffiliate({
      productId: second,
      registration: { email, name: "Ignored" },
      notify: true,
    });
    expect(joined.outcome).toBe(RegistrationOutcome.JOINED);
    expect(joined.partnership?.affiliate).toEqual(created.partnership?.affiliate);
    const count = await countOf(h.sql`select count(*)::int as count from affiliates where email = ${email}`);
    expect(count).toBe(1);
  });

  it("answers 409 (already exists) for an affiliate already in the program, in any status but removed", async () => {
    const productId = await newProduct();
    for (const status of [PartnershipStatus.ACTIVE, PartnershipStatus.REJECTED] as const) {
      const email = uniqueEmail();
      const { partnership } = await h.partners.registerAffiliate({ productId, registration: { email }, notify: false });
      if (status === PartnershipStatus.REJECTED) {
        await h.sql`update partnerships set status = 'rejected' where id = ${partnership?.id ?? ""}`;
      }
      expect(
        await failure(h.partners.registerAffiliate({ productId, registration: { email }, notify: false })),
      ).toMatchObject({
        code: Code.AlreadyExists,
        message: "Affiliate is already in the program",
      });
    }
  });

  it("reactivates a removed partnership, keeping its id and code", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const { partnership } = await h.partners.registerAffiliate({ productId, registration: { email }, notify: false });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: partnership?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    const again = await h.partners.registerAffiliate({ productId, registration: { email }, notify: true });
    expect(again.outcome).toBe(RegistrationOutcome.REACTIVATED);
    expect(again.partnership).toMatchObject({
      id: partnership?.id,
      referralCode: partnership?.referralCode,
      status: PartnershipStatus.ACTIVE,
    });
  });

  it("starts partnerships pending when the program does not auto-approve", async () => {
    const productId = await newProduct();
    await h.partners.updateProgram({ productId, autoApprove: false });
    const res = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail() },
      notify: false,
    });
    expect(res.partnership?.status).toBe(PartnershipStatus.PENDING);
  });

  it("keeps a requested referral code and refuses it, in any case, when taken", async () => {
    const productId = await newProduct();
    const res = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), referralCode: "Jane-2024_x" },
      notify: false,
    });
    expect(res.partnership?.referralCode).toBe("Jane-2024_x");
    expect(
      await failure(
        h.partners.registerAffiliate({
          productId,
          registration: { email: uniqueEmail(), referralCode: "JANE-2024_X" },
          notify: false,
        }),
      ),
    ).toMatchObject({ code: Code.AlreadyExists, message: "Referral code is already taken" });
  });

  it("allows the same referral code in another product", async () => {
    const registration = { email: uniqueEmail(), referralCode: "shared-code" };
    await h.partners.registerAffiliate({ productId: await newProduct(), registration, notify: false });
    const other = await h.partners.registerAffiliate({ productId: await newProduct(), registration, notify: false });
    expect(other.partnership?.referralCode).toBe("shared-code");
  });

  it("links the sponsor given by an active partnership's code", async () => {
    const productId = await newProduct();
    const sponsor = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), referralCode: "sponsor1" },
      notify: false,
    });
    const recruit = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), sponsorReferralCode: "SPONSOR1" },
      notify: false,
    });
    expect(recruit.partnership?.sponsorPartnershipId).toBe(sponsor.partnership?.id);
  });

  it("refuses an unknown, inactive or foreign sponsor code as a field error", async () => {
    const productId = await newProduct();
    const removed = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), referralCode: "gone-sponsor" },
      notify: false,
    });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: removed.partnership?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    const elsewhere = await newProduct();
    await h.partners.registerAffiliate({
      productId: elsewhere,
      registration: { email: uniqueEmail(), referralCode: "foreign-sponsor" },
      notify: false,
    });
    for (const code of ["no-such-code", "gone-sponsor", "foreign-sponsor"]) {
      const email = uniqueEmail();
      expect(
        await failure(
          h.partners.registerAffiliate({
            productId,
            registration: { email, sponsorReferralCode: code },
            notify: false,
          }),
        ),
      ).toMatchObject({ code: Code.InvalidArgument, fields: { sponsorReferralCode: [expect.any(String)] } });
      const count = await countOf(h.sql`select count(*)::int as count from affiliates where email = ${email}`);
      expect(count).toBe(0);
    }
  });

  it("validates email, name and referral code with field errors", async () => {
    const productId = await newProduct();
    expect(
      await failure(
        h.partners.registerAffiliate({
          productId,
          registration: { email: "not-an-email", name: "", referralCode: "a b" },
          notify: false,
        }),
      ),
    ).toMatchObject({
      code: Code.InvalidArgument,
      fields: { email: [expect.any(String)], name: [expect.any(String)], referralCode: [expect.any(String)] },
    });
    for (const referralCode of ["ab", "x".repeat(51), "bad!code"]) {
      expect(
        (
          await failure(
            h.partners.registerAffiliate({
              productId,
              registration: { email: uniqueEmail(), referralCode },
              notify: false,
            }),
          )
        ).fields,
      ).toHaveProperty("referralCode");
    }
    expect(
      (
        await failure(
          h.partners.registerAffiliate({
            productId,
            registration: { email: uniqueEmail(), name: "n".repeat(201) },
            notify: false,
          }),
        )
      ).fields,
    ).toHaveProperty("name");
    // Characters, not UTF-16 units: 200 emoji (400 units) are a valid name.
    const emojiName = "\u{1F600}".repeat(200);
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), name: emojiName },
      notify: false,
    });
    expect(partnership?.affiliate?.name).toBe(emojiName);
  });

  it("registers exactly once under concurrent identical requests", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        h.partners.registerAffiliate({ productId, registration: { email }, notify: false }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((r) => r.status === "rejected")) {
      expect(ConnectError.from((r as PromiseRejectedResult).reason).code).toBe(Code.AlreadyExists);
    }
    const count = await countOf(h.sql`
      select count(*)::int as count from partnerships p join affiliates a on a.id = p.affiliate_id where a.email = ${email}`);
    expect(count).toBe(1);
  });

  it("writes the created event, with notify and without the affiliate's email or name, in the registration's transaction", async () => {
    const productId = await newProduct();
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email: uniqueEmail(), name: "Ada Lovelace" },
      notify: false,
    });
    const { fromBinary } = await import("@bufbuild/protobuf");
    const { PartnershipCreatedSchema } = await import("@affiliate/proto/partners");
    const rows = await h.sql<{ payload: Uint8Array }[]>`
      select payload from outbox where subject = 'partners.partnership.created' order by seq`;
    const events = rows.map((row) => fromBinary(PartnershipCreatedSchema, row.payload));
    const event = events.find((e) => e.partnership?.id === partnership?.id);
    expect(event).toMatchObject({ notify: false, newAffiliate: true, id: expect.stringMatching(/^msg_/) });
    // Events carry ids: the email and the name are asked of GetPartnership by whoever needs them.
    expect(event?.partnership?.affiliate).toMatchObject({ id: partnership?.affiliate?.id, email: "", name: "" });
    expect(partnership?.affiliate).toMatchObject({ name: "Ada Lovelace" });
  });

  it("answers not found for an unknown product and writes nothing", async () => {
    const email = uniqueEmail();
    expect(
      (
        await failure(
          h.partners.registerAffiliate({ productId: "prd_missing", registration: { email }, notify: false }),
        )
      ).code,
    ).toBe(Code.NotFound);
    const count = await countOf(h.sql`select count(*)::int as count from affiliates where email = ${email}`);
    expect(count).toBe(0);
  });
});

describe("bulk registration", () => {
  it("processes entries independently and reports each in order", async () => {
    const productId = await newProduct();
    const existing = uniqueEmail();
    await h.partners.registerAffiliate({
      productId: await newProduct("Other"),
      registration: { email: existing },
      notify: false,
    });
    const removed = uniqueEmail();
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email: removed },
      notify: false,
    });
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: partnership?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    const fresh = uniqueEmail();
    const { results } = await h.partners.bulkRegisterAffiliates({
      productId,
      notify: true,
      registrations: [
        { email: fresh },
        { email: existing },
        { email: removed },
        { email: fresh },
        { email: "broken" },
        { email: uniqueEmail(), sponsorReferralCode: "nobody-here" },
      ],
    });
    expect(results.map((r) => (r.result.case === "registered" ? r.result.value.outcome : r.result.value))).toEqual([
      RegistrationOutcome.CREATED,
      RegistrationOutcome.JOINED,
      RegistrationOutcome.REACTIVATED,
      "Affiliate is already in the program",
      "email: Invalid email address",
      "sponsorReferralCode: No active affiliate of this program has this referral code",
    ]);
    expect(results.map((r) => r.email)).toEqual([fresh, existing, removed, fresh, "broken", expect.any(String)]);
  });

  it("rolls back a failed entry alone", async () => {
    const productId = await newProduct();
    const { results } = await h.partners.bulkRegisterAffiliates({
      productId,
      notify: false,
      registrations: [
        { email: uniqueEmail(), referralCode: "dup-code" },
        { email: uniqueEmail("second"), referralCode: "DUP-CODE" },
      ],
    });
    expect(results[1]?.result).toEqual({ case: "error", value: "Referral code is already taken" });
    const second = results[1]?.email ?? "";
    const count = await countOf(h.sql`select count(*)::int as count from affiliates where email = ${second}`);
    expect(count).toBe(0);
  });

  it("refuses 0 or more than 100 entries and writes nothing", async () => {
    const productId = await newProduct();
    expect(
      (await failure(h.partners.bulkRegisterAffiliates({ productId, notify: false, registrations: [] }))).code,
    ).toBe(Code.InvalidArgument);
    const tooMany = Array.from({ length: 101 }, () => ({ email: uniqueEmail("many") }));
    expect(
      (await failure(h.partners.bulkRegisterAffiliates({ productId, notify: false, registrations: tooMany }))).code,
    ).toBe(Code.InvalidArgument);
    const count = await countOf(h.sql`select count(*)::int as count from partnerships where product_id = ${productId}`);
    expect(count).toBe(0);
  });

  it("registers 100 entries in one call", async () => {
    const productId = await newProduct();
    const registrations = Array.from({ length: 100 }, () => ({ email: uniqueEmail("hundred") }));
    const { results } = await h.partners.bulkRegisterAffiliates({ productId, notify: false, registrations });
    expect(results.filter((r) => r.result.case === "registered")).toHaveLength(100);
  });
});
