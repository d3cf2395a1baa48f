import { describe, expect, it } from "vitest";
import { parseCents } from "../src/format.js";

describe("money as the console reads it", () => {
  it("reads typed amounts as integer cents, and refuses what is not an amount", () => {
    expect(
      ["12", "12.5", "12.50", "1,200.05", " 0.01 ", "1.234", "12.", "-3", "1,20", "abc", ""].map((text) =>
        parseCents(text),
      ),
    ).toEqual([1200n, 1250n, 1250n, 120_005n, 1n, undefined, undefined, undefined, undefined, undefined, undefined]);
  });
});
