import {
  connectNats,
  createLogger,
  ensureStream,
  type followEvents,
  type NatsConnection,
  wireSubject,
} from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { KeyMode, ProductKeysRotatedSchema } from "@affiliate/proto/partners";
import { createTestNamespace } from "@affiliate/testing";
import { create, toBinary } from "@bufbuild/protobuf";
import { Events, type Status } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyCache } from "../src/auth/key-cache.js";
import { evictOnCredentialEvents, startKeyEvictions } from "../src/auth/key-evictions.js";
import { createGateway } from "./support/harness.js";

const logger = createLogger("gateway-test", "silent");

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function rotated(productId: string): Uint8Array {
  return toBinary(ProductKeysRotatedSchema, create(ProductKeysRotatedSchema, { id: "msg_1", productId }));
}

/** A cache over two products' keys, each key resolved once so it is cached. */
async function warmCache() {
  const calls: string[] = [];
  const owners: Record<string, string> = { sk_live_a: "prd_a", sk_live_b: "prd_b" };
  const cache = new KeyCache({
    resolve: async (apiKey) => {
      calls.push(apiKey);
      const productId = owners[apiKey];
      return productId ? { kind: "product", productId, mode: KeyMode.LIVE } : { kind: "unknown" };
    },
    ttlMs: 60_000,
  });
  cache.setTrusted(true);
  await cache.resolve("sk_live_a");
  await cache.resolve("sk_live_b");
  calls.length = 0;
  return { cache, calls };
}

describe("the keys-rotated handler", () => {
  it("decodes ProductKeysRotated and evicts that product's keys only", async () => {
    const { cache, calls } = await warmCache();
    evictOnCredentialEvents(
      cache,
      logger,
    )({ subject: partnersEvents.productKeysRotated.subject, data: rotated("prd_a") });
    await cache.resolve("sk_live_a");
    await cache.resolve("sk_live_b");
    expect(calls).toEqual(["sk_live_a"]);
  });

  it("evicts everything when the message cannot be decoded", async () => {
    const { cache, calls } = await warmCache();
    evictOnCredentialEvents(
      cache,
      logger,
    )({
      subject: partnersEvents.productKeysRotated.subject,
      data: new Uint8Array([0xff, 0xff, 0xff]),
    });
    await cache.resolve("sk_live_a");
    await cache.resolve("sk_live_b");
    expect(calls).toEqual(["sk_live_a", "sk_live_b"]);
  });
});

describe("affiliate token evictions", () => {
  it("tokens_revoked and status_changed evict the partnership's tokens; other subjects nothing", async () => {
    const calls: string[] = [];
    const owners: Record<string, string> = { apt_a: "ptn_a", apt_b: "ptn_b" };
    const cache = new KeyCache({
      resolve: async (token) => {
        calls.push(token);
        const partnershipId = owners[token] ?? "";
        return { kind: "affiliate", productId: "prd_a", partnershipId, expiresAt: new Date(Date.now() + 60_000) };
      },
      ttlMs: 60_000,
    });
    cache.setTrusted(true);
    const warm = async () => {
      await cache.resolve("apt_a");
      await cache.resolve("apt_b");
    };
    await warm();
    const handle = evictOnCredentialEvents(cache, logger);
    const { partnershipTokensRevoked, partnershipStatusChanged, partnershipCreated } = partnersEvents;
    handle({
      subject: partnershipCreated.subject,
      data: toBinary(
        partnershipCreated.schema,
        create(partnershipCreated.schema, { id: "msg_0", partnership: { id: "ptn_a" } }),
      ),
    });
    await warm();
    expect(calls).toEqual(["apt_a", "apt_b"]);
    handle({
      subject: partnershipTokensRevoked.subject,
      data: toBinary(
        partnershipTokensRevoked.schema,
        create(partnershipTokensRevoked.schema, { id: "msg_1", productId: "prd_a", partnershipId: "ptn_a" }),
      ),
    });
    await warm();
    expect(calls).toEqual(["apt_a", "apt_b", "apt_a"]);
    handle({
      subject: partnershipStatusChanged.subject,
      data: toBinary(
        partnershipStatusChanged.schema,
        create(partnershipStatusChanged.schema, { id: "msg_2", partnership: { id: "ptn_b", productId: "prd_a" } }),
      ),
    });
    await warm();
    expect(calls).toEqual(["apt_a", "apt_b", "apt_a", "apt_b"]);
  });
});

