import { stringifyExact } from "@affiliate/platform";
import type { PublicPartnership } from "@affiliate/rest-shapes/schemas/affiliates";
import { describe, expect, it } from "vitest";
import { type PartnershipPage, partnershipPageJson } from "../src/list-json.js";

const partnership = (i: number, overrides: Partial<PublicPartnership> = {}): PublicPartnership => ({
  id: `ptn_${i}`,
  status: "active",
  referral_code: `code-${i}`,
  created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
  affiliate: { id: `aff_${i}`, email: `a${i}@example.com`, name: `Name ${i}` },
  stats: { clicks: i, conversions: 0, earned_cents: BigInt(i) * 100n },
  ...overrides,
});

describe("partnershipPageJson", () => {
  it("writes the bytes stringifyExact writes, for awkward text and sums past 2^53", () => {
    const pages: PartnershipPage[] = [
      { data: [], pagination: { next_cursor: null, has_more: false } },
      {
        data: [
          partnership(1, {
            affiliate: { id: "aff_1", email: 'q"uote\\back@example.com', name: "Zoë \u{1F600} \n\t\u0007 </script>" },
            stats: { clicks: 9_007_199_254_740_991, conversions: 3, earned_cents: 9_223_372_036_854_775_807n },
          }),
          partnership(2, { status: "removed", stats: { clicks: 0, conversions: 0, earned_cents: 0 } }),
          partnership(3, { stats: { clicks: 1, conversions: 1, earned_cents: -5n } }),
        ],
        pagination: { next_cursor: "eyJ2IjoxfQ.sig-_", has_more: true },
      },
    ];
    for (const page of pages) expect(partnershipPageJson(page)).toBe(stringifyExact(page));
  });
});
