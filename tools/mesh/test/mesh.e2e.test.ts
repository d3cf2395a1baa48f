import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { repositoryRoot } from "../src/services.js";
import { eventually, freePort, runScript, runTool, startTestMesh } from "./helpers.js";

/**
 * The mesh started as `npm start` starts it (separate processes, real Postgres and NATS), spoken
 * to over HTTP and through the operator CLI, as a new user would.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let cliEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    // A long cache lifetime: only the rotation event can explain an old key's 401.
    env: { EVENTS_NAMESPACE: namespace.namespace, KEY_CACHE_TTL_MS: "600000", LOG_LEVEL: "warn" },
  });
  cliEnv = { PARTNERS_URL: mesh.urls.partners };
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

async function api(method: string, path: string, options: { key?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.key) headers["x-api-key"] = options.key;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

async function createProduct(name: string) {
  const result = await runTool("admin", ["products", "create", "--name", name], cliEnv);
  expect(result.code).toBe(0);
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? "{}") as {
    product_id: string;
    name: string;
    secret_key: string;
    test_secret_key: string;
  };
}

describe("operator CLI", () => {
  it("creates, lists and rotates, one JSON line each", async () => {
    const created = await createProduct("Acme");
    expect(created).toEqual({
      product_id: expect.stringMatching(/^prd_/),
      name: "Acme",
      secret_key: expect.stringMatching(/^sk_live_/),
      test_secret_key: expect.stringMatching(/^sk_test_/),
      publishable_key: expect.stringMatching(/^pk_live_/),
      test_publishable_key: expect.stringMatching(/^pk_test_/),
    });
    const listed = await runTool("admin", ["products", "list"], cliEnv);
    const { products } = JSON.parse(listed.stdout) as { products: { product_id: string; created_at: string }[] };
    expect(products.find((p) => p.product_id === created.product_id)).toMatchObject({
      name: "Acme",
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    const rotated = await runTool("admin", ["keys", "rotate", "--product", created.product_id], cliEnv);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ product_id: created.product_id, name: "Acme" });
  });

  it("reports errors on stderr with exit code 1", async () => {
    const unknown = await runTool("admin", ["keys", "rotate", "--product", "prd_missing"], cliEnv);
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toContain("not found");
    const usage = await runTool("admin", ["products", "explode"], cliEnv);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain("usage:");
    const down = await runTool("admin", ["products", "list"], { PARTNERS_URL: `http://127.0.0.1:${await freePort()}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("cannot reach the partners service");
  });
});

describe("operator CLI: where it looks, and its help", () => {
  it("finds partners through PARTNERS_RPC_PORT, as npm start places it; PARTNERS_URL wins", async () => {
    const port = new URL(mesh.urls.partners ?? "").port;
    const listed = await runTool("admin", ["products", "list"], { PARTNERS_URL: "", PARTNERS_RPC_PORT: port });
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(listed.stdout)).toEqual({ products: expect.any(Array) });
    const elsewhere = `http://127.0.0.1:${await freePort()}`;
    const overridden = await runTool("admin", ["products", "list"], {
      PARTNERS_URL: elsewhere,
      PARTNERS_RPC_PORT: port,
    });
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toContain(`cannot reach the partners service at ${elsewhere}`);
  });

  it("prints its usage on stdout and exits 0 for --help, -h and a command's --help", async () => {
    for (const args of [["--help"], ["-h"], ["products", "--help"], ["keys", "rotate", "-h"]]) {
      const result = await runTool("admin", args, cliEnv);
      expect(result).toMatchObject({ code: 0, stderr: "" });
      expect(result.stdout).toMatch(/^usage:\n {2}admin products create --name <name>\n[\s\S]*PARTNERS_RPC_PORT/);
    }
  });
});

describe("keys through the gateway", () => {
  it("a rotated key gets 401 from the gateway that had it cached", async () => {
    const product = await createProduct("Rotation");
    expect((await api("GET", "/api/v1/program", { key: product.secret_key })).status).toBe(200);
    const rotated = JSON.parse(
      (await runTool("admin", ["keys", "rotate", "--product", product.product_id], cliEnv)).stdout,
    );
    await eventually(async () => {
      const res = await api("GET", "/api/v1/program", { key: product.secret_key });
      expect(res).toMatchObject({ status: 401, json: { error: "Invalid or revoked API key" } });
    });
    expect((await api("GET", "/api/v1/program", { key: rotated.secret_key })).status).toBe(200);
  });

  it("a test key is refused on the management API", async () => {
    const product = await createProduct("Test key");
    expect(await api("GET", "/api/v1/affiliates", { key: product.test_secret_key })).toMatchObject({
      status: 403,
      json: { error: "Test-mode keys cannot access the management API" },
    });
  });
});

describe("affiliates through the gateway", () => {
  it("creates a product, registers affiliates and lists them", async () => {
    const { secret_key: key } = await createProduct("Walkthrough");
    const program = await api("PATCH", "/api/v1/program", { key, body: { commission_rate_bps: 2500, hold_days: 14 } });
    expect(program).toMatchObject({ status: 200, json: { data: { commission_rate_bps: 2500, hold_days: 14 } } });

    const one = await api("POST", "/api/v1/affiliates", { key, body: { email: "hedy@example.com", name: "Hedy" } });
    expect(one.status).toBe(201);
    expect(one.json).toMatchObject({
      affiliate: { email: "hedy@example.com", name: "Hedy", isNew: true },
      partnership: { status: "active" },
    });
    const bulk = await api("POST", "/api/v1/affiliates/bulk", {
      key,
      body: {
        notify: false,
        affiliates: [
          { email: "joan@example.com", sponsorReferralCode: one.json.partnership.referralCode },
          { email: "hedy@example.com" },
          { email: "not-an-email" },
        ],
      },
    });
    expect(bulk.json.summary).toEqual({ total: 3, created: 1, joined: 0, reactivated: 0, failed: 2 });

    const list = await api("GET", "/api/v1/affiliates?limit=1", { key });
    expect(list.status).toBe(200);
    expect(list.json.pagination).toEqual({ next_cursor: expect.any(String), has_more: true });
    expect(list.json.data[0].affiliate.email).toBe("joan@example.com");
    const next = await api(
      "GET",
      `/api/v1/affiliates?limit=1&cursor=${encodeURIComponent(list.json.pagination.next_cursor)}`,
      {
        key,
      },
    );
    expect(next.json).toMatchObject({
      data: [{ affiliate: { email: "hedy@example.com" } }],
      pagination: { has_more: false, next_cursor: null },
    });

    const read = await api("GET", `/api/v1/affiliates/${one.json.partnership.id}`, { key });
    expect(read.json.data).toMatchObject({
      id: one.json.partnership.id,
      stats: { clicks: 0, conversions: 0, earned_cents: 0 },
      commissions: { pending_count: 0, approved_count: 0, pending_amount_cents: 0, approved_amount_cents: 0 },
    });
    const removed = await api("DELETE", `/api/v1/affiliates/${one.json.partnership.id}`, { key });
    expect(removed.json.data.status).toBe("removed");
    const again = await api("POST", "/api/v1/affiliates", { key, body: { email: "HEDY@example.com " } });
    expect(again).toMatchObject({
      status: 200,
      json: { affiliate: { isNew: false }, partnership: { status: "active" } },
    });
  });

  it("another product's partnership is a 404 like a missing one", async () => {
    const mine = await createProduct("Mine");
    const theirs = await createProduct("Theirs");
    const foreign = await api("POST", "/api/v1/affiliates", {
      key: theirs.secret_key,
      body: { email: "x@example.com" },
    });
    const res = await api("GET", `/api/v1/affiliates/${foreign.json.partnership.id}`, { key: mine.secret_key });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ error: expect.any(String) });
  });
});

describe("when partners is down", () => {
  it("the gateway answers 503 with Retry-After, and recovers when it is back", async () => {
    const { secret_key: key } = await createProduct("Outage");
    // A fresh key is not cached yet, so authentication itself needs partners.
    const fresh = await createProduct("Outage 2");
    await api("GET", "/api/v1/program", { key });
    const partnersPid = mesh.pids.partners;
    process.kill(partnersPid ?? 0, "SIGSTOP");
    try {
      const res = await api("GET", "/api/v1/program", { key: fresh.secret_key });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(Object.keys(res.json)).toEqual(["error"]);
    } finally {
      process.kill(partnersPid ?? 0, "SIGCONT");
    }
    await eventually(async () =>
      expect((await api("GET", "/api/v1/program", { key: fresh.secret_key })).status).toBe(200),
    );
  });
});

describe("the README walk-through", () => {
  it("runs the README's shell block as written, and its last steps pay out", async () => {
    const readme = await readFile(join(repositoryRoot, "README.md"), "utf8");
    const block = /^## Walk-through\n[\s\S]*?^```sh\n([\s\S]*?)^```$/m.exec(readme)?.[1] ?? "";
    expect(block).toContain("payouts/generate");
    const result = await runScript(block, {
      API: mesh.gatewayUrl,
      PARTNERS_URL: mesh.urls.partners,
      HOOK_PORT: String(await freePort()),
    });
    expect(result.code, result.stderr).toBe(0);
    // Every answer the block prints is one JSON line (the webhook receiver's lines are not).
    const answers = result.stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    const generated = answers.find((answer) => Array.isArray(answer.data) && answer.data[0]?.id?.startsWith("po_"));
    // The 2500 commission, less the refund of a quarter of the payment.
    expect(generated?.data).toEqual([
      expect.objectContaining({ status: "pending", amount_cents: 1875, adjustment_cents: 0, commission_count: 1 }),
    ]);
    // The webhook step waits until its receiver listens: the first attempt delivers, and the
    // receiver prints the event's id and body.
    const deliveries = answers.find((answer) => Array.isArray(answer.data) && answer.data[0]?.id?.startsWith("dlv_"));
    expect(deliveries?.data).toEqual([
      expect.objectContaining({ event_type: "commission.refunded", status: "succeeded", attempts: 1 }),
    ]);
    const receiverLine = result.stdout.split("\n").find((line) => line.startsWith(`${deliveries?.data[0].event_id} {`));
    expect(JSON.parse(receiverLine?.slice(receiverLine.indexOf("{")) ?? "null")).toMatchObject({
      id: deliveries?.data[0].event_id,
      type: "commission.refunded",
    });
    const paid = answers.find((answer) => answer.data?.id?.startsWith("po_") && answer.data.status === "completed");
    expect(paid?.data).toMatchObject({ id: generated.data[0].id, amount_cents: 1875, gateway_transfer_id: "tr_123" });
    // Ada reads her own partnership with the token the merchant minted: customers masked, the
    // payout line by line.
    expect(answers.find((answer) => answer.data?.joined_at)?.data).toMatchObject({
      status: "active",
      referral_code: "ADA",
    });
    const own = answers.find((answer) => Array.isArray(answer.data) && "customer" in (answer.data[0] ?? {}));
    expect(own?.data[0]).toMatchObject({ customer: "c***@example.com", refund_reason: "downgrade" });
    const explained = answers.find((answer) => Array.isArray(answer.data?.lines));
    expect(explained?.data).toMatchObject({
      id: generated.data[0].id,
      amount_cents: 1875,
      lines: [{ kind: "commission", amount_cents: 1875 }],
    });
    // The last step erases the customer; the receipt, read by id and by email, is completed.
    const erased = answers.find((answer) => answer.data?.anonymized);
    expect(erased?.data).toMatchObject({
      anonymized: { tracking_events: 1 },
      erasure_id: expect.stringMatching(/^ers_/),
    });
    const receipt = answers.find((answer) => answer.data?.id === erased?.data.erasure_id);
    expect(receipt?.data).toMatchObject({ status: "completed", verified_at: expect.any(String) });
    expect(answers.at(-1)?.data.map((r: { id: string }) => r.id)).toEqual([erased?.data.erasure_id]);
    // Step 11 prints the portal's address with the token it minted for Ada's partnership.
    const portal = /^Open (\S+)#token=(apt_\S+)$/m.exec(result.stdout);
    expect(portal?.[1]).toBe(`${mesh.gatewayUrl}/portal`);
    const me = await fetch(`${mesh.gatewayUrl}/affiliate/v1/me`, {
      headers: { authorization: `Bearer ${portal?.[2]}` },
    });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: unknown }).data).toMatchObject({
      referral_code: "ADA",
      affiliate: { name: "Ada" },
    });
  });
});
