/**
 * Payout methods and payout files (contract section 19) against the real partners, ledger and
 * payouts: the affiliate sets a method with its token (masked on every read), the merchant
 * exports the approved payouts as a provider's file (the one place the details are in clear) and
 * imports the result, once.
 */
import { affiliateTokenResponseSchema } from "@affiliate/rest-shapes/schemas/affiliate-api";
import { payoutImportResponseSchema } from "@affiliate/rest-shapes/schemas/payout-files";
import { payoutMethodResponseSchema } from "@affiliate/rest-shapes/schemas/payout-methods";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  mesh = await startRealMesh();
});
afterAll(() => mesh?.close());

let sequence = 0;
const unique = () => `${Date.now().toString(36)}${(sequence++).toString(36)}`.toUpperCase();

/** A product with hold 0 and a 1-cent minimum, and helpers acting as its merchant and affiliates. */
async function program() {
  const { key } = await mesh.newProduct();
  const call = (method: "GET" | "POST" | "PATCH" | "DELETE" | "PUT", url: string, body?: unknown) =>
    mesh.call(key, method, url, body === undefined ? {} : { body });
  expect((await call("PATCH", "/api/v1/program", { hold_days: 0, payout_minimum_cents: 1 })).statusCode).toBe(200);
  /** A registered affiliate with a token, and a payout of `amountCents` approved for it. */
  const affiliate = async (amountCents: number) => {
    const code = `A${unique()}`;
    const registered = await call("POST", "/api/v1/affiliates", {
      email: `${code.toLowerCase()}@example.com`,
      referralCode: code,
    });
    expect(registered.statusCode).toBe(201);
    const partnershipId = registered.json().partnership.id as string;
    const minted = await call("POST", `/api/v1/affiliates/${partnershipId}/tokens`, {});
    const token = expectBody(affiliateTokenResponseSchema, minted.json()).data.token;
    const paid = await call("POST", "/events", {
      type: "payment",
      referral_code: code,
      // 20% of it is the commission.
      amount_cents: amountCents * 5,
      external_id: `ext_${unique()}`,
    });
    expect(paid.statusCode).toBe(201);
    const asAffiliate = (method: "GET" | "PUT" | "DELETE", body?: unknown) =>
      mesh.app.inject({
        method,
        url: "/affiliate/v1/payout-method",
        headers: { authorization: `Bearer ${token}` },
        ...(body !== undefined ? { payload: body as object } : {}),
      });
    return { partnershipId, asAffiliate };
  };
  const approveAll = async () => {
    const generated = await call("POST", "/api/v1/payouts/generate", {});
    expect(generated.statusCode).toBe(200);
    const payouts = generated.json().data as { id: string; partnership_id: string }[];
    for (const payout of payouts) {
      expect((await call("PATCH", `/api/v1/payouts/${payout.id}`, { action: "approve" })).statusCode).toBe(200);
    }
    return new Map(payouts.map((payout) => [payout.partnership_id, payout.id]));
  };
  const importFile = (content: string, contentType = "text/csv") =>
    mesh.call(key, "POST", "/api/v1/payouts/import", { payload: content, headers: { "content-type": contentType } });
  return { call, affiliate, approveAll, importFile };
}

