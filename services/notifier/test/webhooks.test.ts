import { newId } from "@affiliate/platform";
import { CommissionRefundedSchema, CommissionStatus, RefundResultSchema } from "@affiliate/proto/ledger";
import { DeliveryStatus } from "@affiliate/proto/notifier";
import { CustomerErasedSchema } from "@affiliate/proto/privacy";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retryDelaysMs } from "../src/domain/schedule.js";
import { eventually, type Harness, Sink, startHarness } from "./harness.js";

let h: Harness;
let sink: Sink;
const productId = newId("prd");

beforeAll(async () => {
  h = await startHarness();
  sink = await new Sink().start();
  h.owners.addPartnership(productId, "ptn_1", { email: "ada@example.com", name: "Ada" });
});
afterAll(async () => {
  await h.close();
  await sink.close();
});

/** A full refund of a commission, as the ledger publishes it: ids and figures, no email. */
function fullRefund(commissionId: string) {
  h.owners.addCommission(productId, commissionId, "ptn_1", {
    amountCents: 0n,
    status: CommissionStatus.REFUNDED,
    reason: "customer asked",
  });
  return create(CommissionRefundedSchema, {
    id: newId("msg"),
    occurredAt: timestampNow(),
    commission: { id: commissionId, productId, partnershipId: "ptn_1" },
    previousAmountCents: 2000n,
    newAmountCents: 0n,
    previousStatus: CommissionStatus.APPROVED,
    paymentRefundedCents: 10_000n,
    refund: create(RefundResultSchema, {
      commissionId,
      partnershipId: "ptn_1",
      paymentAmountCents: 10_000n,
      refundAmountCents: 10_000n,
      previousCommissionCents: 2000n,
      newCommissionCents: 0n,
      status: CommissionStatus.REFUNDED,
      fullyRefunded: true,
    }),
  });
}

/** The endpoint's webhook with a URL on the sink (private addresses are allowed for the workers only). */
async function endpoint(path: string, events = ["commission.refunded"]) {
  await h.sql`select 1`;
  const { webhook, secret } = await h.notifier.createWebhook({ productId, url: `https://example.com${path}`, events });
  if (!webhook) throw new Error("no webhook");
  // The RPC refuses loopback URLs (allowPrivate false); point the stored URL at the local sink.
  await h.sql`update endpoints set url = ${sink.url(path)} where id = ${webhook.id}`;
  return { id: webhook.id, secret };
}

describe("a refund event becomes a signed delivery", () => {
  it("records one delivery per subscribed endpoint, signs it, sends it and lists it as succeeded", async () => {
    const { id, secret } = await endpoint("/slice");
    const event = fullRefund("com_slice");
    await h.publish("ledger.commission.refunded", CommissionRefundedSchema, event);

    const [received] = await eventually(() => {
      const got = sink.at("/slice");
      expect(got).toHaveLength(1);
      return got;
    });
    if (!received) throw new Error("nothing received");
    // Verified as a receiver would, with the standardwebhooks library.
    const verified = new Webhook(secret).verify(received.body, received.headers as Record<string, string>) as {
      id: string;
      type: string;
      data: Record<string, unknown>;
    };
    expect(verified.id).toBe(event.id);
    expect(received.headers["webhook-id"]).toBe(event.id);
    expect(verified.type).toBe("commission.refunded");
    // The customer's email and the reason come from the ledger, not from the event.
    expect(verified.data).toMatchObject({
      id: "com_slice",
      amount_cents: 0,
      status: "refunded",
      customer_email: "customer@example.com",
      refund_amount_cents: 10_000,
      fully_refunded: true,
      reason: "customer asked",
      affiliate: { id: "aff_ptn_1", email: "ada@example.com", name: "Ada" },
    });

    const page = await eventually(async () => {
      const listed = await h.notifier.listDeliveries({ productId, webhookId: id, pageSize: 10 });
      expect(listed.deliveries[0]?.status).toBe(DeliveryStatus.SUCCEEDED);
      return listed;
    });
    expect(page.deliveries).toHaveLength(1);
    expect(page.deliveries[0]).toMatchObject({ eventId: event.id, attempts: 1, lastStatusCode: 200 });
  });

  it("asks no owner, and opens no transaction, for an event no endpoint listens to and that sends no email", async () => {
    const before = h.owners.calls;
    // A partial refund of an approved commission: no email (contract 7), and no endpoint in this product.
    const event = fullRefund("com_nobody");
    event.newAmountCents = 1000n;
    event.commission = { ...event.commission, productId: newId("prd") } as typeof event.commission;
    await h.publish("ledger.commission.refunded", CommissionRefundedSchema, event);
    await h.handled("ledger.commission.refunded");
    expect(h.owners.calls).toBe(before);
    // Acked without a transaction: not even its id was recorded.
    expect(await h.sql`select 1 from applied_events where event_id = ${event.id}`).toHaveLength(0);
  });
});

