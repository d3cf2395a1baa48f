/**
 * The contract guard of `npm run lint` (scripts/contract-guard.mjs) catches each kind of breaking
 * change, made here to a copy of the committed snapshot, and lets additions pass.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { breakingChanges } from "../scripts/contract-guard.mjs";
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { committedSnapshot } from "../scripts/document.mjs";

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document edited by hand in each case
type Document = any;

const snapshot: Document = committedSnapshot();
const schemas = (document: Document) => document.components.schemas;
const changed = (edit: (document: Document) => void): string[] => {
  const document = structuredClone(snapshot);
  edit(document);
  return breakingChanges(snapshot, document);
};

describe("breaking changes", () => {
  it("none between the snapshot and itself", () => {
    expect(breakingChanges(snapshot, structuredClone(snapshot))).toEqual([]);
  });

  it("a removed route", () => {
    expect(
      changed((document) => {
        delete document.paths["/api/v1/refunds"].post;
      }),
    ).toEqual(["POST /api/v1/refunds: removed route (createRefund)"]);
  });

  it("a removed answer field", () => {
    expect(
      changed((document) => {
        delete schemas(document).PayoutOutput.properties.adjustment_cents;
      }),
    ).toContain("schema PayoutOutput.adjustment_cents: removed field");
  });

  it("a removed request field (strict input would refuse it)", () => {
    expect(
      changed((document) => {
        delete schemas(document).RefundRequest.properties.reason;
      }),
    ).toEqual(["schema RefundRequest.reason: removed field"]);
  });

  it("a removed enum value", () => {
    const problems = changed((document) => {
      const status = schemas(document).CommissionStatus;
      status.enum = status.enum.filter((value: string) => value !== "paid");
    });
    // CommissionStatus is read in answers and sent as the list's filter: one line for both.
    expect(problems).toEqual(['schema CommissionStatus: removed enum value "paid"']);
  });

  it("a narrowed request type: a type dropped, a bound tightened, an enum where any value went", () => {
    const problems = changed((document) => {
      const refund = schemas(document).RefundRequest.properties;
      refund.refund_amount_cents = { ...refund.refund_amount_cents, type: "string" };
      refund.reason = { ...refund.reason, maxLength: 3 };
      refund.external_id = { ...refund.external_id, enum: ["ch_1"] };
    });
    expect(problems).toContain("schema RefundRequest.refund_amount_cents: narrowed type, no longer accepts integer");
    expect(problems.some((line: string) => line.startsWith("schema RefundRequest.reason: narrowed maxLength"))).toBe(
      true,
    );
    expect(problems).toContain('schema RefundRequest.external_id: narrowed to the values ["ch_1"]');
  });

  it("a widened answer type: null where a client never saw it, int64 dropped", () => {
    const problems = changed((document) => {
      const payout = schemas(document).PayoutOutput.properties;
      payout.partnership_id = { anyOf: [payout.partnership_id, { type: "null" }] };
      payout.amount_cents = { ...payout.amount_cents, format: undefined };
    });
    expect(problems).toContain("schema PayoutOutput.partnership_id: widened type, may now be null");
    expect(problems).toContain(
      "schema PayoutOutput.amount_cents: format int64 became none (bigint vs number in clients)",
    );
  });

  it("a newly required request field or parameter, an answer field no longer always present", () => {
    const problems = changed((document) => {
      schemas(document).RefundRequest.required = [...(schemas(document).RefundRequest.required ?? []), "reason"];
      const list = document.paths["/api/v1/commissions"].get;
      list.parameters.find((parameter: { name: string }) => parameter.name === "status").required = true;
      const payout = schemas(document).PayoutOutput;
      payout.required = payout.required.filter((name: string) => name !== "paid_at");
    });
    expect(problems).toContain("schema RefundRequest.reason: newly required");
    expect(problems).toContain("GET /api/v1/commissions query parameter status: newly required");
    expect(problems).toContain("schema PayoutOutput.paid_at: no longer always present");
  });

  it("a removed webhook event", () => {
    expect(
      changed((document) => {
        delete document.webhooks["payout.completed"];
      }),
    ).toEqual(["webhook payout.completed: removed event"]);
  });
});

describe("additions", () => {
  it("a new route, a new optional request field, a new answer field and enum value pass", () => {
    expect(
      changed((document) => {
        document.paths["/affiliate/v1/referrals"] = { get: { operationId: "listAffiliateReferrals", responses: {} } };
        schemas(document).RefundRequest.properties.note = { type: "string" };
        schemas(document).PayoutOutput.properties.currency = { type: "string" };
        schemas(document).PayoutOutput.required.push("currency");
        schemas(document).PayoutStatus.enum.push("on_hold");
      }),
    ).toEqual([]);
  });
});
