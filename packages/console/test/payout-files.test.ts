import { describe, expect, it } from "vitest";
import { parseCsv, skippedPayouts } from "../src/screens/payouts.js";

describe("the platform's CSV export as the console reads it", () => {
  it("reads quoted fields with commas, doubled quotes and line breaks", () => {
    expect(parseCsv('a,"b, c","say ""hi""\r\nthere"\r\n1,2,3')).toEqual([
      ["a", "b, c", 'say "hi"\r\nthere'],
      ["1", "2", "3"],
    ]);
  });

  it("lists the approved payouts no provider file can pay, with the reason", () => {
    const csv =
      "payout_id,amount,currency,skipped_reason\n" + "po_1,12.50,usd,\n" + 'po_2,7.00,eur,"no payout method, yet"\n';
    expect(skippedPayouts(csv)).toEqual([
      { payoutId: "po_2", amount: "7.00", currency: "eur", reason: "no payout method, yet" },
    ]);
    expect(skippedPayouts("id,amount\npo_1,1\n")).toEqual([]);
  });
});
