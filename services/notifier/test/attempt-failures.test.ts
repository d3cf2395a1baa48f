/**
 * Webhook failures visible (issue 23 item 6): each failed attempt logs one line (ids, outcome,
 * status or error, next attempt; never the payload, a secret or the URL's query), the metric
 * counts attempts by outcome as /metrics serves it, and the delivery and its attempts carry the
 * error text through the RPC and the gateway's REST mapping.
 */
import { createServer } from "node:net";
import { collectMetrics } from "@affiliate/platform";
import { toPublicDelivery, toPublicDeliveryDetail } from "@affiliate/rest-shapes/mappers/webhooks";
import { deliveryDetailSchema, deliverySchema } from "@affiliate/rest-shapes/schemas/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, eventually, type Harness, Sink, startHarness } from "./harness.js";

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** webhook_attempts_total by outcome, read from the exposition Prometheus scrapes. */
async function attemptsByOutcome(): Promise<Record<string, number>> {
  const text = await collectMetrics();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^webhook_attempts_total\{outcome="([^"]+)"\} (\d+)$/gm)) {
    counts[match[1] as string] = Number(match[2]);
  }
  return counts;
}

const attemptTimeoutMs = 300;
const productId = "prd_failures";
const captured = capturingLogger();
let h: Harness;
let sink: Sink;
let slowSink: Sink;

beforeAll(async () => {
  h = await startHarness({ rpcAllowsPrivate: true, attemptTimeoutMs, logger: captured.logger });
  sink = await new Sink().start();
  slowSink = await new Sink(() => 3 * attemptTimeoutMs).start();
});
afterAll(async () => {
  await h.close();
  await sink.close();
  await slowSink.close();
});

/** Creates an endpoint at `url`, sends it a test delivery and waits for its first attempt. */
async function attemptOnce(harness: Harness, url: string) {
  const { webhook, secret } = await harness.notifier.createWebhook({ productId, url, events: [] });
  const webhookId = webhook?.id ?? "";
  const { delivery } = await harness.notifier.testWebhook({ productId, webhookId });
  const deliveryId = delivery?.id ?? "";
  const read = await eventually(async () => {
    const { delivery: attempted } = await harness.notifier.getDelivery({ productId, webhookId, deliveryId });
    expect(attempted?.attempts).toBe(1);
    return attempted;
  });
  return { webhookId, deliveryId, secret, delivery: read };
}

/** The log lines naming this delivery. */
function linesOf(deliveryId: string): Record<string, unknown>[] {
  return captured.lines.filter((line) => JSON.stringify(line).includes(deliveryId));
}

