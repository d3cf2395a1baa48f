import { describe, expect, it } from "vitest";
import { maxReferralUrlTemplateLength, referralUrlTemplateProblem } from "../src/commission-terms.js";
import { isValidEmail, normalizeEmail } from "../src/email.js";
import { checkPayoutDetails, ibanProblem, maskPayoutDetails } from "../src/payout-details.js";
import { referralCodePattern } from "../src/referral-code.js";

describe("the email rule", () => {
  it("stores an address trimmed and lowercased, and takes one @, no spaces, a dot in the domain", () => {
    expect(normalizeEmail("  Ada@Example.COM ")).toBe("ada@example.com");
    expect(["ada@example.com", "a.b+c@mail.example.org"].map(isValidEmail)).toEqual([true, true]);
    expect(["ada", "ada@example", "a da@example.com", "a@b@example.com"].map(isValidEmail)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it("counts its 254 characters in code points", () => {
    const local = "😀".repeat(242); // 484 UTF-16 units, 242 characters
    expect(isValidEmail(`${local}@example.com`)).toBe(true); // 254 characters
    expect(isValidEmail(`${local}a@example.com`)).toBe(false); // 255
  });
});

describe("referral codes", () => {
  it("are 3-50 ASCII letters, digits, hyphens or underscores", () => {
    expect(["abc", "Ada_2024-x", "a".repeat(50)].map((code) => referralCodePattern.test(code))).toEqual([
      true,
      true,
      true,
    ]);
    expect(["ab", "a".repeat(51), "ada lovelace", "adé", "a/b"].map((code) => referralCodePattern.test(code))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe("referral link templates", () => {
  it("take an http(s) URL with {code} and say what is wrong with anything else", () => {
    expect(
      [
        "https://example.com/?via={code}",
        "http://example.com/{code}",
        "https://example.com/",
        "ftp://example.com/{code}",
        "not a url {code}",
        `https://example.com/{code}${"a".repeat(maxReferralUrlTemplateLength)}`,
      ].map(referralUrlTemplateProblem),
    ).toEqual([
      undefined,
      undefined,
      "Must contain {code}, where the referral code goes",
      "Must be an http(s) URL",
      "Must be an http(s) URL",
      `Must be at most ${maxReferralUrlTemplateLength} characters`,
    ]);
  });
});

describe("payout details", () => {
  it("checks an IBAN's country, length and check digits", () => {
    expect(
      ["DE89370400440532013000", "DE89370400440532013001", "DE8937040044053201300", "US12345678901234567", "DE"].map(
        ibanProblem,
      ),
    ).toEqual([
      undefined,
      "The IBAN's check digits do not match: a character is wrong",
      "An IBAN of DE has 22 characters",
      "IBANs of country US are not accepted",
      "Must be an IBAN: 2 letters, 2 check digits, then 11-30 letters or digits",
    ]);
  });

  it("answers the details normalised, or every field's problems", () => {
    expect(
      checkPayoutDetails({
        type: "wise",
        accountHolderName: "  Ada   Lovelace ",
        iban: "de89 3704 0044 0532 0130 00",
        email: " ADA@Example.com",
        currency: "EUR",
        receiverType: "person",
      }),
    ).toEqual({
      details: {
        type: "wise",
        accountHolderName: "Ada Lovelace",
        iban: "DE89370400440532013000",
        email: "ada@example.com",
        currency: "EUR",
        receiverType: "person",
      },
    });
    expect(
      checkPayoutDetails({
        type: "wise",
        accountHolderName: "=SUM(A1)",
        iban: "",
        email: undefined,
        currency: "eur",
        receiverType: "person",
      }),
    ).toEqual({
      problems: {
        account_holder_name: ["Must not start with =, +, - or @"],
        iban: ["Give an IBAN, or an email for Wise to ask the recipient for bank details"],
        currency: ["Must be an ISO 4217 currency code in capitals, e.g. EUR"],
      },
    });
    expect(checkPayoutDetails({ type: "paypal", email: "nope" })).toEqual({
      problems: { email: ["Must be an email address"] },
    });
  });

  it("masks everything but a hint of each field", () => {
    expect(
      maskPayoutDetails({
        type: "wise",
        accountHolderName: "Ada Lovelace",
        iban: "DE89370400440532013000",
        email: "ada@example.com",
        currency: "EUR",
        receiverType: "person",
      }),
    ).toEqual({
      type: "wise",
      accountHolderName: "A*** L***",
      iban: "DE89**************3000",
      email: "a***@example.com",
      currency: "EUR",
      receiverType: "person",
    });
    expect(maskPayoutDetails({ type: "paypal", email: "jane@example.com" })).toEqual({
      type: "paypal",
      email: "j***@example.com",
    });
  });
});
