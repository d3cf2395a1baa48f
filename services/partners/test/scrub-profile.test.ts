import { newId, PageTokens } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../src/server.js";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
let erasure: ReturnType<typeof createClient<typeof ErasureOwnerService>>;
beforeAll(async () => {
  h = await startHarness();
  erasure = createClient(
    ErasureOwnerService,
    createRouterTransport(routes({ sql: h.sql, pageTokens: new PageTokens("test-page-token-secret") })),
  );
});
afterAll(() => h.close());

const counts = (response: { stores: { store: string; records: bigint }[] }) =>
  Object.fromEntries(response.stores.map(({ store, records }) => [store, Number(records)]));

async function productWith(email: string) {
  const { product } = await h.admin.createProduct({ name: `scrub ${email}` });
  const productId = product?.id ?? "";
  await h.partners.registerAffiliate({ productId, registration: { email }, notify: false });
  return productId;
}
const ipOf = async (email: string) =>
  (await h.sql<{ countryLastIp: string | null }[]>`select country_last_ip from affiliates where email = ${email}`)[0]
    ?.countryLastIp;

describe("ScrubProfile (partners' EraseCustomer)", () => {
  it("clears the profile's IP when the user has a partnership in the product, counted even when already null", async () => {
    const email = uniqueEmail();
    const productId = await productWith(email);
    await h.sql`update affiliates set country_last_ip = '203.0.113.9' where email = ${email}`;
    expect(counts(await erasure.findCustomer({ productId, email }))).toEqual({
      affiliate_profiles: 1,
      payout_methods: 0,
    });

    const erasureId = newId("ers");
    expect(counts(await erasure.eraseCustomer({ productId, email, erasureId }))).toEqual({
      affiliate_profiles: 1,
      payout_methods: 0,
    });
    expect(await ipOf(email)).toBeNull();
    expect(counts(await erasure.findCustomer({ productId, email }))).toEqual({
      affiliate_profiles: 0,
      payout_methods: 0,
    });
    // The same erasure repeated answers the same count; a new one counts the profile again (spec 4.11).
    expect(counts(await erasure.eraseCustomer({ productId, email, erasureId }))).toEqual({
      affiliate_profiles: 1,
      payout_methods: 0,
    });
    const again = await erasure.eraseCustomer({ productId, email, erasureId: newId("ers") });
    expect(counts(again)).toEqual({ affiliate_profiles: 1, payout_methods: 0 });
  });

  it("leaves a profile that is only in other products alone, and does not count it", async () => {
    const email = uniqueEmail();
    await productWith(email);
    await h.sql`update affiliates set country_last_ip = '203.0.113.10' where email = ${email}`;
    const { product } = await h.admin.createProduct({ name: "unrelated" });
    const response = await erasure.eraseCustomer({ productId: product?.id ?? "", email, erasureId: newId("ers") });
    expect(counts(response)).toEqual({ affiliate_profiles: 0, payout_methods: 0 });
    expect(await ipOf(email)).toBe("203.0.113.10");
  });
});