describe("a failed attempt", () => {
  it("refused port: the error text on the delivery, its attempt and the REST read; one log line without the URL's query, the payload or the secret", async () => {
    const before = await attemptsByOutcome();
    const port = await closedPort();
    const { webhookId, deliveryId, secret, delivery } = await attemptOnce(
      h,
      `http://127.0.0.1:${port}/hooks?token=receiver-token`,
    );
    const expected = `connect ECONNREFUSED 127.0.0.1:${port}`;
    expect(delivery?.lastStatusCode).toBeUndefined();
    expect(delivery?.lastError).toBe(expected);
    expect(delivery?.attemptLog.map((attempt) => attempt.error)).toEqual([expected]);

    // As the gateway answers GET …/deliveries/:id and the list (its mappers and schemas).
    const detail = deliveryDetailSchema.parse(toPublicDeliveryDetail(delivery));
    expect(detail).toMatchObject({ status: "pending", last_status_code: null, last_error: expected });
    expect(detail.attempts).toEqual([expect.objectContaining({ status_code: null, error: expected })]);
    const { deliveries } = await h.notifier.listDeliveries({ productId, webhookId, pageSize: 10 });
    expect(deliverySchema.parse(toPublicDelivery(deliveries[0])).last_error).toBe(expected);

    const lines = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(lines[0]).toMatchObject({
      level: "warn",
      msg: "webhook attempt failed",
      webhookId,
      deliveryId,
      attempt: 1,
      outcome: "connection_refused",
      statusCode: null,
      error: expected,
      nextAttemptAt: delivery?.nextAttemptAt ? expect.any(String) : null,
    });
    expect(Date.parse(String(lines[0]?.nextAttemptAt))).toBeGreaterThan(h.clock.now.getTime());
    const raw = JSON.stringify(lines[0]);
    expect(raw).not.toContain("receiver-token");
    expect(raw).not.toContain(secret);
    expect(raw).not.toContain("webhook.test"); // the payload's type: no part of the body is logged
    expect(Object.keys(lines[0] ?? {})).not.toContain("payload");

    const after = await attemptsByOutcome();
    expect((after.connection_refused ?? 0) - (before.connection_refused ?? 0)).toBe(1);
  });

  it("500 receiver: counted as 5xx and logged with its status; the delivery has no error text", async () => {
    const before = await attemptsByOutcome();
    sink.program("/five-hundred", [500]);
    const { deliveryId, delivery } = await attemptOnce(h, sink.url("/five-hundred"));
    expect(delivery?.lastStatusCode).toBe(500);
    expect(delivery?.lastError).toBeUndefined();
    expect(toPublicDeliveryDetail(delivery)).toMatchObject({ last_error: null, attempts: [{ error: null }] });
    const [line] = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(line).toMatchObject({ outcome: "5xx", statusCode: 500, error: null, attempt: 1 });
    const after = await attemptsByOutcome();
    expect((after["5xx"] ?? 0) - (before["5xx"] ?? 0)).toBe(1);
  });

  it("no answer within the configured timeout: `timeout after …`, counted as timeout", async () => {
    const before = await attemptsByOutcome();
    const { deliveryId, delivery } = await attemptOnce(h, slowSink.url("/slow"));
    const expected = `timeout after ${attemptTimeoutMs / 1000} s`;
    expect(delivery?.lastError).toBe(expected);
    expect(toPublicDeliveryDetail(delivery).attempts.map((attempt) => attempt.error)).toEqual([expected]);
    const [line] = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(line).toMatchObject({ outcome: "timeout", error: expected });
    const after = await attemptsByOutcome();
    expect((after.timeout ?? 0) - (before.timeout ?? 0)).toBe(1);
  });

  it("a 4xx answer is counted as 4xx and logged with its status; the delivery has no error text", async () => {
    const before = await attemptsByOutcome();
    sink.program("/not-found", [404]);
    const { deliveryId, delivery } = await attemptOnce(h, sink.url("/not-found"));
    expect(delivery?.lastStatusCode).toBe(404);
    expect(delivery?.lastError).toBeUndefined();
    const [line] = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(line).toMatchObject({ outcome: "4xx", statusCode: 404, error: null });
    const after = await attemptsByOutcome();
    expect((after["4xx"] ?? 0) - (before["4xx"] ?? 0)).toBe(1);
  });

  it("a TLS handshake that fails (https:// to a plain HTTP receiver) is counted as tls, with OpenSSL's reason", async () => {
    const before = await attemptsByOutcome();
    const { deliveryId, delivery } = await attemptOnce(h, `https://127.0.0.1:${sink.port}/tls`);
    expect(delivery?.lastStatusCode).toBeUndefined();
    expect(delivery?.lastError).toContain("SSL routines");
    const [line] = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(line).toMatchObject({ outcome: "tls", statusCode: null, error: delivery?.lastError });
    const after = await attemptsByOutcome();
    expect((after.tls ?? 0) - (before.tls ?? 0)).toBe(1);
  });

  it("a success is counted as 2xx and logs nothing", async () => {
    const before = await attemptsByOutcome();
    const { deliveryId, delivery } = await attemptOnce(h, sink.url("/fine"));
    expect(delivery?.lastStatusCode).toBe(200);
    expect(delivery?.lastError).toBeUndefined();
    const after = await attemptsByOutcome();
    expect((after["2xx"] ?? 0) - (before["2xx"] ?? 0)).toBe(1);
    expect(linesOf(deliveryId)).toEqual([]);
  });
});

describe("a target that resolves to a private address", () => {
  let guarded: Harness;
  beforeAll(async () => {
    guarded = await startHarness({ rpcAllowsPrivate: true, workersAllowPrivate: false, logger: captured.logger });
  });
  afterAll(() => guarded.close());

  it("is refused at connect: counted as ssrf_refused, the reason on the delivery and in the log line", async () => {
    const before = await attemptsByOutcome();
    const { deliveryId, delivery } = await attemptOnce(guarded, `http://localhost:${sink.port}/internal`);
    expect(delivery?.lastError).toBe("localhost resolves to a non-public address");
    const [line] = await eventually(() => {
      const found = linesOf(deliveryId);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(line).toMatchObject({ outcome: "ssrf_refused", error: "localhost resolves to a non-public address" });
    expect(sink.at("/internal")).toEqual([]);
    const after = await attemptsByOutcome();
    expect((after.ssrf_refused ?? 0) - (before.ssrf_refused ?? 0)).toBe(1);
  });
});
