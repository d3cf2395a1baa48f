/**
 * Affiliate access through the whole mesh (contract section 14), with two gateway replicas and a
 * local SMTP sink: a revoked token, or the token of a removed affiliate, is refused by every
 * replica within 2 seconds; an expired one at once; the emailed sign-in link buys a token once;
 * and a payout explains a clawback line by line.
 */
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let smtp: SMTPServer;
const mails: { to: string[]; raw: string }[] = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (chunk: Buffer) => {
        raw += chunk.toString("utf8");
      });
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const smtpPort = (smtp.server.address() as { port: number }).port;
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    replicas: { gateway: 2 },
    env: {
      EVENTS_NAMESPACE: namespace.namespace,
      LOG_LEVEL: "warn",
      PAYOUT_INTERVAL_MS: "0",
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      PORTAL_URL: "https://affiliates.example.com/portal",
    },
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
});

interface Answer {
  status: number;
  json: { error?: string; data?: Record<string, unknown> & { id?: string }; [field: string]: unknown };
}

async function request(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined } as Answer;
}

/** A product with hold 0, its merchant API on the first gateway, and a registered affiliate. */
async function programWithAffiliate(email: string) {
  const { product_id: productId, secret_key: key } = await createProduct(mesh, "Acme");
  const api = (method: string, path: string, body?: unknown) =>
    request(mesh.gatewayUrl, method, path, { "x-api-key": key }, body);
  expect((await api("PATCH", "/api/v1/program", { hold_days: 0, payout_minimum_cents: 1 })).status).toBe(200);
  const registered = await api("POST", "/api/v1/affiliates", { email, referralCode: `R${Date.now()}`, notify: false });
  expect(registered.status).toBe(201);
  const partnership = registered.json.partnership as { id: string; referralCode: string };
  const mint = async (ttlSeconds?: number) => {
    const minted = await api("POST", `/api/v1/affiliates/${partnership.id}/tokens`, {
      ...(ttlSeconds ? { ttl_seconds: ttlSeconds } : {}),
    });
    expect(minted.status).toBe(201);
    return minted.json.data?.token as string;
  };
  return { productId, api, partnershipId: partnership.id, code: partnership.referralCode, mint };
}

/** GET /affiliate/v1/me with `token` on one gateway. */
const me = (gateway: string, token: string) =>
  request(gateway, "GET", "/affiliate/v1/me", { authorization: `Bearer ${token}` });

/** Reads `me` on every replica until each refuses the token, within the contract's 2 seconds. */
async function refusedEverywhere(token: string) {
  for (const gateway of mesh.gatewayUrls) {
    await eventually(async () => {
      expect(await me(gateway, token)).toEqual({ status: 401, json: { error: "Invalid or expired affiliate token" } });
    }, 2000);
  }
}

describe("a token dies everywhere", () => {
  it("on revocation: every gateway replica refuses it within 2 seconds", async () => {
    const p = await programWithAffiliate("revoked@example.com");
    const token = await p.mint();
    expect(mesh.gatewayUrls).toHaveLength(2);
    // Both replicas have it cached.
    for (const gateway of mesh.gatewayUrls) {
      for (let i = 0; i < 3; i++) expect((await me(gateway, token)).status).toBe(200);
    }
    const revoked = await p.api("DELETE", `/api/v1/affiliates/${p.partnershipId}/tokens`);
    expect(revoked).toEqual({ status: 200, json: { data: { partnership_id: p.partnershipId, revoked_count: 1 } } });
    await refusedEverywhere(token);
    // A new one works.
    expect((await me(mesh.gatewayUrls[1] ?? "", await p.mint())).status).toBe(200);
  });

  it("when the affiliate is removed, and it stays dead when the affiliate returns", async () => {
    const p = await programWithAffiliate("removed@example.com");
    const token = await p.mint();
    for (const gateway of mesh.gatewayUrls) expect((await me(gateway, token)).status).toBe(200);
    expect((await p.api("DELETE", `/api/v1/affiliates/${p.partnershipId}`)).status).toBe(200);
    await refusedEverywhere(token);
    expect((await p.api("PATCH", `/api/v1/affiliates/${p.partnershipId}`, { status: "active" })).status).toBe(200);
    for (const gateway of mesh.gatewayUrls) expect((await me(gateway, token)).status).toBe(401);
  });

  it("at its expiry, although cached", async () => {
    const p = await programWithAffiliate("expiring@example.com");
    const token = await p.mint(60);
    for (const gateway of mesh.gatewayUrls) expect((await me(gateway, token)).status).toBe(200);
    // Only its expiry is left to end it: the replicas stop serving it then, by themselves.
    await eventually(async () => {
      for (const gateway of mesh.gatewayUrls) expect((await me(gateway, token)).status).toBe(401);
    }, 75_000);
  }, 90_000);
});

