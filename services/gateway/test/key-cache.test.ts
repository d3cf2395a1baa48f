import { KeyMode } from "@affiliate/proto/partners";
import { describe, expect, it } from "vitest";
import { credentialFingerprint, KeyCache, type KeyResolution } from "../src/auth/key-cache.js";

/** A resolver over a fixed table of keys that counts its calls and can be held open. */
function resolver(table: Record<string, { productId: string; mode?: KeyMode }>) {
  const calls: string[] = [];
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  return {
    calls,
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release() {
      open?.();
      gate = undefined;
    },
    resolve: async (apiKey: string): Promise<KeyResolution> => {
      calls.push(apiKey);
      await gate;
      const owner = table[apiKey];
      return owner
        ? { kind: "product", productId: owner.productId, mode: owner.mode ?? KeyMode.LIVE }
        : { kind: "unknown" };
    },
  };
}

const table = {
  sk_live_a1: { productId: "prd_a" },
  sk_test_a1: { productId: "prd_a", mode: KeyMode.TEST },
  sk_live_b1: { productId: "prd_b" },
};

describe("KeyCache", () => {
  it("keys entries by the sha256 of the key, never the key itself", () => {
    expect(credentialFingerprint("sk_live_a1")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(credentialFingerprint("sk_live_a1")).not.toContain("sk_live");
    expect(credentialFingerprint("sk_live_a1")).toBe(credentialFingerprint("sk_live_a1"));
    expect(credentialFingerprint("sk_live_a1")).not.toBe(credentialFingerprint("sk_live_a2"));
  });

  it("serves a resolved key from memory while trusted", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000 });
    cache.setTrusted(true);
    expect(await cache.resolve("sk_live_a1")).toEqual({ kind: "product", productId: "prd_a", mode: KeyMode.LIVE });
    expect(await cache.resolve("sk_live_a1")).toEqual({ kind: "product", productId: "prd_a", mode: KeyMode.LIVE });
    expect(source.calls).toEqual(["sk_live_a1"]);
  });

  it("evicts every key of a rotated product and only those", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000 });
    cache.setTrusted(true);
    for (const key of ["sk_live_a1", "sk_test_a1", "sk_live_b1"]) await cache.resolve(key);
    expect(cache.evictProduct("prd_a")).toBe(2);
    for (const key of ["sk_live_a1", "sk_test_a1", "sk_live_b1"]) await cache.resolve(key);
    expect(source.calls).toEqual(["sk_live_a1", "sk_test_a1", "sk_live_b1", "sk_live_a1", "sk_test_a1"]);
  });

  it("does not store an answer that was in flight when the product's keys were evicted", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000 });
    cache.setTrusted(true);
    source.hold();
    const inFlight = cache.resolve("sk_live_a1");
    cache.evictProduct("prd_a");
    source.release();
    await inFlight;
    await cache.resolve("sk_live_a1");
    expect(source.calls).toEqual(["sk_live_a1", "sk_live_a1"]);
  });

  it("does not let a request after an eviction join a call started before it", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000 });
    cache.setTrusted(true);
    source.hold();
    const before = cache.resolve("sk_live_a1");
    const joined = cache.resolve("sk_live_a1");
    expect(source.calls).toHaveLength(1);
    cache.evictProduct("prd_a");
    const after = cache.resolve("sk_live_a1");
    source.release();
    await Promise.all([before, joined, after]);
    expect(source.calls).toHaveLength(2);
  });

  it("neither serves nor stores positive answers while untrusted, and forgets them when trust changes", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000 });
    await cache.resolve("sk_live_a1");
    await cache.resolve("sk_live_a1");
    expect(source.calls).toHaveLength(2);

    cache.setTrusted(true);
    await cache.resolve("sk_live_a1");
    cache.setTrusted(false);
    cache.setTrusted(true);
    await cache.resolve("sk_live_a1");
    expect(source.calls).toHaveLength(4);
  });

  it("remembers unknown keys for the negative TTL only, trusted or not", async () => {
    const source = resolver(table);
    const cache = new KeyCache({ resolve: source.resolve, ttlMs: 60_000, negativeTtlMs: 50 });
    expect(await cache.resolve("sk_live_zz")).toEqual({ kind: "unknown" });
    expect(await cache.resolve("sk_live_zz")).toEqual({ kind: "unknown" });
    expect(source.calls).toEqual(["sk_live_zz"]);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await cache.resolve("sk_live_zz");
    expect(source.calls).toEqual(["sk_live_zz", "sk_live_zz"]);
  });

  it("lets positive entries expire after the TTL, and keeps none with a TTL of 0", async () => {
    const source = resolver(table);
    const short = new KeyCache({ resolve: source.resolve, ttlMs: 50 });
    short.setTrusted(true);
    await short.resolve("sk_live_a1");
    await short.resolve("sk_live_a1");
    expect(source.calls).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await short.resolve("sk_live_a1");
    expect(source.calls).toHaveLength(2);

    const none = new KeyCache({ resolve: source.resolve, ttlMs: 0 });
    none.setTrusted(true);
    await none.resolve("sk_live_b1");
    await none.resolve("sk_live_b1");
    expect(source.calls).toHaveLength(4);
  });

  it("keeps an affiliate token no longer than the token lives, and evicts a partnership's tokens only", async () => {
    const calls: string[] = [];
    const expiresAt = new Map([
      ["apt_short", new Date(Date.now() + 50)],
      ["apt_long", new Date(Date.now() + 3_600_000)],
      ["apt_other", new Date(Date.now() + 3_600_000)],
    ]);
    const cache = new KeyCache({
      resolve: async (token): Promise<KeyResolution> => {
        calls.push(token);
        if (token.startsWith("sk_")) return { kind: "product", productId: "prd_a", mode: KeyMode.LIVE };
        const partnershipId = token === "apt_other" ? "ptn_b" : "ptn_a";
        return { kind: "affiliate", productId: "prd_a", partnershipId, expiresAt: expiresAt.get(token) ?? new Date() };
      },
      ttlMs: 60_000,
    });
    cache.setTrusted(true);
    for (const token of ["apt_short", "apt_long", "apt_other", "sk_live_a1"]) await cache.resolve(token);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await cache.resolve("apt_short"); // expired: asked again
    await cache.resolve("apt_long"); // still cached
    expect(calls).toEqual(["apt_short", "apt_long", "apt_other", "sk_live_a1", "apt_short"]);

    // A revocation of ptn_a's tokens leaves ptn_b's tokens and the product's API keys alone.
    expect(cache.evictPartnership("ptn_a")).toBe(1);
    for (const token of ["apt_long", "apt_other", "sk_live_a1"]) await cache.resolve(token);
    expect(calls.slice(5)).toEqual(["apt_long"]);
    // And a key rotation leaves the tokens alone.
    expect(cache.evictProduct("prd_a")).toBe(1);
  });

  it("caches nothing when resolution fails", async () => {
    let failing = true;
    const calls: string[] = [];
    const cache = new KeyCache({
      resolve: async (apiKey) => {
        calls.push(apiKey);
        if (failing) throw new Error("partners unreachable");
        return { kind: "product", productId: "prd_a", mode: KeyMode.LIVE };
      },
      ttlMs: 60_000,
    });
    cache.setTrusted(true);
    await expect(cache.resolve("sk_live_a1")).rejects.toThrow("partners unreachable");
    failing = false;
    await cache.resolve("sk_live_a1");
    await cache.resolve("sk_live_a1");
    expect(calls).toHaveLength(2);
  });
});
