import { fieldErrorsOf } from "@affiliate/platform";
import { PayoutAction, PayoutFileFormat, PayoutStatus } from "@affiliate/proto/payouts";
import { Code, type ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { payoutReference } from "../src/domain/payout-files/reference.js";
import { failure, type Harness, invariantViolations, outboxEvents, startHarness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  expect(await invariantViolations(h)).toEqual([]);
});
afterAll(() => h.close());

/** A product with one approved payout per entry (each of its own partnership and amount), and a pending one. */
async function programWithApprovedPayouts(amounts: number[]) {
  const productId = h.partners.product(100);
  const partnershipIds = amounts.map((amount) => {
    const partnershipId = h.partners.partnership(productId);
    h.ledger.add(productId, partnershipId, amount);
    return partnershipId;
  });
  const { payouts } = await h.payouts.generatePayouts({ productId });
  const byPartnership = new Map(payouts.map((payout) => [payout.partnershipId, payout.id]));
  const payoutIds = partnershipIds.map((id) => byPartnership.get(id) as string);
  for (const payoutId of payoutIds) await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
  // One more, left pending: never in a file.
  const pendingPartnership = h.partners.partnership(productId);
  h.ledger.add(productId, pendingPartnership, 999);
  const pending = (await h.payouts.generatePayouts({ productId })).payouts[0]?.id as string;
  return { productId, partnershipIds, payoutIds, pending };
}

const statusOf = async (productId: string, payoutId: string) =>
  (await h.payouts.getPayout({ productId, payoutId })).payout?.status;

const importFile = (productId: string, content: string, format = PayoutFileFormat.UNSPECIFIED) =>
  h.payouts.importPayoutResults({ productId, content, format });

describe("payout export", () => {
  it("writes each provider's file from the methods, naming the payouts it leaves out", async () => {
    const { productId, partnershipIds, payoutIds, pending } = await programWithApprovedPayouts([123_456, 2_500, 700]);
    const [paypalPartner, wisePartner] = partnershipIds as [string, string, string];
    const [a, b, c] = payoutIds as [string, string, string];
    h.partners.payoutMethods.set(paypalPartner, { type: "paypal", email: "ada@example.com" });
    h.partners.payoutMethods.set(wisePartner, {
      type: "wise",
      accountHolderName: "Grace Hopper",
      email: "grace@example.com",
      iban: "DE89370400440532013000",
      currency: undefined,
      receiverType: "institution",
    });

    const paypal = await h.payouts.exportPayouts({ productId, format: PayoutFileFormat.PAYPAL });
    expect(paypal.content).toBe(`ada@example.com,1234.56,USD,${payoutReference(a)},Affiliate payout ${a},PAYPAL\r\n`);
    expect(paypal.exportedCount).toBe(1n);
    expect(paypal.exportedCents).toBe(123_456n);
    expect(paypal.currency).toBe("USD");
    expect(paypal.skipped.map(({ payoutId, reason }) => [payoutId, reason])).toEqual([
      [b, "other_payout_method"],
      [c, "no_payout_method"],
    ]);

    const wise = await h.payouts.exportPayouts({ productId, format: PayoutFileFormat.WISE });
    expect(wise.content.split("\r\n")[1]).toBe(
      `Grace Hopper,grace@example.com,${payoutReference(b)},INSTITUTION,source,25.00,USD,USD,DE89370400440532013000`,
    );
    const csv = await h.payouts.exportPayouts({ productId, format: PayoutFileFormat.CSV });
    const rows = csv.content.trimEnd().split("\r\n");
    expect(rows).toHaveLength(4);
    expect(rows.some((row) => row.startsWith(pending))).toBe(false);
    expect(rows[3]).toBe(`${c},${partnershipIds[2]},7.00,USD,700,,,,,,${payoutReference(c)},no_payout_method`);
    // Exporting changes nothing.
    expect(await statusOf(productId, a)).toBe(PayoutStatus.APPROVED);
    // Only the approved payouts' partnerships are asked for, in one call.
    expect(h.partners.revealSizes.at(-1)).toBe(3);
  });

  it("answers a program with no approved payout with the header alone", async () => {
    const productId = h.partners.product();
    expect((await h.payouts.exportPayouts({ productId, format: PayoutFileFormat.CSV })).content).toMatch(
      /^payout_id,[^\r\n]*\r\n$/,
    );
    expect((await h.payouts.exportPayouts({ productId, format: PayoutFileFormat.PAYPAL })).content).toBe("");
    const missing = await failure(h.payouts.exportPayouts({ productId }));
    expect(fieldErrorsOf(missing as ConnectError)?.fieldErrors).toHaveProperty("format");
  });
});