describe("sign-in by email", () => {
  const linkIn = (raw: string) => {
    // Quoted-printable soft line breaks and "=" escapes, undone.
    const text = raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=");
    return /https:\/\/affiliates\.example\.com\/portal#code=([A-Za-z0-9_-]+)/.exec(text)?.[1];
  };

  it("emails a one-time link that buys a token once; an unknown email gets the same 202 and no email", async () => {
    const p = await programWithAffiliate("signin@example.com");
    const login = (email: string) =>
      request(mesh.gatewayUrls[1] ?? "", "POST", "/affiliate/v1/login", {}, { product_id: p.productId, email });
    const known = await login("SignIn@Example.com");
    const unknown = await login("stranger@example.com");
    expect(known).toEqual(unknown);
    expect(known.status).toBe(202);

    const mail = await eventually(async () => {
      const found = mails.find((m) => m.to.includes("signin@example.com"));
      if (!found) throw new Error("no sign-in email yet");
      return found;
    }, 15_000);
    const code = linkIn(mail.raw);
    expect(code).toBeDefined();

    const exchange = () => request(mesh.gatewayUrl, "POST", "/affiliate/v1/login/exchange", {}, { code: code ?? "" });
    const first = await exchange();
    expect(first.status).toBe(200);
    const token = first.json.data?.token as string;
    const read = await me(mesh.gatewayUrls[1] ?? "", token);
    expect(read.status).toBe(200);
    expect(read.json.data?.partnership_id).toBe(p.partnershipId);
    // The code worked once.
    expect(await exchange()).toEqual({ status: 401, json: { error: "Invalid, used or expired sign-in code" } });
    expect(mails.filter((m) => m.to.includes("stranger@example.com"))).toEqual([]);
  });
});

describe("a payout explained", () => {
  it("after a clawback, its lines (commissions and the refund's adjustment) sum to its amount", async () => {
    const p = await programWithAffiliate("clawback@example.com");
    const pay = async (externalId: string) => {
      const paid = await p.api("POST", "/events", {
        type: "payment",
        referral_code: p.code,
        amount_cents: 10_000,
        external_id: externalId,
        customer_email: "buyer@example.com",
      });
      expect(paid.status).toBe(201);
      const commissions = paid.json.data?.commissions as { id: string }[] | undefined;
      return commissions?.[0]?.id ?? "";
    };
    // A first payout, paid; then its commission is refunded: the clawback nets into the next one.
    const clawedBack = await pay("ch_first");
    const first = (await p.api("POST", "/api/v1/payouts/generate")).json.data as unknown as { id: string }[];
    const firstId = first[0]?.id ?? "";
    expect((await p.api("PATCH", `/api/v1/payouts/${firstId}`, { action: "approve" })).status).toBe(200);
    expect((await p.api("PATCH", `/api/v1/payouts/${firstId}`, { action: "mark_paid" })).status).toBe(200);
    const refund = await p.api("POST", "/api/v1/refunds", {
      commission_id: clawedBack,
      refund_amount_cents: 5000,
      reason: "customer downgraded",
    });
    expect(refund.status).toBe(200);
    const kept = await pay("ch_second");
    const second = await eventually(async () => {
      // The clawback is applied by the payouts service from the refund's event.
      const generated = (await p.api("POST", "/api/v1/payouts/generate")).json.data as unknown as {
        id: string;
        adjustment_cents: number;
      }[];
      const payout = generated[0];
      if (!payout) throw new Error("no payout generated yet");
      return payout;
    }, 15_000);
    expect(second.adjustment_cents).toBe(-1000);

    const token = await p.mint();
    const read = await request(mesh.gatewayUrls[1] ?? "", "GET", `/affiliate/v1/payouts/${second.id}`, {
      authorization: `Bearer ${token}`,
    });
    expect(read.status).toBe(200);
    expect(read.json.data).toMatchObject({
      id: second.id,
      amount_cents: 1000,
      adjustment_cents: -1000,
      lines: [
        { kind: "commission", id: kept, amount_cents: 2000, description: `Commission ${kept}` },
        {
          kind: "adjustment",
          id: expect.stringMatching(/^adj_/),
          amount_cents: -1000,
          description: `Refund of commission ${clawedBack} (customer downgraded)`,
        },
      ],
    });
    const lines = read.json.data?.lines as { amount_cents: number }[];
    expect(lines.reduce((sum, line) => sum + line.amount_cents, 0)).toBe(read.json.data?.amount_cents);
    // The list says the same of it, line for line.
    const list = await request(mesh.gatewayUrls[1] ?? "", "GET", "/affiliate/v1/payouts", {
      authorization: `Bearer ${token}`,
    });
    expect(list.status).toBe(200);
    const listed = (list.json.data as unknown as { id: string }[]).find((payout) => payout.id === second.id);
    expect(listed).toEqual(read.json.data);
    // The refunded commission shows its reason and a masked customer.
    const commission = await request(mesh.gatewayUrl, "GET", `/affiliate/v1/commissions/${clawedBack}`, {
      authorization: `Bearer ${token}`,
    });
    expect(commission.json.data).toMatchObject({
      amount_cents: 1000,
      refund_reason: "customer downgraded",
      customer: "b***@example.com",
    });
  });
});
