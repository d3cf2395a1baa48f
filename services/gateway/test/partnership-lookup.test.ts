import { PartnershipStatus } from "@affiliate/proto/partners";
import { describe, expect, it } from "vitest";
import { partnershipLookup } from "../src/partnership-lookup.js";
import { FakePartners } from "./support/fake-partners.js";

/** A clock the test moves by hand. */
const manualClock = () => ({
  ms: 1_000_000,
  now() {
    return this.ms;
  },
});

describe("partnershipLookup's active-affiliates count", () => {
  it("reuses a product's count for the TTL, then asks partners again", async () => {
    const fake = new FakePartners();
    const { productId } = fake.addProduct();
    fake.seed(productId, "a@example.com");
    const clock = manualClock();
    const lookup = partnershipLookup(fake.client, { activeCountTtlMs: 5000, clock });

    expect(await lookup.countActivePartnerships(productId)).toBe(1);
    fake.seed(productId, "b@example.com");
    clock.ms += 4999;
    expect(await lookup.countActivePartnerships(productId)).toBe(1);
    expect(fake.callsOf("countPartnerships")).toBe(1);

    clock.ms += 2;
    expect(await lookup.countActivePartnerships(productId)).toBe(2);
    expect(fake.callsOf("countPartnerships")).toBe(2);
  });

  it("keeps products apart and shares one call among concurrent askers", async () => {
    const fake = new FakePartners();
    const first = fake.addProduct().productId;
    const second = fake.addProduct().productId;
    fake.seed(first, "a@example.com");
    fake.seed(second, "b@example.com", PartnershipStatus.PENDING);
    const lookup = partnershipLookup(fake.client, { activeCountTtlMs: 5000, clock: manualClock() });

    const counts = await Promise.all([
      lookup.countActivePartnerships(first),
      lookup.countActivePartnerships(first),
      lookup.countActivePartnerships(second),
    ]);

    expect(counts).toEqual([1, 1, 0]);
    expect(fake.requestsOf("countPartnerships")).toMatchObject([
      { productId: first, status: PartnershipStatus.ACTIVE },
      { productId: second, status: PartnershipStatus.ACTIVE },
    ]);
  });

  it("asks every time with a TTL of 0", async () => {
    const fake = new FakePartners();
    const { productId } = fake.addProduct();
    const lookup = partnershipLookup(fake.client, { activeCountTtlMs: 0 });
    await lookup.countActivePartnerships(productId);
    await lookup.countActivePartnerships(productId);
    expect(fake.callsOf("countPartnerships")).toBe(2);
  });
});
