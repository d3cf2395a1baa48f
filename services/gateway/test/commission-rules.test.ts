/**
 * Contract section 12 through the gateway, against the real services: program rules and a
 * partnership's override as the API takes and shows them, the frozen rule on commissions,
 * commission_skipped, the preview matching the payment recorded next, and bad input refused
 * with nothing changed.
 */
import { partnershipDetailResponseSchema, partnershipResponseSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { commissionResponseSchema } from "@affiliate/rest-shapes/schemas/commissions";
import { validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { programResponseSchema } from "@affiliate/rest-shapes/schemas/program";
import { previewCommissionsResponseSchema, trackEventResponseSchema } from "@affiliate/rest-shapes/schemas/tracking";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  mesh = await startRealMesh();
});
afterAll(() => mesh?.close());

async function product() {
  const { key } = await mesh.newProduct();
  const call = (method: "GET" | "POST" | "PATCH", url: string, body?: unknown) =>
    mesh.call(key, method, url, body === undefined ? {} : { body });
  const register = async (email: string, referralCode: string, sponsorReferralCode?: string) => {
    const registered = await call("POST", "/api/v1/affiliates", { email, referralCode, sponsorReferralCode });
    expect(registered.statusCode).toBe(201);
    return registered.json().partnership.id as string;
  };
  return { call, register };
}

const fieldErrors = (response: { statusCode: number; json(): unknown }) => {
  expect(response.statusCode).toBe(400);
  return Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors);
};

describe("program rules", () => {
  it("sets and clears limits, a flat amount and a link template, and refuses bad values naming the field", async () => {
    const { call } = await product();
    const set = await call("PATCH", "/api/v1/program", {
      commission_type: "flat",
      commission_flat_cents: 5000,
      max_commission_months: 12,
      max_commission_payments: 24,
      referral_url_template: "https://acme.com/?ref={code}",
    });
    expect(set.statusCode).toBe(200);
    expect(expectBody(programResponseSchema, set.json()).data).toMatchObject({
      commission_type: "flat",
      commission_flat_cents: 5000,
      max_commission_months: 12,
      max_commission_payments: 24,
      referral_url_template: "https://acme.com/?ref={code}",
    });
    const before = (await call("GET", "/api/v1/program")).json();
    const bad: [unknown, string][] = [
      [{ max_commission_months: 121 }, "max_commission_months"],
      [{ max_commission_months: 0 }, "max_commission_months"],
      [{ max_commission_payments: 1.5 }, "max_commission_payments"],
      [{ commission_flat_cents: -1 }, "commission_flat_cents"],
      [{ commission_flat_cents: 100_000_000_001 }, "commission_flat_cents"],
      [{ commission_flat_cents: 0 }, "commission_flat_cents"], // the program is flat: it needs an amount
      [{ referral_url_template: "https://acme.com/" }, "referral_url_template"],
      [{ referral_url_template: "javascript:alert('{code}')" }, "referral_url_template"],
      [{ commission_type: "tiered" }, "commission_type"],
    ];
    for (const [body, field] of bad) expect(fieldErrors(await call("PATCH", "/api/v1/program", body))).toEqual([field]);
    expect((await call("GET", "/api/v1/program")).json()).toEqual(before);
    const cleared = await call("PATCH", "/api/v1/program", {
      commission_type: "percent",
      max_commission_months: null,
      referral_url_template: null,
    });
    expect(expectBody(programResponseSchema, cleared.json()).data).toMatchObject({
      commission_type: "percent",
      max_commission_months: null,
      max_commission_payments: 24,
      referral_url_template: null,
    });
  });
});

