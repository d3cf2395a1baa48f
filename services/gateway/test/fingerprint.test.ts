import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, requestFingerprint } from "../src/fingerprint.js";

describe("canonical JSON and the refund fingerprint", () => {
  it("sorts keys recursively, keeps array order, writes no whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: "x" } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}',
    );
    expect(canonicalJson({ é: 1, Z: 2, a: 3, "10": 4, "9": 5 })).toBe('{"10":4,"9":5,"Z":2,"a":3,"é":1}');
    expect(canonicalJson(["b", "a"])).toBe('["b","a"]');
    expect(canonicalJson({ text: 'quote " and \\ and \n' })).toBe('{"text":"quote \\" and \\\\ and \\n"}');
  });

  it("is the sha256 hex of the canonical body without idempotency_key", () => {
    const expected = createHash("sha256").update('{"commission_id":"com_1","refund_amount_cents":5}').digest("hex");
    expect(requestFingerprint({ refund_amount_cents: 5, commission_id: "com_1", idempotency_key: "k" })).toBe(expected);
    expect(requestFingerprint({ commission_id: "com_1", refund_amount_cents: 5 })).toBe(expected);
    expect(requestFingerprint({ commission_id: "com_1", refund_amount_cents: 6 })).not.toBe(expected);
    expect(requestFingerprint({ commission_id: "com_1", refund_amount_cents: 5, note: "x" })).not.toBe(expected);
  });
});
