import { newId } from "@affiliate/platform";
import { CommissionCreatedSchema } from "@affiliate/proto/ledger";
import { DeliveryStatus } from "@affiliate/proto/notifier";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type Harness, Sink, startHarness } from "./harness.js";

/** A product with one affiliate whose commissions the fake ledger knows. */
function productOf(h: Harness) {
  const productId = newId("prd");
  h.owners.addPartnership(productId, `ptn_${productId}`, { email: "ada@example.com", name: "Ada" });
  let commissions = 0;
  return {
    productId,
    /** Publishes one commission.created of this product; answers its event id. */
    async commissionCreated(): Promise<string> {
      const commissionId = `com_${productId}_${++commissions}`;
      h.owners.addCommission(productId, commissionId, `ptn_${productId}`);
      const event = create(CommissionCreatedSchema, {
        id: newId("msg"),
        occurredAt: timestampNow(),
        commission: { id: commissionId, productId, partnershipId: `ptn_${productId}` },
      });
      await h.publish("ledger.commission.created", CommissionCreatedSchema, event);
      return event.id;
    },
  };
}

async function endpoint(h: Harness, sink: Sink, productId: string, path: string, events = ["commission.created"]) {
  const { webhook } = await h.notifier.createWebhook({ productId, url: `https://example.com${path}`, events });
  if (!webhook) throw new Error("no webhook");
  // The RPC refuses loopback URLs; point the stored URL at the local sink (no notification: the URL is not listened for).
  await h.sql`update endpoints set url = ${sink.url(path)} where id = ${webhook.id}`;
  return webhook.id;
}

/** Nothing was recorded for the event: no delivery, and nothing left to send. */
async function deliveredNowhere(h: Harness, eventId: string): Promise<boolean> {
  await h.handled("ledger.commission.created");
  await h.workers.deliveries.drain();
  return (await h.sql`select 1 from deliveries where event_id = ${eventId}`).length === 0;
}

/** The event was acked without a transaction: its id was never recorded as applied. */
async function skipped(h: Harness, eventId: string): Promise<boolean> {
  await h.handled("ledger.commission.created");
  return (await h.sql`select 1 from applied_events where event_id = ${eventId}`).length === 0;
}

describe("the index of listeners, following its feed", () => {
  let h: Harness;
  let sink: Sink;
  beforeAll(async () => {
    h = await startHarness();
    sink = await new Sink().start();
  });
  afterAll(async () => {
    await h.close();
    await sink.close();
  });

  it("acks an event nobody listens to after a heartbeat, asking nobody; a new endpoint receives the very next event", async () => {
    const product = productOf(h);
    const fencedBefore = h.listeners.decided.fenced;
    const ignored = await eventually(async () => {
      const eventId = await product.commissionCreated();
      expect(await skipped(h, eventId)).toBe(true);
      // Decided in memory once the feed is loaded (the first events may come before it is).
      expect(h.listeners.decided.fenced).toBeGreaterThan(fencedBefore);
      return eventId;
    });
    expect(ignored).toMatch(/^msg_/);
    const asked = h.owners.calls;
    const queriedBefore = h.listeners.decided.queried;

    const webhookId = await endpoint(h, sink, product.productId, "/new");
    const next = await product.commissionCreated();
    const [received] = await eventually(() => {
      const got = sink.at("/new");
      expect(got).toHaveLength(1);
      return got;
    });
    expect(received?.headers["webhook-id"]).toBe(next);
    expect(h.owners.calls).toBeGreaterThan(asked);
    // Known in memory now: the next one goes straight to its transaction.
    const indexBefore = h.listeners.decided.index;
    await product.commissionCreated();
    await eventually(() => expect(sink.at("/new")).toHaveLength(2));
    expect(h.listeners.decided.index).toBe(indexBefore + 1);
    expect(h.listeners.decided.queried).toBe(queriedBefore);
    expect(webhookId).toMatch(/^wh_/);
  });

  it("an endpoint given other event types, then deleted, stops receiving; a disabled one gets failed deliveries without an attempt", async () => {
    const product = productOf(h);
    const webhookId = await endpoint(h, sink, product.productId, "/changing");
    await product.commissionCreated();
    await eventually(() => expect(sink.at("/changing")).toHaveLength(1));

    // The feed may not have announced a change yet when the next event comes: the handler's
    // own read of the endpoints, in its transaction, decides then.
    await h.notifier.updateWebhook({
      productId: product.productId,
      webhookId,
      eventsSet: true,
      events: ["payout.created"],
    });
    expect(await deliveredNowhere(h, await product.commissionCreated())).toBe(true);

    await h.notifier.updateWebhook({
      productId: product.productId,
      webhookId,
      eventsSet: true,
      events: ["commission.created"],
    });
    await h.notifier.updateWebhook({ productId: product.productId, webhookId, enabled: false });
    const whileDisabled = await product.commissionCreated();
    const [failed] = await eventually(async () => {
      const { deliveries } = await h.notifier.listDeliveries({ productId: product.productId, webhookId, pageSize: 10 });
      expect(deliveries.map((delivery) => delivery.eventId)).toContain(whileDisabled);
      return deliveries.filter((delivery) => delivery.eventId === whileDisabled);
    });
    expect(failed).toMatchObject({ status: DeliveryStatus.FAILED, attempts: 0 });

    await h.notifier.deleteWebhook({ productId: product.productId, webhookId });
    expect(await deliveredNowhere(h, await product.commissionCreated())).toBe(true);
    // Once the deletion is announced, the product's events are acked without a transaction.
    await eventually(async () => expect(await skipped(h, await product.commissionCreated())).toBe(true));
    expect(sink.at("/changing")).toHaveLength(1);
  });

  it("a lost feed is replaced: meanwhile the database is asked, and an endpoint made while it was down receives the next event", async () => {
    const product = productOf(h);
    const ended = await h.sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and application_name like 'notifier endpoint feed%'`;
    expect(ended).toHaveLength(1);
    const webhookId = await endpoint(h, sink, product.productId, "/during");
    const next = await product.commissionCreated();
    await eventually(() => expect(sink.at("/during").map((got) => got.headers["webhook-id"])).toEqual([next]));
    // The feed comes back, loaded with the endpoint made while it was away.
    const indexBefore = h.listeners.decided.index;
    await eventually(async () => {
      await product.commissionCreated();
      expect(h.listeners.decided.index).toBeGreaterThan(indexBefore);
    });
    expect(webhookId).toMatch(/^wh_/);
  });
});

describe("without its feed", () => {
  let h: Harness;
  let sink: Sink;
  beforeAll(async () => {
    // Nothing answers there: the index is never trusted.
    h = await startHarness({ endpointFeedUrl: "postgres://postgres@127.0.0.1:1/nothing" });
    sink = await new Sink().start();
  });
  afterAll(async () => {
    await h.close();
    await sink.close();
  });

  it("asks the database for every event: a new endpoint receives the next one, and an event nobody listens to is still acked without a transaction", async () => {
    const product = productOf(h);
    const queriedBefore = h.listeners.decided.queried;
    expect(await skipped(h, await product.commissionCreated())).toBe(true);
    await endpoint(h, sink, product.productId, "/queried");
    const next = await product.commissionCreated();
    await eventually(() => expect(sink.at("/queried").map((got) => got.headers["webhook-id"])).toEqual([next]));
    expect(h.listeners.decided.queried).toBe(queriedBefore + 2);
  });
});
