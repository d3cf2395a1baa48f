import { KeyMode, PartnershipStatus } from "@affiliate/proto/partners";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const codeOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return ConnectError.from(error).code;
  }
};

const newProduct = async (name = "Publishable") => {
  const { product, keys } = await h.admin.createProduct({ name });
  return { productId: product?.id ?? "", keys };
};

/** A code no other test (nor run, the database being this run's own) uses. */
const uniqueCode = () => `LINK_${Math.random().toString(36).slice(2, 10)}`;

describe("publishable keys (contract section 17)", () => {
  it("are made with the product, authenticate as publishable, and read back", async () => {
    const { productId, keys } = await newProduct();
    expect(keys?.publishableKey).toMatch(/^pk_live_[A-Za-z0-9]{33}$/);
    expect(keys?.testPublishableKey).toMatch(/^pk_test_[A-Za-z0-9]{33}$/);
    expect(await h.partners.authenticate({ apiKey: keys?.publishableKey ?? "" })).toMatchObject({
      productId,
      mode: KeyMode.PUBLISHABLE_LIVE,
    });
    expect(await h.partners.authenticate({ apiKey: keys?.testPublishableKey ?? "" })).toMatchObject({
      productId,
      mode: KeyMode.PUBLISHABLE_TEST,
    });
    const read = await h.partners.getPublishableKeys({ productId });
    expect(read.keys).toMatchObject({
      publishableKey: keys?.publishableKey,
      testPublishableKey: keys?.testPublishableKey,
    });
  });

  it("rotate alone, leaving the secret keys working; a full rotation replaces them too", async () => {
    const { productId, keys } = await newProduct();
    const rotated = (await h.partners.rotatePublishableKeys({ productId })).keys;
    expect(rotated?.publishableKey).toMatch(/^pk_live_/);
    expect(rotated?.publishableKey).not.toBe(keys?.publishableKey);
    expect(await codeOf(h.partners.authenticate({ apiKey: keys?.publishableKey ?? "" }))).toBe(Code.Unauthenticated);
    expect(await h.partners.authenticate({ apiKey: rotated?.publishableKey ?? "" })).toMatchObject({ productId });
    expect(await h.partners.authenticate({ apiKey: keys?.secretKey ?? "" })).toMatchObject({ mode: KeyMode.LIVE });
    expect((await h.partners.getPublishableKeys({ productId })).keys?.publishableKey).toBe(rotated?.publishableKey);

    const all = (await h.admin.rotateKeys({ productId })).keys;
    expect(await codeOf(h.partners.authenticate({ apiKey: rotated?.publishableKey ?? "" }))).toBe(Code.Unauthenticated);
    expect(await h.partners.authenticate({ apiKey: all?.publishableKey ?? "" })).toMatchObject({ productId });
  });

  it("are issued on first read for a product that had none, once however many read at once", async () => {
    const { productId } = await newProduct();
    await h.sql`delete from api_keys where product_id = ${productId} and mode like 'publishable%'`;
    const reads = await Promise.all([1, 2, 3].map(() => h.partners.getPublishableKeys({ productId })));
    expect(new Set(reads.map((r) => r.keys?.publishableKey)).size).toBe(1);
    const [live] = await h.sql<{ count: number }[]>`
      select count(*)::int as count from api_keys where product_id = ${productId} and revoked_at is null and mode like 'publishable%'`;
    expect(live?.count).toBe(2);
  });
});

describe("referral links (contract section 17)", () => {
  it("resolve a code across products to its active partnership and the program's template", async () => {
    const { productId } = await newProduct("Links");
    await h.partners.updateProgram({ productId, referralUrlTemplate: "https://acme.example/?ref={code}" });
    const code = uniqueCode();
    const partnership = (
      await h.partners.registerAffiliate({
        productId,
        registration: { email: uniqueEmail(), referralCode: code },
        notify: false,
      })
    ).partnership;
    expect(await h.partners.resolveReferralLink({ referralCode: code.toLowerCase() })).toMatchObject({
      productId,
      partnershipId: partnership?.id,
      referralCode: code,
      referralUrlTemplate: "https://acme.example/?ref={code}",
    });
  });

  it("name nothing when the code is unknown, malformed, inactive, or two products share it", async () => {
    expect(await codeOf(h.partners.resolveReferralLink({ referralCode: uniqueCode() }))).toBe(Code.NotFound);
    expect(await codeOf(h.partners.resolveReferralLink({ referralCode: "no spaces" }))).toBe(Code.NotFound);

    const { productId } = await newProduct("Dead link");
    const dead = uniqueCode();
    const partnership = (
      await h.partners.registerAffiliate({
        productId,
        registration: { email: uniqueEmail(), referralCode: dead },
        notify: false,
      })
    ).partnership;
    await h.partners.updatePartnershipStatus({
      productId,
      partnershipId: partnership?.id ?? "",
      status: PartnershipStatus.REMOVED,
    });
    expect(await codeOf(h.partners.resolveReferralLink({ referralCode: dead }))).toBe(Code.NotFound);

    const shared = uniqueCode();
    for (const name of ["Shared one", "Shared two"]) {
      const { productId: owner } = await newProduct(name);
      await h.partners.registerAffiliate({
        productId: owner,
        registration: { email: uniqueEmail(), referralCode: shared },
        notify: false,
      });
    }
    expect(await codeOf(h.partners.resolveReferralLink({ referralCode: shared }))).toBe(Code.NotFound);
  });
});