describe("payout methods", () => {
  it("are set by the affiliate and read masked by it and the merchant", async () => {
    const p = await program();
    const { partnershipId, asAffiliate } = await p.affiliate(1000);
    expect((await asAffiliate("GET")).statusCode).toBe(404);

    const set = await asAffiliate("PUT", { type: "paypal", email: " Ada.Pay@Example.com " });
    expect(set.statusCode).toBe(200);
    expect(expectBody(payoutMethodResponseSchema, set.json()).data).toEqual({
      type: "paypal",
      email: "a***@example.com",
      account_holder_name: null,
      iban: null,
      currency: null,
      receiver_type: null,
      updated_at: expect.any(String),
    });
    expect((await asAffiliate("GET")).json()).toEqual(set.json());
    const merchant = await p.call("GET", `/api/v1/affiliates/${partnershipId}/payout-method`);
    expect(merchant.statusCode).toBe(200);
    expect(merchant.json()).toEqual(set.json());

    const wise = await asAffiliate("PUT", {
      type: "wise",
      account_holder_name: "Ada  Lovelace",
      iban: "de89 3704 0044 0532 0130 00",
      currency: "EUR",
    });
    expect(wise.statusCode).toBe(200);
    expect(wise.json().data).toMatchObject({
      type: "wise",
      account_holder_name: "A*** L***",
      iban: "DE89**************3000",
      email: null,
      currency: "EUR",
      receiver_type: "person",
    });

    expect((await asAffiliate("DELETE")).statusCode).toBe(204);
    expect((await asAffiliate("DELETE")).statusCode).toBe(204);
    expect((await asAffiliate("GET")).statusCode).toBe(404);
    expect((await p.call("GET", `/api/v1/affiliates/${partnershipId}/payout-method`)).statusCode).toBe(404);
  });

  it("refuses bad details field by field, and callers without a token", async () => {
    const p = await program();
    const { asAffiliate } = await p.affiliate(1000);
    const refused = async (body: unknown) => {
      const answer = await asAffiliate("PUT", body);
      expect(answer.statusCode).toBe(400);
      return answer.json().details;
    };
    expect((await refused({ type: "paypal", email: "not-an-email" })).fieldErrors).toHaveProperty("email");
    expect(
      (await refused({ type: "wise", account_holder_name: "Ada", iban: "DE89370400440532013001" })).fieldErrors.iban,
    ).toEqual(["The IBAN's check digits do not match: a character is wrong"]);
    expect(
      (await refused({ type: "wise", account_holder_name: "Ada", iban: "DE8937040044" })).fieldErrors,
    ).toHaveProperty("iban");
    expect((await refused({ type: "wise", account_holder_name: "Ada" })).fieldErrors).toHaveProperty("iban");
    expect(
      (await refused({ type: "wise", account_holder_name: " ", email: "a@example.com" })).fieldErrors,
    ).toHaveProperty("account_holder_name");
    expect(
      (await refused({ type: "wise", account_holder_name: "=cmd()", email: "a@example.com" })).fieldErrors,
    ).toHaveProperty("account_holder_name");
    expect(
      (await refused({ type: "wise", account_holder_name: "Ada", email: "a@example.com", currency: "eur" }))
        .fieldErrors,
    ).toHaveProperty("currency");
    // A field of the other method is an unknown field, not silently dropped.
    expect(
      (await refused({ type: "paypal", email: "a@example.com", iban: "DE89370400440532013000" })).formErrors,
    ).toEqual([expect.stringMatching(/^Unknown field iban/)]);
    expect(await refused({ type: "venmo", email: "a@example.com" })).toBeDefined();
    expect(await refused({ email: "a@example.com" })).toBeDefined();
    // Nothing was stored by any of them.
    expect((await asAffiliate("GET")).statusCode).toBe(404);

    const anonymous = await mesh.app.inject({
      method: "PUT",
      url: "/affiliate/v1/payout-method",
      payload: { type: "paypal", email: "a@example.com" },
    });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe("payout files", () => {
  it("export the approved payouts as a provider's file, the others named with their reason", async () => {
    const p = await program();
    const paypal = await p.affiliate(1234);
    const none = await p.affiliate(2000);
    expect((await paypal.asAffiliate("PUT", { type: "paypal", email: "ada@example.com" })).statusCode).toBe(200);
    const payoutOf = await p.approveAll();
    const paypalPayout = payoutOf.get(paypal.partnershipId) as string;
    const nonePayout = payoutOf.get(none.partnershipId) as string;

    const file = await p.call("GET", "/api/v1/payouts/export?format=paypal&status=approved");
    expect(file.statusCode).toBe(200);
    expect(file.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(file.headers["content-disposition"]).toMatch(
      /^attachment; filename="payouts-paypal-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    expect(file.body).toMatch(
      /^ada@example\.com,12\.34,USD,PO[0-9A-Z]{26},Affiliate payout po_[0-9a-f]{32},PAYPAL\r\n$/,
    );
    expect(file.body).toContain(paypalPayout);
    expect(file.headers["payouts-exported-count"]).toBe("1");
    expect(file.headers["payouts-exported-cents"]).toBe("1234");
    expect(file.headers["payouts-skipped-count"]).toBe("1");
    expect(file.headers["payouts-skipped"]).toBe(`${nonePayout}=no_payout_method`);

    const csv = await p.call("GET", "/api/v1/payouts/export?format=csv");
    const rows = csv.body.trimEnd().split("\r\n");
    expect(rows[0]).toMatch(/^payout_id,/);
    expect(rows.find((row) => row.startsWith(nonePayout))).toMatch(/,no_payout_method$/);

    for (const query of ["format=venmo", "", "format=csv&status=paid", "format=csv&sort=id"]) {
      const refused = await p.call("GET", `/api/v1/payouts/export?${query}`);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toBe("Validation failed");
    }
  });

  it("export as a header alone when nothing is approved", async () => {
    const p = await program();
    const wise = await p.call("GET", "/api/v1/payouts/export?format=wise");
    expect(wise.statusCode).toBe(200);
    expect(wise.body).toBe(
      "name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency,IBAN\r\n",
    );
    expect(wise.headers["payouts-exported-count"]).toBe("0");
    expect(wise.headers["payouts-skipped"]).toBe("");
  });

  it("import a result file once, all or nothing", async () => {
    const p = await program();
    const a = await p.affiliate(1000);
    const b = await p.affiliate(2000);
    const payoutOf = await p.approveAll();
    const [payoutA, payoutB] = [payoutOf.get(a.partnershipId), payoutOf.get(b.partnershipId)] as [string, string];

    const refused = await p.importFile(`payout_id,status\n${payoutA},paid\n${payoutB},lost\npo_nope,paid\n`);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({
      error: "Validation failed",
      details: {
        formErrors: ["Nothing was imported: 2 lines are refused (first: line 3)"],
        fieldErrors: {
          "line 3": ['Status "lost" unknown: must be paid or failed'],
          "line 4": ["Unknown payout po_nope"],
        },
      },
    });
    expect((await p.call("GET", `/api/v1/payouts/${payoutA}`)).json().data.status).toBe("approved");

    const file = `payout_id,status,reference\n${payoutA},paid,tr_1\n${payoutB},failed,closed\n`;
    const imported = await p.importFile(file);
    expect(imported.statusCode).toBe(200);
    expect(expectBody(payoutImportResponseSchema, imported.json()).data).toEqual({
      file_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      already_imported: false,
      format: "csv",
      paid: 1,
      failed: 1,
      unchanged: 0,
      pending: 0,
      imported_at: expect.any(String),
      lines: [
        { line: 2, payout_id: payoutA, outcome: "paid" },
        { line: 3, payout_id: payoutB, outcome: "failed" },
      ],
    });
    expect((await p.call("GET", `/api/v1/payouts/${payoutA}`)).json().data).toMatchObject({
      status: "completed",
      gateway_transfer_id: "tr_1",
    });
    expect((await p.call("GET", `/api/v1/payouts/${payoutB}`)).json().data.status).toBe("failed");

    const again = await p.importFile(file);
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toMatchObject({ already_imported: true, paid: 1, failed: 1, lines: [] });

    expect((await p.importFile(file, "application/json")).statusCode).toBe(400);
    const json = await p.call("POST", "/api/v1/payouts/import", { body: { file } });
    expect(json.statusCode).toBe(415);
    const empty = await p.importFile("");
    expect(empty.statusCode).toBe(400);
    expect(Object.keys(empty.json().details.fieldErrors)).toEqual(["line 1"]);
  });
});