describe("customer.erased", () => {
  it("becomes a delivery carrying the erasure's id and times, never an email, and asks no owner", async () => {
    await endpoint("/erased", ["customer.erased"]);
    const before = h.owners.calls;
    const requestedAt = new Date("2026-11-26T10:00:00.000Z");
    const completedAt = new Date("2026-11-26T10:00:01.250Z");
    const event = create(CustomerErasedSchema, {
      id: newId("msg"),
      occurredAt: timestampFromDate(completedAt),
      erasureId: "era_1",
      productId,
      requestedAt: timestampFromDate(requestedAt),
      completedAt: timestampFromDate(completedAt),
    });
    await h.publish("privacy.customer.erased", CustomerErasedSchema, event);

    const [received] = await eventually(() => {
      const got = sink.at("/erased");
      expect(got).toHaveLength(1);
      return got;
    });
    expect(JSON.parse(received?.body ?? "null")).toEqual({
      id: event.id,
      type: "customer.erased",
      created_at: completedAt.toISOString(),
      data: { erasure_id: "era_1", requested_at: requestedAt.toISOString(), completed_at: completedAt.toISOString() },
    });
    expect(h.owners.calls).toBe(before);
  });
});

describe("retries on a controllable clock", () => {
  it("500, 500, 200: three attempts with one webhook-id, on the contract's schedule", async () => {
    sink.program("/retries", [500, 500, 200]);
    const { id } = await endpoint("/retries");
    const event = fullRefund("com_retries");
    await h.publish("ledger.commission.refunded", CommissionRefundedSchema, event);
    await eventually(() => expect(sink.at("/retries")).toHaveLength(1));

    const delivery = async () => {
      const [row] = await h.sql<{ attempts: number; status: string; nextAttemptAt: Date | null }[]>`
        select attempts, status, next_attempt_at from deliveries where endpoint_id = ${id}`;
      if (!row) throw new Error("no delivery");
      return row;
    };
    const first = await eventually(async () => {
      const row = await delivery();
      expect(row.attempts).toBe(1);
      return row;
    });
    // Due 5 s later, with at most 10% jitter; nothing happens before the clock gets there.
    const waitMs = (first.nextAttemptAt?.getTime() ?? 0) - h.clock.now.getTime();
    expect(waitMs).toBeGreaterThanOrEqual(retryDelaysMs[0]);
    expect(waitMs).toBeLessThanOrEqual(retryDelaysMs[0] * 1.1);
    await h.workers.deliveries.drain();
    expect(sink.at("/retries")).toHaveLength(1);

    h.clock.advance(retryDelaysMs[0] * 1.1 + 1);
    await eventually(() => expect(sink.at("/retries")).toHaveLength(2));
    // The second attempt recorded before the clock moves on: its retry is scheduled from the
    // time it is recorded at (the sink hears the request before the worker records it).
    await eventually(async () => expect((await delivery()).attempts).toBe(2));
    h.clock.advance(retryDelaysMs[1] * 1.1 + 1);
    await eventually(() => expect(sink.at("/retries")).toHaveLength(3));
    await eventually(async () => expect((await delivery()).status).toBe("succeeded"));

    const ids = new Set(sink.at("/retries").map((r) => r.headers["webhook-id"]));
    expect([...ids]).toEqual([event.id]);
    const detail = await h.notifier.getDelivery({
      productId,
      webhookId: id,
      deliveryId: (await h.sql<{ id: string }[]>`select id from deliveries where endpoint_id = ${id}`)[0]?.id ?? "",
    });
    expect(detail.delivery?.attemptLog.map((a) => a.statusCode)).toEqual([500, 500, 200]);
  });

  it("a worker whose lease ran out records nothing; the next claim makes the attempt", async () => {
    const { id } = await endpoint("/lease");
    // A delivery claimed by a worker that was then killed: leased, never finished.
    const deliveryId = newId("dlv");
    const now = h.clock.now;
    await h.sql`
      insert into deliveries (id, product_id, endpoint_id, event_id, event_type, payload, next_attempt_at,
                              leased_until, lease_token)
      values (${deliveryId}, ${productId}, ${id}, ${newId("msg")}, 'webhook.test',
              ${h.sql.json({ id: "x", type: "webhook.test", created_at: now.toISOString(), data: {} })},
              ${now}, ${new Date(now.getTime() + 60_000)}, 'dead-worker')`;
    await h.workers.deliveries.drain();
    expect(sink.at("/lease")).toHaveLength(0); // never two at once: the lease still holds
    h.clock.advance(60_001);
    await eventually(() => expect(sink.at("/lease")).toHaveLength(1));
    await eventually(async () => {
      const [row] = await h.sql<{ status: string }[]>`select status from deliveries where id = ${deliveryId}`;
      expect(row?.status).toBe("succeeded");
    });
  });
});

