import { describe, expect, it } from "vitest";
import { characterCount, isCleanText } from "../src/text.js";

const loneHigh = "\uD83D";
const loneLow = "\uDE00";
const smile = "\uD83D\uDE00";

describe("isCleanText", () => {
  it("refuses U+0000 and unpaired surrogates anywhere, and takes everything else", () => {
    for (const bad of [
      "\u0000",
      "a\u0000b",
      loneHigh,
      loneLow,
      `a${loneHigh}b`,
      `${loneLow}${loneHigh}`,
      `${smile}${loneLow}`,
    ]) {
      expect(isCleanText(bad), JSON.stringify(bad)).toBe(false);
    }
    for (const good of ["", "Ada", "é", smile, `${smile}${smile}`, "\u0001\u001f", "\uFFFD", "日本語"]) {
      expect(isCleanText(good), JSON.stringify(good)).toBe(true);
    }
  });
});

describe("characterCount", () => {
  it("counts code points: a surrogate pair is one character, a lone surrogate one", () => {
    expect(characterCount("")).toBe(0);
    expect(characterCount("abc")).toBe(3);
    expect(characterCount(smile.repeat(200))).toBe(200);
    expect(characterCount(`a${smile}é`)).toBe(3);
    expect(characterCount(`${loneHigh}${loneHigh}`)).toBe(2);
    expect(characterCount(`${loneLow}${smile}`)).toBe(2);
  });
});
