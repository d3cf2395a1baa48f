import { createFaultProxy, createTestNamespace, type TestNamespace } from "@affiliate/testing";
import type { JetStreamClient, NatsConnection } from "nats";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { followEvents } from "../src/consumer.js";
import { connectNats, ensureStream, wireSubject } from "../src/events.js";
import { followWhileConnected } from "../src/follow-while-connected.js";
import { capturingLogger, eventually, silentLogger } from "./helpers.js";

let events: TestNamespace;
let nc: NatsConnection;
let js: JetStreamClient;
let stream: string;
const followers: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  events = createTestNamespace();
  nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "platform-follow-test");
  js = nc.jetstream();
  stream = await ensureStream(await nc.jetstreamManager(), { service: "svc", namespace: events.namespace });
});

afterEach(async () => {
  for (const follower of followers.splice(0)) await follower.stop();
});

afterAll(async () => {
  for (const follower of followers.splice(0)) await follower.stop();
  await nc?.close();
  await events?.cleanup();
});

async function follow(subject: string, handle: (data: string) => void = () => {}, logger = silentLogger) {
  const received: { subject: string; data: string }[] = [];
  const follower = await followEvents({
    js,
    stream,
    subject,
    namespace: events.namespace,
    logger,
    handle: (message) => {
      const data = Buffer.from(message.data).toString();
      received.push({ subject: message.subject, data });
      handle(data);
    },
  });
  followers.push(follower);
  return received;
}

const publish = (subject: string, data: string) =>
  js.publish(wireSubject(events.namespace, subject), Buffer.from(data));

describe("followEvents", () => {
  it("delivers an event to every follower", async () => {
    const subject = "svc.product.keys_rotated";
    const one = await follow(subject);
    const two = await follow(subject);
    await publish(subject, "rotated");

    await eventually("both followers received it", () => one.length > 0 && two.length > 0);
    expect(one).toEqual([{ subject, data: "rotated" }]);
    expect(two).toEqual([{ subject, data: "rotated" }]);
  });

  it("delivers only events published after it started, on its subject", async () => {
    const subject = "svc.product.updated";
    await publish(subject, "before");
    const received = await follow(subject);
    await publish("svc.product.other", "elsewhere");
    await publish(subject, "after");

    // Delivered in stream order: an earlier event would have arrived first.
    await eventually("the later event", () => received.length > 0);
    expect(received).toEqual([{ subject, data: "after" }]);
  });

  it("keeps following when its handler throws", async () => {
    const subject = "svc.product.flaky";
    const { logger, lines } = capturingLogger();
    const received = await follow(
      subject,
      (data) => {
        if (data === "first") throw new Error("handler failed");
      },
      logger,
    );
    await publish(subject, "first");
    await publish(subject, "second");

    await eventually("both events", () => received.length === 2);
    expect(received.map((message) => message.data)).toEqual(["first", "second"]);
    expect(lines.filter((line) => line.msg === "event handler failed")).toHaveLength(1);
  });

  it("stop() ends the loop", async () => {
    const subject = "svc.product.stopped";
    const received = await follow(subject);
    await publish(subject, "one");
    await eventually("the first event", () => received.length === 1);
    const follower = followers.pop();
    await follower?.stop();

    await publish(subject, "two");
    // Another follower hears the next event; the stopped one does not.
    const other = await follow(subject);
    await publish(subject, "three");
    await eventually("the other follower's event", () => other.length === 1);
    expect(received.map((message) => message.data)).toEqual(["one"]);
  });

  it("ended resolves when the follow ends", async () => {
    const follower = await followEvents({
      js,
      stream,
      subject: "svc.product.ended",
      namespace: events.namespace,
      logger: silentLogger,
      handle: () => {},
    });
    let ended = false;
    void follower.ended.then(() => {
      ended = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended).toBe(false);

    await follower.stop();
    await follower.ended;
    expect(ended).toBe(true);
  });
});

describe("followWhileConnected", () => {
  it("stops trusting within a second while the server is frozen, and trusts again when it answers", async () => {
    const proxy = await createFaultProxy(process.env.NATS_URL ?? "nats://127.0.0.1:4222");
    const trust: boolean[] = [];
    const follower = followWhileConnected({
      connect: () => connectNats(proxy.url(process.env.NATS_URL ?? "nats://127.0.0.1:4222"), "follow-stall-test"),
      stream,
      subject: "svc.product.keys_rotated",
      namespace: events.namespace,
      logger: silentLogger,
      purpose: "test",
      handle: () => {},
      onFollowing: (following) => trust.push(following),
    });
    followers.push({
      stop: async () => {
        await follower.stop();
        await proxy.close();
      },
    });
    await eventually("trusted while following", () => trust.at(-1) === true);

    proxy.stall();
    // Bounded wait: the cache must stop trusting well inside the 2 s a rotation may take.
    await eventually("distrusted while the server is frozen", () => trust.at(-1) === false, { timeoutMs: 2000 });

    await proxy.restore();
    await eventually("trusted again once the server answers", () => trust.at(-1) === true);
  });
});
