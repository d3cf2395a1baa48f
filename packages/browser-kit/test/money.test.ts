import { describe, expect, it } from "vitest";
import { changeAgainst, formatCents, money, scaled } from "../src/money.js";

describe("formatCents", () => {
  it("writes cents exactly in the currency, at any size", () => {
    expect(formatCents(123456n, "usd", "en-US")).toBe("$1,234.56");
    expect(formatCents(5n, "usd", "en-US")).toBe("$0.05");
    expect(formatCents(0n, "eur", "en-US")).toBe("€0.00");
    expect(formatCents(9007199254740993n, "usd", "en-US")).toBe("$90,071,992,547,409.93");
    expect(formatCents(123456789012345678901234567n, "usd", "en-US")).toBe("$1,234,567,890,123,456,789,012,345.67");
  });

  it("keeps the sign of an amount under one unit", () => {
    expect(formatCents(-50n, "usd", "en-US")).toBe("-$0.50");
    expect(formatCents(-2550n, "usd", "en-US")).toBe("-$25.50");
  });

  it("writes the locale's separators", () => {
    expect(formatCents(123456n, "eur", "de-DE")).toBe("1.234,56\u00a0€");
  });

  it("still writes an amount in a currency Intl does not know", () => {
    expect(formatCents(-1999n, "zz!", "en-US")).toBe("-19.99 ZZ!");
  });
});

describe("money", () => {
  it("writes an int64 sum (bigint) and a single amount (number) alike, exactly", () => {
    expect(money(6469, "usd")).toBe("$64.69");
    expect(money(-50, "usd")).toBe("-$0.50");
    expect(money(900_719_925_474_099_301n, "usd")).toBe("$9,007,199,254,740,993.01");
  });
});

describe("changeAgainst", () => {
  it("rounds to whole percent on integers", () => {
    expect(changeAgainst(112n, 100n)).toEqual({ direction: "up", text: "+12%" });
    expect(changeAgainst(2n, 3n)).toEqual({ direction: "down", text: "−33%" });
    expect(changeAgainst(1n, 200n)).toEqual({ direction: "down", text: "−100%" });
    expect(changeAgainst(10_000_000_000_000_000_001n, 10_000_000_000_000_000_000n)).toEqual({
      direction: "up",
      text: "+<1%",
    });
  });

  it("says when nothing changed and when there was nothing before", () => {
    expect(changeAgainst(5n, 5n)).toEqual({ direction: "flat", text: "no change" });
    expect(changeAgainst(0n, 0n)).toEqual({ direction: "flat", text: "no change" });
    expect(changeAgainst(7n, 0n)).toEqual({ direction: "new", text: "new" });
  });
});

describe("scaled", () => {
  it("gives a bar's height as a share of the tallest, on integers", () => {
    expect(scaled(50n, 200n, 100)).toBe(25);
    expect(scaled(2n ** 70n, 2n ** 71n, 100)).toBe(50);
    expect(scaled(0n, 0n, 100)).toBe(0);
  });
});
