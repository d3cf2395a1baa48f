import { describe, expect, it } from "vitest";
import { decide, parseStored, referralInUrl, repeatClickMs, withClientReference } from "../src/referral.js";

const now = Date.UTC(2026, 0, 10, 12);
const stored = { code: "ADA", visitor_id: "vis_abc", expires: now + 1000, clicked_at: now - 1000 };

describe("the attribution script's decisions", () => {
  it("reads back only a usable, unexpired referral", () => {
    expect(parseStored(JSON.stringify(stored), now)).toEqual(stored);
    expect(parseStored(JSON.stringify({ ...stored, expires: now }), now)).toBeUndefined();
    expect(parseStored(JSON.stringify({ ...stored, code: "a b" }), now)).toBeUndefined();
    expect(parseStored("{not json", now)).toBeUndefined();
    expect(parseStored(null, now)).toBeUndefined();
  });

  it("finds the code under the first parameter present, and a link's visitor id", () => {
    expect(referralInUrl("?via=ADA&x=1", ["ref", "ref", "via"])).toEqual({ code: "ADA", visitorId: undefined });
    expect(referralInUrl("?ref=ADA&aff_vid=vis_1", ["ref", "via"])).toEqual({ code: "ADA", visitorId: "vis_1" });
    expect(referralInUrl("?ref=a%20b", ["ref"])).toBeUndefined();
    expect(referralInUrl("?partner=ADA", ["partner", "ref"])).toEqual({ code: "ADA", visitorId: undefined });
    expect(referralInUrl("", ["ref"])).toBeUndefined();
  });

  it("records one click per visitor and code within 30 minutes, and adopts a link's click", () => {
    const found = { code: "ada", visitorId: undefined };
    expect(decide(undefined, stored, now)).toEqual({ kind: "keep" });
    expect(decide(found, stored, now)).toEqual({ kind: "keep" });
    expect(decide(found, { ...stored, clicked_at: now - repeatClickMs }, now)).toEqual({
      kind: "click",
      visitorId: "vis_abc",
    });
    expect(decide({ code: "BOB", visitorId: undefined }, stored, now)).toEqual({ kind: "click", visitorId: "vis_abc" });
    expect(decide(found, undefined, now)).toEqual({ kind: "click", visitorId: undefined });
    expect(decide({ code: "ADA", visitorId: "vis_new" }, stored, now)).toEqual({ kind: "adopt", visitorId: "vis_new" });
    expect(decide({ code: "ADA", visitorId: "vis_abc" }, stored, now)).toEqual({ kind: "keep" });
  });

  it("adds client_reference_id to Payment Links only, keeping one already set", () => {
    expect(withClientReference("https://buy.stripe.com/test_123?prefilled_email=a%40b.c", "vis_1")).toBe(
      "https://buy.stripe.com/test_123?prefilled_email=a%40b.c&client_reference_id=vis_1",
    );
    expect(withClientReference("https://buy.stripe.com/x?client_reference_id=mine", "vis_1")).toBeUndefined();
    expect(withClientReference("https://example.com/buy", "vis_1")).toBeUndefined();
  });
});