/** A NATS connection stand-in whose status events the test pushes. */
function fakeConnection() {
  const pending: Status[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const connection = {
    jetstream: () => ({}),
    // The feed's heartbeat asks this before it pings the stream (follow-while-connected.ts).
    isClosed: () => closed,
    status: () => ({
      async *[Symbol.asyncIterator]() {
        while (!closed) {
          const next = pending.shift();
          if (next) yield next;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    }),
    close: async () => {
      closed = true;
      wake?.();
    },
  };
  return {
    connection: connection as unknown as NatsConnection,
    get closed() {
      return closed;
    },
    emit(type: Events) {
      pending.push({ type, data: "" });
      wake?.();
    },
  };
}

/**
 * A follow stand-in that fails `failures` times (no stream yet), then follows until stopped, or
 * until the test ends it as a consumer that stops by itself would (`endCurrent`).
 */
function fakeFollow(failures: number) {
  const state = { attempts: 0, active: 0, stopped: 0 };
  let endCurrent = () => {};
  const follow: typeof followEvents = async () => {
    state.attempts++;
    if (state.attempts <= failures) throw new Error("stream not found");
    state.active++;
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    endCurrent = () => {
      state.active--;
      end();
    };
    return {
      stop: async () => {
        state.active--;
        state.stopped++;
        end();
      },
      ended,
    };
  };
  return { follow, state, endCurrent: () => endCurrent() };
}

describe("startKeyEvictions", () => {
  it("trusts the cache only once it follows, retrying until the stream exists", async () => {
    const nats = fakeConnection();
    const { follow, state } = fakeFollow(3);
    const cache = new KeyCache({ resolve: async () => ({ kind: "unknown" }), ttlMs: 60_000 });
    const evictions = startKeyEvictions({
      connect: async () => nats.connection,
      namespace: "",
      cache,
      logger,
      retryMs: 20,
      follow,
    });
    expect(cache.trusted).toBe(false);
    await waitFor(() => cache.trusted);
    expect(state.attempts).toBe(4);
    expect(state.active).toBe(1);
    await evictions.stop();
  });

  it("retries the connection when NATS cannot be reached at start", async () => {
    const nats = fakeConnection();
    const { follow } = fakeFollow(0);
    let connects = 0;
    const cache = new KeyCache({ resolve: async () => ({ kind: "unknown" }), ttlMs: 60_000 });
    const evictions = startKeyEvictions({
      connect: async () => {
        connects++;
        if (connects < 3) throw new Error("connection refused");
        return nats.connection;
      },
      namespace: "",
      cache,
      logger,
      retryMs: 20,
      follow,
    });
    await waitFor(() => cache.trusted);
    expect(connects).toBe(3);
    await evictions.stop();
  });

  it("distrusts the cache on disconnect and follows afresh on reconnect", async () => {
    const nats = fakeConnection();
    const { follow, state } = fakeFollow(0);
    const { cache, calls } = await warmCache();
    cache.setTrusted(false);
    const evictions = startKeyEvictions({
      connect: async () => nats.connection,
      namespace: "",
      cache,
      logger,
      retryMs: 20,
      follow,
    });
    await waitFor(() => cache.trusted);
    await cache.resolve("sk_live_a");
    await cache.resolve("sk_live_a");
    expect(calls).toEqual(["sk_live_a"]);

    nats.emit(Events.Disconnect);
    await waitFor(() => !cache.trusted);
    expect(state.stopped).toBe(1);
    await cache.resolve("sk_live_a");
    expect(calls).toEqual(["sk_live_a", "sk_live_a"]);

    nats.emit(Events.Reconnect);
    await waitFor(() => cache.trusted);
    expect(state.attempts).toBe(2);
    expect(state.active).toBe(1);

    await evictions.stop();
    expect(cache.trusted).toBe(false);
    expect(state.active).toBe(0);
    expect(nats.closed).toBe(true);
  });
});

describe("startKeyEvictions when the follow ends by itself", () => {
  it("distrusts the cache at once and trusts it again once it follows afresh", async () => {
    const nats = fakeConnection();
    const { follow, state, endCurrent } = fakeFollow(0);
    const trust: boolean[] = [];
    const cache = new KeyCache({ resolve: async () => ({ kind: "unknown" }), ttlMs: 60_000 });
    const setTrusted = cache.setTrusted.bind(cache);
    cache.setTrusted = (trusted: boolean) => {
      trust.push(trusted);
      setTrusted(trusted);
    };
    const evictions = startKeyEvictions({
      connect: async () => nats.connection,
      namespace: "",
      cache,
      logger,
      retryMs: 20,
      follow,
    });
    await waitFor(() => cache.trusted);

    const before = trust.length;
    endCurrent();

    await waitFor(() => state.attempts === 2 && cache.trusted);
    // Distrusted as soon as the follow ended, trusted again only with a new follow.
    const since = trust.slice(before);
    expect(since[0]).toBe(false);
    expect(since.at(-1)).toBe(true);
    expect(since.filter((trusted) => trusted)).toHaveLength(1);
    expect(state.active).toBe(1);
    await evictions.stop();
    expect(state.active).toBe(0);
  });
});

describe("key evictions over the real NATS", () => {
  const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
  const testNamespace = createTestNamespace(natsUrl);
  const { namespace } = testNamespace;
  let publisher: NatsConnection;

  beforeAll(async () => {
    publisher = await connectNats(natsUrl, "gateway-test-publisher");
  });

  afterAll(async () => {
    await publisher?.close();
    await testNamespace.cleanup();
  });

  it("waits for partners' stream, then answers 401 to an old key within 1 s of the rotation event", async () => {
    const gateway = createGateway({ trusted: false });
    const { call, fake, product, keyCache } = gateway;
    const evictions = startKeyEvictions({
      connect: () => connectNats(natsUrl, "gateway-test"),
      namespace,
      cache: keyCache,
      logger,
      retryMs: 100,
    });
    try {
      // Partners has not created its stream yet: every request asks partners.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(keyCache.trusted).toBe(false);
      await call("GET", "/api/v1/program");
      await call("GET", "/api/v1/program");
      expect(fake.callsOf("authenticate")).toBe(2);

      await ensureStream(await publisher.jetstreamManager(), { service: "partners", namespace });
      await waitFor(() => keyCache.trusted);

      expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
      expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
      expect(fake.callsOf("authenticate")).toBe(3);

      fake.rotateKeys(product.productId);
      const event = create(ProductKeysRotatedSchema, { id: "msg_rotation", productId: product.productId });
      await publisher
        .jetstream()
        .publish(
          wireSubject(namespace, partnersEvents.productKeysRotated.subject),
          toBinary(ProductKeysRotatedSchema, event),
        );
      // The contract's bound: old keys get 401 from every replica within 1 s of the rotation.
      await waitFor(async () => (await call("GET", "/api/v1/program")).statusCode === 401, 1000);
      const old = await call("GET", "/api/v1/program");
      expect(old.json()).toEqual({ error: "Invalid or revoked API key" });
    } finally {
      await evictions.stop();
    }
  });
});
