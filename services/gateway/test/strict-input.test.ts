/**
 * Strict input (contract section 11): an unknown field in a body, at any depth, or an unknown
 * query parameter is a 400 validation envelope naming it in `formErrors`, with the known field
 * it resembles. The matrices take every route from the route catalog, so a new route is covered
 * by being declared.
 */
import { validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import fastify from "fastify";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { errorHandler } from "../src/errors.js";
import { defineRoute } from "../src/http/define-route.js";
import { closestName, fieldSchemasOf, unknownNameMessage } from "../src/http/strict-input.js";
import { declaredRoutes, misspelled, pathOf } from "./support/declared-routes.js";
import { createGateway, expectBody } from "./support/harness.js";

const routes = await declaredRoutes();
const strictRoutes = routes.filter((route) => route.declaration.strict !== false);
/** Any id: the unknown name is refused before a path id is looked up. */
const anyId = () => "id_1";

/** RPCs the gateway made beyond resolving the key. */
const rpcCount = (gateway: ReturnType<typeof createGateway>) =>
  [
    ...gateway.fake.requests,
    ...gateway.ledger.requests,
    ...gateway.payouts.requests,
    ...gateway.privacy.requests,
  ].filter((entry) => !entry.method.startsWith("authenticate")).length;

const formErrorsOf = (body: unknown) => expectBody(validationErrorSchema, body).details.formErrors;

describe("the known field a name resembles", () => {
  it.each([
    ["externalId", ["type", "external_id", "customer_email"], "external_id"],
    ["customerEmail", ["external_id", "customer_email"], "customer_email"],
    ["referral-code", ["referral_code", "visitor_id"], "referral_code"],
    ["statuss", ["status", "cursor", "limit"], "status"],
    ["emial", ["email", "name"], "email"],
    ["EMAIL", ["email"], "email"],
    ["referral_code", ["email", "referralCode", "sponsorReferralCode"], "referralCode"],
    ["amount", ["amount_cents"], undefined],
    ["color", ["email", "name"], undefined],
  ])("%s among %j: %s", (name, known, expected) => {
    expect(closestName(name, known)).toBe(expected);
  });

  it("words the refusal with the name's path and the suggestion", () => {
    expect(unknownNameMessage("field", ["externalId"], ["external_id"])).toBe(
      "Unknown field externalId; did you mean external_id?",
    );
    expect(unknownNameMessage("field", ["events", 2, "externalId"], ["external_id"])).toBe(
      "Unknown field events.2.externalId; did you mean external_id?",
    );
    expect(unknownNameMessage("query parameter", ["colour"], ["status"])).toBe("Unknown query parameter colour");
  });
});

describe("POST /events, as a new user first tried it", () => {
  it("refuses externalId and customerEmail, naming the fields meant, and records nothing", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/events", {
      body: { type: "payment", amount_cents: 5000, externalId: "cc_1", customerEmail: "c@example.com" },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
      formErrors: [
        "Unknown field externalId; did you mean external_id?",
        "Unknown field customerEmail; did you mean customer_email?",
      ],
      fieldErrors: {},
    });
    expect(rpcCount(gateway)).toBe(0);
  });
});

describe("an unknown query parameter, on every route", () => {
  for (const route of strictRoutes) {
    it(`${route.method} ${route.url}?colour=red: 400 naming it, no RPC`, async () => {
      const gateway = createGateway();
      const response = await gateway.call(route.method, `${pathOf(route, anyId)}?colour=red`);
      expect(response.statusCode).toBe(400);
      expect(formErrorsOf(response.json())).toContain("Unknown query parameter colour");
      expect(rpcCount(gateway)).toBe(0);
    });
  }

  for (const route of strictRoutes.filter((route) => route.declaration.query)) {
    for (const name of Object.keys(fieldSchemasOf(route.declaration.query))) {
      const typo = misspelled(name);
      it(`${route.method} ${route.url}?${typo}=1: did you mean ${name}?`, async () => {
        const gateway = createGateway();
        const response = await gateway.call(route.method, `${pathOf(route, anyId)}?${typo}=1`);
        expect(response.statusCode).toBe(400);
        expect(formErrorsOf(response.json())).toContain(`Unknown query parameter ${typo}; did you mean ${name}?`);
      });
    }
  }

  it("the stats period keeps its nested 400, but an unknown parameter is the envelope", async () => {
    const gateway = createGateway();
    const response = await gateway.call("GET", "/api/v1/stats?perod=7d");
    expect(response.statusCode).toBe(400);
    expect(formErrorsOf(response.json())).toEqual(["Unknown query parameter perod; did you mean period?"]);
  });

  it("probes and the document take any query: a monitor's cache-buster does not read as down", async () => {
    const gateway = createGateway();
    for (const url of ["/healthz?ts=1", "/readyz?ts=1", "/api/v1/openapi.json?ts=1"]) {
      expect((await gateway.call("GET", url, { key: null })).statusCode).toBe(200);
    }
  });
});

