import { connectNats, createLogger, ensureStream, startOutboxRelay, streamName } from "@affiliate/platform";
import { PartnershipCreatedSchema } from "@affiliate/proto/partners";
import { createTestNamespace, type TestNamespace } from "@affiliate/testing";
import { fromBinary } from "@bufbuild/protobuf";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schema } from "../src/server.js";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
let ns: TestNamespace;
let nats: NatsConnection;

beforeAll(async () => {
  h = await startHarness();
  ns = createTestNamespace();
  nats = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "partners-outbox-test");
  await ensureStream(await nats.jetstreamManager(), { service: "partners", namespace: ns.namespace });
});
afterAll(async () => {
  await nats.close();
  await ns.cleanup();
  await h.close();
});

describe("events through the outbox", () => {
  it("a registration committed while no relay runs is published when one starts, once", async () => {
    const { product } = await h.admin.createProduct({ name: "Outbox" });
    const { partnership } = await h.partners.registerAffiliate({
      productId: product?.id ?? "",
      registration: { email: uniqueEmail() },
      notify: true,
    });
    // The state change and its event committed together: both are there, nothing published yet.
    const [row] = await h.sql<{ id: string }[]>`select id from outbox where subject = 'partners.partnership.created'`;
    expect(row?.id).toMatch(/^msg_/);

    const relay = startOutboxRelay({
      sql: h.sql,
      nats,
      schema,
      namespace: ns.namespace,
      logger: createLogger("relay-test", "silent"),
    });
    await relay.flush();
    await relay.stop();
    expect(await h.sql`select id from outbox`).toHaveLength(0);

    const jsm = await nats.jetstreamManager();
    const stream = streamName({ service: "partners", namespace: ns.namespace });
    const message = await jsm.streams.getMessage(stream, {
      last_by_subj: `${ns.namespace}.partners.partnership.created`,
    });
    expect(message.header.get("Nats-Msg-Id")).toBe(row?.id);
    const event = fromBinary(PartnershipCreatedSchema, message.data);
    expect(event).toMatchObject({
      id: row?.id,
      notify: true,
      newAffiliate: true,
      partnership: { id: partnership?.id },
    });
  });
});
