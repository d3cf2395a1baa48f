import { describe, expect, it } from "vitest";
import { money, parseCents } from "../src/format.js";

describe("money as the console writes and reads it", () => {
  it("writes cents exactly, sums past 2^53 included", () => {
    expect(money(6469, "usd")).toBe("$64.69");
    expect(money(-50, "usd")).toBe("-$0.50");
    expect(money(900_719_925_474_099_301n, "usd")).toBe("$9,007,199,254,740,993.01");
  });

  it("reads typed amounts as integer cents, and refuses what is not an amount", () => {
    expect(
      ["12", "12.5", "12.50", "1,200.05", " 0.01 ", "1.234", "12.", "-3", "1,20", "abc", ""].map((text) =>
        parseCents(text),
      ),
    ).toEqual([1200n, 1250n, 1250n, 120_005n, 1n, undefined, undefined, undefined, undefined, undefined, undefined]);
  });
});