describe("a partnership's commission override", () => {
  it("is shown on reads, inherits what it leaves out, and is removed with null", async () => {
    const { call, register } = await product();
    const id = await register("ada@example.com", "ADA");
    const patched = await call("PATCH", `/api/v1/affiliates/${id}`, {
      commission_override: { commission_rate_bps: 4000, max_commission_payments: null },
    });
    expect(patched.statusCode).toBe(200);
    expect(expectBody(partnershipResponseSchema, patched.json()).data.commission_override).toEqual({
      commission_rate_bps: 4000,
      max_commission_payments: null,
    });
    const read = await call("GET", `/api/v1/affiliates/${id}`);
    expect(expectBody(partnershipDetailResponseSchema, read.json()).data).toMatchObject({
      status: "active",
      commission_override: { commission_rate_bps: 4000, max_commission_payments: null },
    });
    const removed = await call("PATCH", `/api/v1/affiliates/${id}`, { commission_override: null });
    expect(expectBody(partnershipResponseSchema, removed.json()).data.commission_override).toBeNull();
  });

  it("refuses bad values, unknown fields and another product's partnership, changing nothing", async () => {
    const { call, register } = await product();
    const id = await register("grace@example.com", "GRACE");
    await call("PATCH", `/api/v1/affiliates/${id}`, { commission_override: { tier2_rate_bps: 100 } });
    const before = (await call("GET", `/api/v1/affiliates/${id}`)).json();
    // A value error inside the override is reported under commission_override, naming its field;
    // an unknown field is a form error naming its path.
    const bad: [unknown, string][] = [
      [{ commission_override: { commission_rate_bps: 10_001 } }, "commission_rate_bps: "],
      [{ commission_override: { commission_rate_bps: -1 } }, "commission_rate_bps: "],
      [{ commission_override: { max_commission_months: 2.5 } }, "max_commission_months: "],
      [{ commission_override: { commission_flat_cents: 100_000_000_001 } }, "commission_flat_cents: "],
      [{ commission_override: { commission_type: "flat" } }, "commission_flat_cents: "],
      [{ commission_override: { commission_type: "tiered" } }, "commission_type: "],
    ];
    for (const [body, message] of bad) {
      const refused = await call("PATCH", `/api/v1/affiliates/${id}`, body);
      expect(fieldErrors(refused)).toEqual(["commission_override"]);
      expect(refused.json().details.fieldErrors.commission_override[0]).toMatch(new RegExp(`^${message}`));
    }
    for (const [body, path] of [
      [{ commission_override: { comission_rate_bps: 100 } }, "commission_override.comission_rate_bps"],
      [{ status: "removed", commission_override: { hold_days: 3 } }, "commission_override.hold_days"],
    ] as const) {
      const refused = await call("PATCH", `/api/v1/affiliates/${id}`, body);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().details.formErrors).toEqual([expect.stringContaining(`Unknown field ${path}`)]);
    }
    expect((await call("GET", `/api/v1/affiliates/${id}`)).json()).toEqual(before);

    const other = await product();
    const foreign = await other.register("linus@example.com", "LINUS");
    const refused = await call("PATCH", `/api/v1/affiliates/${foreign}`, {
      commission_override: { commission_rate_bps: 1 },
    });
    expect(refused.statusCode).toBe(404);
    const untouched = await other.call("GET", `/api/v1/affiliates/${foreign}`);
    expect(expectBody(partnershipDetailResponseSchema, untouched.json()).data.commission_override).toBeNull();
  });
});

describe("commissions under rules", () => {
  it("previews exactly what the payment recorded next earns, freezes the rule, and says why a payment past the limit earns nothing", async () => {
    const { call, register } = await product();
    expect((await call("PATCH", "/api/v1/program", { max_commission_payments: 1 })).statusCode).toBe(200);
    await register("sponsor@example.com", "SPONSOR");
    const id = await register("ada@example.com", "ADA2", "SPONSOR");
    await call("PATCH", `/api/v1/affiliates/${id}`, {
      commission_override: { commission_type: "flat", commission_flat_cents: 2500 },
    });
    // The same occurred_at for the preview and the recording: a first payment's time is the rule's anchor.
    const occurred_at = new Date(Date.now() - 60_000).toISOString();
    const payment = { referral_code: "ADA2", amount_cents: 10_000, customer_email: "buyer@example.com", occurred_at };

    const preview = await call("POST", "/api/v1/commissions/preview", { ...payment, external_id: "ignored" });
    expect(preview.statusCode).toBe(200);
    const previewed = expectBody(previewCommissionsResponseSchema, preview.json()).data;
    expect(previewed).toMatchObject({ partnership_id: id, commission_skipped: null });
    expect(previewed.commissions.map((c) => [c.level, c.amount_cents, c.rule.source, c.rule.type])).toEqual([
      [1, 2500, "partnership", "flat"],
      [2, 500, "program", "percent"],
    ]);

    const recorded = await call("POST", "/events", { type: "payment", external_id: "ch_1", ...payment });
    expect(recorded.statusCode).toBe(201);
    const event = expectBody(trackEventResponseSchema, recorded.json()).data;
    expect(event.commission_skipped).toBeNull();
    const commissions = await Promise.all(
      event.commissions.map(
        async (c) =>
          expectBody(commissionResponseSchema, (await call("GET", `/api/v1/commissions/${c.id}`)).json()).data,
      ),
    );
    expect(
      commissions.map((c) => ({
        level: c.level,
        partnership_id: previewed.commissions[c.level - 1]?.partnership_id,
        amount_cents: c.amount_cents,
        rule: c.rule,
      })),
    ).toEqual(previewed.commissions);
    expect(commissions[0]?.rule).toMatchObject({
      payment_number: 1,
      flat_cents: 2500,
      rate_bps: null,
      first_payment_at: occurred_at,
    });

    const next = await call("POST", "/api/v1/commissions/preview", { type: "payment", ...payment });
    expect(next.json().data).toEqual({
      partnership_id: id,
      commissions: [],
      commission_skipped: "max_commission_payments",
    });
    const skipped = await call("POST", "/events", { type: "payment", external_id: "ch_2", ...payment });
    expect(skipped.json().data).toMatchObject({
      partnership_id: id,
      commissions: [],
      commission_skipped: "max_commission_payments",
    });

    expect(fieldErrors(await call("POST", "/api/v1/commissions/preview", { ...payment, type: "click" }))).toEqual([
      "type",
    ]);
    expect(fieldErrors(await call("POST", "/api/v1/commissions/preview", { referral_code: "ADA2" }))).toEqual([
      "amount_cents",
    ]);
  });
});