describe("rotation", () => {
  it("signs with both secrets for 24 hours: the old and the new secret each verify", async () => {
    const { id, secret: old } = await endpoint("/rotate");
    const { secret: fresh } = await h.notifier.rotateWebhookSecret({ productId, webhookId: id });
    expect(fresh).not.toBe(old);
    await h.notifier.testWebhook({ productId, webhookId: id });
    const [received] = await eventually(() => {
      const got = sink.at("/rotate");
      expect(got).toHaveLength(1);
      return got;
    });
    if (!received) throw new Error("nothing received");
    const headers = received.headers as Record<string, string>;
    // A webhook's id is a message id (msg_), never a tracking event's (evt_).
    expect(headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(new Webhook(old).verify(received.body, headers)).toMatchObject({ type: "webhook.test" });
    expect(new Webhook(fresh).verify(received.body, headers)).toMatchObject({ data: { webhook_id: id } });
  });
});

describe("endpoint RPCs", () => {
  it("refuses a private URL and an unknown event type, naming the field", async () => {
    const refused = await h.notifier
      .createWebhook({ productId, url: "http://169.254.169.254/latest", events: [] })
      .catch((e: unknown) => e);
    expect(ConnectError.from(refused).code).toBe(Code.InvalidArgument);
    expect(ConnectError.from(refused).message).toContain("private");
    const unknown = await h.notifier
      .createWebhook({ productId, url: "https://example.com/x", events: ["commission.exploded"] })
      .catch((e: unknown) => e);
    expect(ConnectError.from(unknown).message).toContain("commission.exploded");
  });

  it("another product's endpoint is not found", async () => {
    const { id } = await endpoint("/tenancy");
    const other = await h.notifier.getWebhook({ productId: newId("prd"), webhookId: id }).catch((e: unknown) => e);
    expect(ConnectError.from(other).code).toBe(Code.NotFound);
  });

  it("recover re-queues the failed deliveries created in the window; retry makes one more attempt", async () => {
    const { id } = await endpoint("/recover");
    const created = h.clock.now;
    const ids = [newId("dlv"), newId("dlv")];
    for (const deliveryId of ids) {
      await h.sql`
        insert into deliveries (id, product_id, endpoint_id, event_id, event_type, payload, status)
        values (${deliveryId}, ${productId}, ${id}, ${newId("msg")}, 'webhook.test',
                ${h.sql.json({ id: "x", type: "webhook.test", created_at: created.toISOString(), data: {} })}, 'failed')`;
    }
    const { requeued } = await h.notifier.recoverDeliveries({
      productId,
      webhookId: id,
      since: timestampFromDate(new Date(Date.now() - 60_000)),
    });
    expect(requeued).toBe(2n);
    await eventually(() => expect(sink.at("/recover")).toHaveLength(2));
    // Both attempts recorded (the sink hears a request before the worker records its outcome,
    // and a retry asked before that record would be overwritten by it).
    await eventually(async () => {
      const rows = await h.sql`select 1 from deliveries where id = any(${ids}::text[]) and status = 'succeeded'`;
      expect(rows).toHaveLength(2);
    });

    const retried = await h.notifier.retryDelivery({ productId, webhookId: id, deliveryId: ids[0] ?? "" });
    expect(retried.delivery?.status).toBe(DeliveryStatus.PENDING);
    await eventually(() => expect(sink.at("/recover")).toHaveLength(3));
  });
});
