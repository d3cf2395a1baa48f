import { describe, expect, it } from "vitest";
import { csvText, parseCsv } from "../src/domain/payout-files/csv.js";
import { writePayoutFile } from "../src/domain/payout-files/formats.js";
import { decimalAmount } from "../src/domain/payout-files/money.js";
import { payoutIdOfReference, payoutReference } from "../src/domain/payout-files/reference.js";
import { readResultFile } from "../src/domain/payout-files/results.js";

const payoutA = "po_0193c1f2a4b87c55b3a9e0d7f2c4a6b8";
const payoutB = "po_0193c1f2a4b87c55b3a9e0d7f2c4a6b9";

describe("payout file pieces", () => {
  it("writes amounts from bigints exactly, in the currency's minor digits", () => {
    expect(decimalAmount(123456n, "USD")).toBe("1234.56");
    expect(decimalAmount(5n, "USD")).toBe("0.05");
    expect(decimalAmount(0n, "EUR")).toBe("0.00");
    expect(decimalAmount(-1999n, "USD")).toBe("-19.99");
    expect(decimalAmount(123456n, "JPY")).toBe("123456");
    // Beyond 2^53: no float could hold it.
    expect(decimalAmount(9_007_199_254_740_993n, "USD")).toBe("90071992547409.93");
  });

  it("writes a payout id as a 28-character reference and reads both back", () => {
    const reference = payoutReference(payoutA);
    expect(reference).toMatch(/^PO[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(reference).toHaveLength(28);
    expect(payoutIdOfReference(reference)).toBe(payoutA);
    expect(payoutIdOfReference(reference.toLowerCase())).toBe(payoutA);
    expect(payoutIdOfReference(` ${payoutA} `)).toBe(payoutA);
    expect(payoutIdOfReference(`PO${"Z".repeat(26)}`)).toBeUndefined();
    expect(payoutIdOfReference("po_nothex")).toBeUndefined();
    expect(payoutIdOfReference("")).toBeUndefined();
  });

  it("quotes what needs it and parses it back, quoted line breaks included", () => {
    const rows = [
      ["a", 'say "hi"', "x,y"],
      ["multi\nline", " padded ", ""],
    ];
    const text = csvText(rows);
    expect(text).toBe('a,"say ""hi""","x,y"\r\n"multi\nline"," padded ",\r\n');
    expect(parseCsv(`\uFEFF${text}\n\n`)).toEqual([
      { line: 1, cells: rows[0] },
      { line: 2, cells: rows[1] },
    ]);
    expect(() => parseCsv('a,"open\n')).toThrow(/never closed/);
    expect(() => parseCsv('"a"b,c\n')).toThrow(/closing quote/);
  });

  it("lays out each provider's file; an empty export is its header alone", () => {
    const paypal = { type: "paypal" as const, email: "ada@example.com" };
    const wise = {
      type: "wise" as const,
      accountHolderName: "Grace, Hopper",
      email: undefined,
      iban: "DE89370400440532013000",
      currency: "EUR",
      receiverType: "person" as const,
    };
    const payouts = [
      { id: payoutA, partnershipId: "ptn_a", amountCents: 123456n, details: paypal },
      { id: payoutB, partnershipId: "ptn_b", amountCents: 2500n, details: wise },
      { id: "po_c", partnershipId: "ptn_c", amountCents: 700n, details: undefined },
      { id: "po_d", partnershipId: "ptn_d", amountCents: 0n, details: paypal },
    ];
    const refA = payoutReference(payoutA);
    const refB = payoutReference(payoutB);
    expect(writePayoutFile("paypal", payouts, "USD")).toEqual({
      content: `ada@example.com,1234.56,USD,${refA},Affiliate payout ${payoutA},PAYPAL\r\n`,
      exportedCount: 1,
      exportedCents: 123456n,
      skipped: [
        { payoutId: payoutB, reason: "other_payout_method" },
        { payoutId: "po_c", reason: "no_payout_method" },
        { payoutId: "po_d", reason: "amount_not_positive" },
      ],
    });
    expect(writePayoutFile("wise", payouts, "USD").content).toBe(
      "name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency,IBAN\r\n" +
        `"Grace, Hopper",,${refB},PERSON,source,25.00,USD,EUR,DE89370400440532013000\r\n`,
    );
    const csv = writePayoutFile("csv", payouts, "USD");
    expect(csv.content.split("\r\n")).toEqual([
      "payout_id,partnership_id,amount,currency,amount_cents,method,recipient_name,recipient_email,iban,target_currency,reference,skipped_reason",
      `${payoutA},ptn_a,1234.56,USD,123456,paypal,,ada@example.com,,USD,${refA},`,
      `${payoutB},ptn_b,25.00,USD,2500,wise,"Grace, Hopper",,DE89370400440532013000,EUR,${refB},`,
      "po_c,ptn_c,7.00,USD,700,,,,,,po_c,no_payout_method",
      "po_d,ptn_d,0.00,USD,0,paypal,,ada@example.com,,USD,po_d,amount_not_positive",
      "",
    ]);
    expect(csv.exportedCount).toBe(2);
    expect(writePayoutFile("paypal", [], "USD").content).toBe("");
    expect(writePayoutFile("wise", [], "USD").content).toMatch(/^name,recipientEmail,.*,IBAN\r\n$/);
    expect(writePayoutFile("csv", [], "USD").content).toMatch(/^payout_id,.*,skipped_reason\r\n$/);
  });
});

describe("reading result files", () => {
  it("reads the plain CSV, and recognises PayPal's and Wise's headers", () => {
    expect(
      readResultFile(`payout_id,status,reference\n${payoutA},paid,tr_1\n${payoutB},failed,closed account\n`, undefined),
    ).toEqual({
      format: "csv",
      lines: [
        { line: 2, payoutId: payoutA, outcome: "paid", reference: "tr_1" },
        { line: 3, payoutId: payoutB, outcome: "failed", reference: "closed account" },
      ],
    });
    const paypal = `Transaction ID,Recipient,Amount,Currency,Customer ID,Status\r\n5TY1,ada@example.com,12.34,USD,${payoutReference(payoutA)},SUCCESS\r\n,bob@example.com,1.00,USD,${payoutReference(payoutB)},Unclaimed\r\n`;
    expect(readResultFile(paypal, undefined)).toEqual({
      format: "paypal",
      lines: [
        { line: 2, payoutId: payoutA, outcome: "paid", reference: "5TY1" },
        { line: 3, payoutId: payoutB, outcome: "pending", reference: undefined },
      ],
    });
    const wise = `id,paymentReference,status\n991,${payoutReference(payoutA)},outgoing_payment_sent\n992,${payoutB},bounced_back\n`;
    expect(readResultFile(wise, undefined)).toEqual({
      format: "wise",
      lines: [
        { line: 2, payoutId: payoutA, outcome: "paid", reference: "991" },
        { line: 3, payoutId: payoutB, outcome: "failed", reference: "Wise: bounced_back (992)" },
      ],
    });
  });

  it("refuses every bad line by its number, and a file it cannot read at line 1", () => {
    const file = [
      "payout_id,status",
      `${payoutA},paid`,
      `${payoutA},failed`,
      "po_unknown,paid",
      `${payoutB},done`,
      `${payoutB}`,
      ",paid",
    ].join("\n");
    expect(readResultFile(file, undefined)).toEqual({
      refusals: new Map([
        [3, [`Payout ${payoutA} is also on line 2`]],
        [4, ["Unknown payout po_unknown"]],
        [5, ['Status "done" unknown: must be paid or failed']],
        [6, ["Expected 2 fields, found 1"]],
        [7, ["No payout id"]],
      ]),
    });
    expect(readResultFile("", undefined)).toEqual({
      refusals: new Map([[1, [expect.stringMatching(/^The file is empty/)]]]),
    });
    expect(readResultFile("name,amount\nx,1\n", undefined)).toEqual({
      refusals: new Map([[1, [expect.stringMatching(/^Unrecognised header\./)]]]),
    });
    expect(readResultFile("payout_id,status\n", "wise")).toEqual({
      refusals: new Map([[1, [expect.stringMatching(/^Unrecognised header for format wise/)]]]),
    });
    expect(readResultFile("payout_id,status,extra\n", undefined)).toEqual({
      refusals: new Map([[1, [expect.stringMatching(/^The header must be payout_id,status/)]]]),
    });
    expect(readResultFile(`payout_id,status\n"${payoutA},paid\n`, undefined)).toEqual({
      refusals: new Map([[2, ["A quoted field is never closed"]]]),
    });
    expect(readResultFile(`payout_id,status,reference\n${payoutA},paid,${"x".repeat(501)}\n`, undefined)).toEqual({
      refusals: new Map([[2, ["The reference is longer than 500 characters"]]]),
    });
  });
});
