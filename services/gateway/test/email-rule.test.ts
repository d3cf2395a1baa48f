import { isValidEmail, normalizeEmail, referralCodePattern } from "@affiliate/contract-rules";
import { emailSchema, referralCodeSchema } from "@affiliate/rest-shapes/schemas/common";
import { describe, expect, it } from "vitest";

/**
 * The gateway checks an address before any service sees it, and the services check it again
 * (they trust no caller): both must say the same, or an address the gateway refuses would be one
 * a service accepts, or one the gateway lets through would be refused by a service.
 */
describe("the gateway's email and referral code rules are the services' own", () => {
  const addresses = [
    "ada@example.com",
    "  Ada@Example.COM ",
    "o'brien+tag@mail.example.co.uk",
    "josé@example.com",
    "user@xn--bcher-kva.example",
    "a@b.c",
    `${"a".repeat(242)}@example.com`,
    `${"a".repeat(243)}@example.com`,
    "no-at-sign.example.com",
    "two@@example.com",
    "space in@example.com",
    "nodot@localhost",
    "",
  ];

  it.each(addresses)("%j: the REST schema accepts it exactly when the platform rule does", (address) => {
    const rest = emailSchema.safeParse(address);
    const platform = isValidEmail(normalizeEmail(address));
    expect(rest.success).toBe(platform);
    if (rest.success) expect(rest.data).toBe(normalizeEmail(address));
  });

  it("covers both outcomes, at the length limit too", () => {
    expect(emailSchema.safeParse(`${"a".repeat(242)}@example.com`).success).toBe(true);
    expect(emailSchema.safeParse(`${"a".repeat(243)}@example.com`).success).toBe(false);
    expect(emailSchema.safeParse("josé@example.com").success).toBe(true);
  });

  it.each(["ADA", "ada_1-x", "ab", "a".repeat(50), "a".repeat(51), "ada!", "adá"])(
    "referral code %j: the REST schema accepts it exactly when the platform pattern does",
    (code) => {
      expect(referralCodeSchema.safeParse(code).success).toBe(referralCodePattern.test(code));
    },
  );
});
