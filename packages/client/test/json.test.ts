import { describe, expect, it } from "vitest";
import { parseExact, stringifyExact } from "../src/json.js";

const beyondDouble = 9_007_199_254_740_993n; // 2^53 + 1: a double reads it as 2^53

describe("parseExact", () => {
  it("reads the int64 fields it is told of as bigint, digit for digit, and every other number as a number", () => {
    const text = `{"data":{"stats":{"clicks":3,"earned_cents":${beyondDouble}},"rate":0.25,"items":[{"amount_cents":9223372036854775807,"level":1},{"amount_cents":-5,"level":2}]}}`;
    const fields = { data: { stats: { earned_cents: true }, items: { "[]": { amount_cents: true } } } } as const;
    expect(parseExact(text, fields)).toEqual({
      data: {
        stats: { clicks: 3, earned_cents: beyondDouble },
        rate: 0.25,
        items: [
          { amount_cents: 9_223_372_036_854_775_807n, level: 1 },
          { amount_cents: -5n, level: 2 },
        ],
      },
    });
  });

  it("gives an int64 field a bigint whatever its size, and a record's values by `*`", () => {
    expect(parseExact('{"sums":{"a":1,"b":2},"n":7}', { sums: { "*": true } })).toEqual({
      sums: { a: 1n, b: 2n },
      n: 7,
    });
  });

  it("keeps a field named like an Object method a plain field, and __proto__ plain data", () => {
    const parsed = parseExact('{"constructor":5,"toString":{"x":1},"__proto__":{"polluted":true}}', {
      constructor: true,
    } as never) as Record<string, unknown>;
    expect(parsed.constructor).toBe(5n);
    expect(parsed.toString).toEqual({ x: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses text that is not JSON", () => {
    expect(() => parseExact("{", undefined)).toThrow(SyntaxError);
  });
});

describe("stringifyExact", () => {
  it("writes bigints as JSON integers digit for digit, numbers as JSON does", () => {
    expect(stringifyExact({ amount_cents: beyondDouble, rate: 0.5, list: [1n, 2] })).toBe(
      '{"amount_cents":9007199254740993,"rate":0.5,"list":[1,2]}',
    );
  });
});