describe("an unknown body field, on every route that can take a body", () => {
  // A route whose body is a file (text/csv) has no fields to misspell.
  for (const route of strictRoutes.filter((route) => route.method !== "GET" && !route.declaration.bodyContentType)) {
    it(`${route.method} ${route.url} with { colour }: 400 naming it, no RPC`, async () => {
      const gateway = createGateway();
      const response = await gateway.call(route.method, pathOf(route, anyId), { body: { colour: "red" } });
      expect(response.statusCode).toBe(400);
      expect(formErrorsOf(response.json())).toContain("Unknown field colour");
      expect(rpcCount(gateway)).toBe(0);
    });

    for (const name of Object.keys(fieldSchemasOf(route.declaration.body))) {
      const typo = misspelled(name);
      it(`${route.method} ${route.url} with ${typo}: did you mean ${name}?`, async () => {
        const gateway = createGateway();
        const response = await gateway.call(route.method, pathOf(route, anyId), { body: { [typo]: "x" } });
        expect(response.statusCode).toBe(400);
        expect(formErrorsOf(response.json())).toContain(`Unknown field ${typo}; did you mean ${name}?`);
        expect(rpcCount(gateway)).toBe(0);
      });
    }
  }

  it("reports an unknown field beside the body's other problems, in one envelope", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/api/v1/refunds", { body: { commision_id: "com_1" } });
    expect(response.statusCode).toBe(400);
    expect(formErrorsOf(response.json())).toEqual([
      "Unknown field commision_id; did you mean commission_id?",
      "Provide one of commission_id, external_id, or email plus payment_amount_cents",
    ]);
  });

  it("names an unknown field before a payout's action is judged", async () => {
    const gateway = createGateway();
    const response = await gateway.call("PATCH", "/api/v1/payouts/po_1", { body: { acton: "approve" } });
    expect(response.statusCode).toBe(400);
    expect(formErrorsOf(response.json())).toEqual(["Unknown field acton; did you mean action?"]);
  });

  it("an entry of a bulk registration with an unknown field fails alone", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/api/v1/affiliates/bulk", {
      body: {
        notify: false,
        affiliates: [{ email: "ada@example.com" }, { email: "bob@example.com", referral_code: "bob-1" }],
      },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().results).toMatchObject([
      { email: "ada@example.com", success: true },
      { email: "bob@example.com", success: false, error: "Unknown field referral_code; did you mean referralCode?" },
    ]);
    expect(gateway.fake.requestsOf("bulkRegisterAffiliates")).toMatchObject([
      { registrations: [{ email: "ada@example.com" }] },
    ]);
  });

  it("an event of a batch with an unknown field fails alone, as POST /events would answer it", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/events/batch", {
      body: { events: [{ type: "signup" }, { type: "signup", visitorId: "v1" }] },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().results[1]).toEqual({
      index: 1,
      status: 400,
      error: "Validation failed",
      details: { formErrors: ["Unknown field visitorId; did you mean visitor_id?"], fieldErrors: {} },
    });
    expect(response.json().summary).toMatchObject({ total: 2, failed: 1 });
  });

  it("a field beside the batch's events refuses the whole batch", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/events/batch", { body: { events: [{ type: "signup" }], mode: "x" } });
    expect(response.statusCode).toBe(400);
    expect(formErrorsOf(response.json())).toEqual(["Unknown field mode"]);
    expect(rpcCount(gateway)).toBe(0);
  });
});

describe("the declaration's opt-out", () => {
  const app = (strict: boolean | undefined) => {
    const server = fastify();
    server.setErrorHandler(errorHandler);
    defineRoute(server, {
      method: "POST",
      url: "/receiver",
      operationId: "receive",
      tags: ["Test"],
      summary: "A receiver of someone else's payloads",
      access: "public",
      ...(strict === undefined ? {} : { strict }),
      body: z.object({ id: z.string() }),
      answers: { 200: { description: "Received" } },
      handler: async ({ body }) => ({ received: body.id }),
    });
    return server;
  };
  const send = (strict: boolean | undefined) =>
    app(strict).inject({ method: "POST", url: "/receiver?extra=1", payload: { id: "evt_1", livemode: false } });

  it("is strict unless the declaration says otherwise", async () => {
    const refused = await send(undefined);
    expect(refused.statusCode).toBe(400);
    expect(formErrorsOf(refused.json())).toEqual(["Unknown query parameter extra", "Unknown field livemode"]);
    const taken = await send(false);
    expect(taken.statusCode).toBe(200);
    expect(taken.json()).toEqual({ received: "evt_1" });
  });
});

describe("the document", () => {
  it("says request objects take no other fields", async () => {
    const gateway = createGateway();
    const document = (await gateway.call("GET", "/api/v1/openapi.json", { key: null })).json();
    const schemas = document.components.schemas;
    for (const name of ["TrackEventRequest", "RefundRequest", "AffiliateRegistration", "CreateWebhookRequest"]) {
      expect(schemas[name].additionalProperties, name).toBe(false);
    }
  });
});