describe("payout result import", () => {
  it("marks payouts paid and failed once; the same file again changes nothing and says so", async () => {
    const { productId, payoutIds } = await programWithApprovedPayouts([5_000, 6_000]);
    const [a, b] = payoutIds as [string, string];
    const file = `payout_id,status,reference\r\n${payoutReference(a)},paid,tr_42\r\n${b},failed,account closed\r\n`;
    const first = await importFile(productId, file);
    expect(first).toMatchObject({
      alreadyImported: false,
      format: PayoutFileFormat.CSV,
      paidCount: 1n,
      failedCount: 1n,
      unchangedCount: 0n,
      pendingCount: 0n,
      lines: [
        { line: 2, payoutId: a, outcome: "paid" },
        { line: 3, payoutId: b, outcome: "failed" },
      ],
    });
    expect(first.fileSha256).toMatch(/^[0-9a-f]{64}$/);
    const paid = (await h.payouts.getPayout({ productId, payoutId: a })).payout;
    expect(paid).toMatchObject({ status: PayoutStatus.COMPLETED, gatewayTransferId: "tr_42" });
    expect(paid?.paidAt).toBeDefined();
    expect((await h.payouts.getPayout({ productId, payoutId: b })).payout).toMatchObject({
      status: PayoutStatus.FAILED,
      failureReason: "account closed",
    });
    expect((await outboxEvents(h, a)).map((event) => event.subject)).toContain("payouts.payout.completed");

    const again = await importFile(productId, file);
    expect(again).toMatchObject({ alreadyImported: true, paidCount: 1n, failedCount: 1n, lines: [] });
    expect(again.fileSha256).toBe(first.fileSha256);
    expect(again.importedAt).toEqual(first.importedAt);
    expect((await outboxEvents(h, a)).filter((event) => event.subject === "payouts.payout.completed")).toHaveLength(1);

    // Another file naming a payout that already has its outcome: unchanged, nothing sent again.
    const later = await importFile(productId, `payout_id,status\n${a},paid\n`);
    expect(later).toMatchObject({ alreadyImported: false, paidCount: 0n, unchangedCount: 1n });
    expect((await outboxEvents(h, a)).filter((event) => event.subject === "payouts.payout.completed")).toHaveLength(1);
  });

  it("applies nothing when any line is refused, naming every refused line", async () => {
    const { productId, payoutIds, pending } = await programWithApprovedPayouts([5_000, 6_000]);
    const [a, b] = payoutIds as [string, string];
    const other = await programWithApprovedPayouts([5_000]);
    const file = ["payout_id,status", `${a},paid`, `${pending},paid`, `${other.payoutIds[0]},paid`, `${b},failed`].join(
      "\n",
    );
    const refused = await failure(importFile(productId, file));
    expect(refused?.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(refused as ConnectError)).toEqual({
      formErrors: ["Nothing was imported: 2 lines are refused (first: line 3)"],
      fieldErrors: {
        "line 3": [`Payout ${pending} is pending: only an approved payout can be marked paid`],
        // Another program's payout is unknown here, as a missing one.
        "line 4": [`Unknown payout ${other.payoutIds[0]}`],
      },
    });
    expect(await statusOf(productId, a)).toBe(PayoutStatus.APPROVED);
    expect(await statusOf(productId, b)).toBe(PayoutStatus.APPROVED);
    expect(await statusOf(other.productId, other.payoutIds[0] as string)).toBe(PayoutStatus.APPROVED);
    expect(await h.sql`select 1 from payout_imports where product_id = ${productId}`).toHaveLength(0);

    const syntax = await failure(importFile(productId, `payout_id,status\n${a},paid,extra\n`));
    expect(fieldErrorsOf(syntax as ConnectError)?.fieldErrors).toEqual({ "line 2": ["Expected 2 fields, found 3"] });
    const header = await failure(importFile(productId, "hello,world\n"));
    expect(Object.keys(fieldErrorsOf(header as ConnectError)?.fieldErrors ?? {})).toEqual(["line 1"]);
    // A completed payout cannot fail, a failed one cannot be paid without a new approval.
    await importFile(productId, `payout_id,status\n${a},paid\n${b},failed\n`);
    const conflict = await failure(importFile(productId, `payout_id,status\n${a},failed\n${b},paid\n`));
    expect(fieldErrorsOf(conflict as ConnectError)?.fieldErrors).toEqual({
      "line 2": [`Payout ${a} is completed: only an approved payout can be marked failed`],
      "line 3": [`Payout ${b} is failed: only an approved payout can be marked paid`],
    });
  });

  it("applies a file sent twice at once exactly once", async () => {
    const { productId, payoutIds } = await programWithApprovedPayouts([5_000, 6_000, 7_000]);
    const file = `payout_id,status\n${payoutIds.map((id) => `${id},paid`).join("\n")}\n`;
    const answers = await Promise.all([importFile(productId, file), importFile(productId, file)]);
    expect(answers.map((answer) => answer.alreadyImported).sort()).toEqual([false, true]);
    expect(answers.map((answer) => answer.paidCount)).toEqual([3n, 3n]);
    for (const payoutId of payoutIds) {
      expect(await statusOf(productId, payoutId)).toBe(PayoutStatus.COMPLETED);
      expect((await outboxEvents(h, payoutId)).filter((e) => e.subject === "payouts.payout.completed")).toHaveLength(1);
    }
  });

  it("reads PayPal's report and Wise's transfer export by their headers", async () => {
    const { productId, payoutIds } = await programWithApprovedPayouts([5_000, 6_000, 7_000]);
    const [a, b, c] = payoutIds as [string, string, string];
    const paypal = [
      "Transaction ID,Recipient,Amount,Currency,Customer ID,Status",
      `5TY1,ada@example.com,50.00,USD,${payoutReference(a)},SUCCESS`,
      `,bob@example.com,60.00,USD,${payoutReference(b)},UNCLAIMED`,
      `9XX2,cy@example.com,70.00,USD,${payoutReference(c)},RETURNED`,
    ].join("\r\n");
    expect(await importFile(productId, paypal)).toMatchObject({
      format: PayoutFileFormat.PAYPAL,
      paidCount: 1n,
      failedCount: 1n,
      pendingCount: 1n,
    });
    expect((await h.payouts.getPayout({ productId, payoutId: a })).payout?.gatewayTransferId).toBe("5TY1");
    expect((await h.payouts.getPayout({ productId, payoutId: c })).payout?.failureReason).toBe(
      "PayPal: RETURNED (9XX2)",
    );
    expect(await statusOf(productId, b)).toBe(PayoutStatus.APPROVED);

    const wise = `id,paymentReference,status\n771,${payoutReference(b)},outgoing_payment_sent\n`;
    expect(await importFile(productId, wise, PayoutFileFormat.WISE)).toMatchObject({
      format: PayoutFileFormat.WISE,
      paidCount: 1n,
    });
    expect((await h.payouts.getPayout({ productId, payoutId: b })).payout?.gatewayTransferId).toBe("771");
  });
});
