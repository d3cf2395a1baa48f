/**
 * A seeded fuzz of every gateway route against the real services (issue 9, contract section 11):
 * body fields, query parameters, path ids and headers get random text (U+0000, lone surrogates,
 * emoji, long strings), huge and fractional numbers, wrong types, deep nesting and broken JSON.
 * Whatever is sent, no answer may be a 5xx. The run is a fixed number of requests, so a seed
 * replays exactly: the seed is printed, and `FUZZ_SEED=<seed>` runs it again.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { PathResource } from "../src/errors.js";
import type { DeclaredRoute } from "../src/http/route-catalog.js";
import { fieldSchemasOf } from "../src/http/strict-input.js";
import { misspelled } from "./support/declared-routes.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

const requests = Number(process.env.FUZZ_REQUESTS ?? 600);
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small, fast PRNG whose whole state is the seed. */
function prng(start: number): () => number {
  let state = start >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const random = prng(seed);
const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const chance = (p: number) => random() < p;
function pick<T>(items: readonly T[]): T {
  return items[int(0, items.length - 1)] as T;
}

/** Pieces that break naive text handling: NUL, lone and paired surrogates, controls, RTL, quotes. */
const textPieces = [
  "a",
  "Z",
  "0",
  " ",
  "\u0000",
  "\uD800",
  "\uDFFF",
  "\u{1F600}",
  "\u202E",
  "\u0007",
  "é",
  '"',
  "\\",
  "%",
  "ptn_",
  "<",
];

function randomText(): string {
  if (chance(0.05)) return "x".repeat(int(100, 6000));
  let text = "";
  for (let i = int(0, 12); i > 0; i--) text += pick(textPieces);
  return text;
}

function nested(depth: number): unknown {
  let value: unknown = randomText();
  for (let i = 0; i < depth; i++) value = chance(0.5) ? [value] : { x: value };
  return value;
}

/** Any JSON value a careless or hostile client might send in place of a field. */
function randomValue(): unknown {
  return pick<() => unknown>([
    randomText,
    randomText,
    () => int(-1_000_000, 1_000_000),
    () => pick([0, -1, 1e308, -1e308, 2 ** 63, 2 ** 53 + 1, 100_000_000_001, 0.5, -0.0001]),
    () => pick([true, false, null]),
    () => [],
    () => ({}),
    () => [randomText(), int(0, 9)],
    () => nested(int(2, 80)),
    () => new Date(Date.now() - int(-10, 500) * 86_400_000).toISOString(),
  ])();
}

/** A query or path segment: percent-encoded text, or raw encodings that are not UTF-8. */
function randomSegment(): string {
  if (chance(0.25)) return pick(["%00", "%ED%A0%80", "%FF", "%", "%zz", "%C0%80", "%F4%90%80%80"]);
  const text = randomText().replace(/[\uD800-\uDFFF]/g, "");
  return encodeURIComponent(text);
}

/** Ids of things that exist, so some requests get past the lookups into the use cases. */
const known = { partnership: "", commission: "", payout: "", webhook: "", delivery: "", referralCode: "", email: "" };

/** Which known id a path id of each resource is. */
const knownIdOf: Record<PathResource, () => string> = {
  Affiliate: () => known.partnership,
  Commission: () => known.commission,
  Payout: () => known.payout,
  Webhook: () => known.webhook,
  Delivery: () => known.delivery,
  Erasure: () => "ers_1",
  "Stripe event": () => "evt_1",
};

function trackingEvents(): Record<string, unknown>[] {
  return [
    { type: "click", referral_code: known.referralCode, visitor_id: `v${int(0, 99)}` },
    { type: "signup", customer_email: known.email, ip: "192.0.2.1", user_agent: "fuzz" },
    {
      type: "payment",
      referral_code: known.referralCode,
      amount_cents: int(1, 100_000),
      external_id: `fuzz_${int(0, 20)}`,
      customer_email: known.email,
      provider_customer_id: "cus_1",
    },
  ];
}

/**
 * A valid body to start from (its fields then get spoiled), by operation. A route with a body
 * not listed here starts from `{}`: every declared route is fuzzed whether or not it is here.
 */
const startingBodies: Record<string, () => unknown> = {
  registerAffiliate: () => ({ email: `f${int(0, 1e9)}@example.com`, name: "Fuzz", notify: false }),
  bulkRegisterAffiliates: () => ({
    notify: false,
    affiliates: Array.from({ length: int(1, 4) }, () =>
      chance(0.7) ? { email: `b${int(0, 1e9)}@example.com`, name: randomText() } : randomValue(),
    ),
  }),
  updateAffiliateStatus: () => ({ status: "active" }),
  updateCommission: () => ({ action: "approve" }),
  createRefund: () =>
    pick([
      { commission_id: known.commission, refund_amount_cents: int(1, 500) },
      { external_id: `fuzz_${int(0, 20)}`, reason: "fuzz" },
      { email: known.email, payment_amount_cents: 10_000, idempotency_key: `k${int(0, 50)}` },
    ]),
  updatePayout: () => ({ action: pick(["approve", "reject", "mark_paid", "mark_failed"]), reference: "tr_1" }),
  createWebhook: () => ({ url: "https://example.com/hooks", events: ["payout.created"] }),
  updateWebhook: () => ({ enabled: true }),
  recoverDeliveries: () => ({ since: new Date(Date.now() - 86_400_000).toISOString() }),
  eraseCustomer: () => ({ email: known.email }),
  updateProgram: () => ({ hold_days: int(0, 30) }),
  trackEvent: () => pick(trackingEvents()),
  trackEventBatch: () => ({ events: Array.from({ length: int(1, 5) }, () => pick(trackingEvents())) }),
};

/** A declared route as the fuzz sends to it. */
interface Route {
  method: DeclaredRoute["method"];
  url: string;
  pathResources: Partial<Record<string, PathResource>>;
  query: string[];
  body?: () => unknown;
}

let routes: Route[] = [];
/** Every name some body reads, and the same names misspelled: spoiled fields and strictness alike. */
let fieldNames: string[] = [];

function fuzzedRoutes(declared: DeclaredRoute[]): Route[] {
  return declared.map(({ method, url, declaration }) => ({
    method,
    url,
    pathResources: declaration.pathResources ?? {},
    query: Object.keys(fieldSchemasOf(declaration.query)),
    ...(method !== "GET" ? { body: startingBodies[declaration.operationId] ?? (() => ({})) } : {}),
  }));
}

interface FuzzRequest {
  method: Route["method"];
  url: string;
  payload?: string;
  headers: Record<string, string>;
}

function fuzzRequest(): FuzzRequest {
  const route = pick(routes);
  const path = route.url.replace(/:([A-Za-z0-9_]+)/g, (_match, param: string) => {
    const resource = route.pathResources[param];
    const id = resource && chance(0.6) ? knownIdOf[resource]() : "";
    return id || randomSegment();
  });
  const query = route.query
    .filter(() => chance(0.5))
    .map(
      (name) =>
        `${chance(0.9) ? name : randomSegment()}=${chance(0.3) ? pick(["7d", "active", "10", "0", "101"]) : randomSegment()}`,
    );
  if (chance(0.1)) query.push(`${randomSegment()}=${randomSegment()}`);
  const url = query.length > 0 ? `${path}?${query.join("&")}` : path;
  const headers: Record<string, string> = {};
  if (chance(0.1)) headers["idempotency-key"] = randomText().replace(/[^\x20-\x7e]/g, "") || "k";
  if (!route.body) return { method: route.method, url, headers };

  headers["content-type"] = "application/json";
  if (chance(0.08)) {
    const payload = pick(["", "{", "[]", "null", '"text"', "1e999", '{"a":}', "\u0000", `{"email":"\\ud800"}`]);
    return { method: route.method, url, headers, payload };
  }
  const body: unknown = chance(0.05) ? randomValue() : route.body();
  if (typeof body === "object" && body !== null && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    for (let i = int(1, 3); i > 0; i--) {
      const names = Object.keys(fields);
      const name = chance(0.7) && names.length > 0 ? pick(names) : pick(fieldNames);
      fields[name] = randomValue();
    }
  }
  return { method: route.method, url, headers, payload: JSON.stringify(body) ?? "null" };
}

let mesh: RealMesh;
let key = "";
beforeAll(async () => {
  mesh = await startRealMesh();
  // The routes are the gateway's own declarations: a route that exists is fuzzed.
  await mesh.app.ready();
  const declared = mesh.app.routeCatalog.declared();
  routes = fuzzedRoutes(declared);
  const bodyFields = declared.flatMap((route) => Object.keys(fieldSchemasOf(route.declaration.body)));
  fieldNames = [...new Set([...bodyFields, ...bodyFields.map(misspelled), "__proto__"])];
  ({ key } = await mesh.newProduct());
  // Something to find: an affiliate with a paid, refundable commission and a payout.
  await mesh.call(key, "PATCH", "/api/v1/program", { body: { hold_days: 0 } });
  const registered = await mesh.call(key, "POST", "/api/v1/affiliates", {
    body: { email: "fuzz-affiliate@example.com", referralCode: "FUZZ1", notify: false },
  });
  known.partnership = registered.json().partnership.id;
  known.referralCode = "FUZZ1";
  known.email = "fuzz-customer@example.com";
  const paid = await mesh.call(key, "POST", "/events", {
    body: {
      type: "payment",
      referral_code: "FUZZ1",
      amount_cents: 100_000,
      customer_email: known.email,
      external_id: "fuzz_0",
    },
  });
  known.commission = paid.json().data.commissions[0].id;
  const generated = await mesh.call(key, "POST", "/api/v1/payouts/generate");
  known.payout = generated.json().data[0]?.id ?? "po_none";
  const webhook = await mesh.call(key, "POST", "/api/v1/webhooks", { body: { url: "https://example.com/hooks" } });
  known.webhook = webhook.json().data.id;
  const tested = await mesh.call(key, "POST", `/api/v1/webhooks/${known.webhook}/test`);
  known.delivery = tested.json().data.id;
});
afterAll(() => mesh?.close());

it(`answers ${requests} random requests over every route without a 5xx`, { timeout: 120_000 }, async () => {
  console.info(`fuzz seed ${seed} (replay: FUZZ_SEED=${seed} npx vitest run test/fuzz.test.ts)`);
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  for (let i = 0; i < requests; i++) {
    const request = fuzzRequest();
    const response = await mesh.app.inject({
      method: request.method,
      url: request.url,
      headers: { "x-api-key": key, ...request.headers },
      ...(request.payload !== undefined ? { payload: request.payload } : {}),
    });
    statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
    if (response.statusCode >= 500) {
      failures.push(
        `#${i} ${request.method} ${request.url} ${JSON.stringify(request.payload?.slice(0, 300))} -> ${response.statusCode} ${response.body.slice(0, 200)}`,
      );
    }
  }
  console.info(`fuzz statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
  expect(failures, `seed ${seed}`).toEqual([]);
  // The run reached past validation too: some requests succeeded.
  expect(
    [...statuses.keys()].some((status) => status < 300),
    `seed ${seed}`,
  ).toBe(true);
});
