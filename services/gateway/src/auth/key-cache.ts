import { createHash } from "node:crypto";
import { asRead } from "@affiliate/platform";
import type { KeyMode, PartnersService } from "@affiliate/proto/partners";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";

/** What partners said about a key: the product and mode it belongs to, or that it is unknown. */
export type KeyResolution = { kind: "product"; productId: string; mode: KeyMode } | { kind: "unknown" };

/** Asks the owner of the keys. Throws on anything but an answer (unreachable, deadline). */
export type ResolveKey = (apiKey: string) => Promise<KeyResolution>;

export interface KeyCacheOptions {
  resolve: ResolveKey;
  /** How long a resolved key is reused; 0 disables positive caching. */
  ttlMs: number;
  /** How long an unknown key is remembered, so a flood of bad keys reaches partners once. */
  negativeTtlMs?: number;
  max?: number;
}

/** The cache key: raw keys never sit in memory longer than the request that carried them. */
export function hashKey(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("base64url");
}

/**
 * Resolved API keys, keyed by their sha256. A positive entry is only as good as the eviction
 * feed: entries are served only while `trusted` (the gateway is following key rotations), and
 * any eviction or change of trust invalidates resolutions still in flight, so an answer that
 * partners gave before a rotation is never stored after it.
 */
export class KeyCache {
  readonly #entries: LRUCache<string, KeyResolution>;
  readonly #inflight = new Map<string, Promise<KeyResolution>>();
  readonly #resolve: ResolveKey;
  readonly #ttlMs: number;
  readonly #negativeTtlMs: number;
  #generation = 0;
  #trusted = false;

  constructor(options: KeyCacheOptions) {
    this.#resolve = options.resolve;
    this.#ttlMs = options.ttlMs;
    this.#negativeTtlMs = options.negativeTtlMs ?? 2000;
    this.#entries = new LRUCache({ max: options.max ?? 10_000 });
  }

  /** Whether positive entries may be served: true only while key rotations are being followed. */
  get trusted(): boolean {
    return this.#trusted;
  }

  /** Number of entries held (positive and negative). */
  get size(): number {
    return this.#entries.size;
  }

  /** Starting or stopping to follow rotations: either way, what was cached before is suspect. */
  setTrusted(trusted: boolean): void {
    this.#trusted = trusted;
    this.#invalidate();
    this.#entries.clear();
  }

  /** Forgets every key of the product; returns how many entries were dropped. */
  evictProduct(productId: string): number {
    this.#invalidate();
    const doomed: string[] = [];
    for (const [hash, entry] of this.#entries.entries()) {
      if (entry.kind === "product" && entry.productId === productId) doomed.push(hash);
    }
    for (const hash of doomed) this.#entries.delete(hash);
    return doomed.length;
  }

  /** Forgets everything; for a rotation whose product is not known. */
  evictAll(): void {
    this.#invalidate();
    this.#entries.clear();
  }

  async resolve(apiKey: string): Promise<KeyResolution> {
    const hash = hashKey(apiKey);
    const cached = this.#entries.get(hash);
    if (cached && (cached.kind === "unknown" || this.#trusted)) return cached;

    // Concurrent requests with the same key share one call to partners.
    const pending = this.#inflight.get(hash);
    if (pending) return pending;
    const generation = this.#generation;
    const call = this.#resolve(apiKey)
      .then((resolution) => {
        if (generation === this.#generation) this.#remember(hash, resolution);
        return resolution;
      })
      .finally(() => {
        if (this.#inflight.get(hash) === call) this.#inflight.delete(hash);
      });
    this.#inflight.set(hash, call);
    return call;
  }

  #remember(hash: string, resolution: KeyResolution): void {
    if (resolution.kind === "unknown") {
      this.#entries.set(hash, resolution, { ttl: this.#negativeTtlMs });
    } else if (this.#trusted && this.#ttlMs > 0) {
      this.#entries.set(hash, resolution, { ttl: this.#ttlMs });
    }
  }

  #invalidate(): void {
    this.#generation++;
    this.#inflight.clear();
  }
}

/**
 * Resolution through partners' Authenticate RPC: UNAUTHENTICATED means the key is unknown. A
 * read: a lost call is UNAVAILABLE (503), never an unknown outcome of the request it guards.
 */
export function authenticateWith(partners: Client<typeof PartnersService>): ResolveKey {
  return async (apiKey) => {
    try {
      const { productId, mode } = await asRead(partners.authenticate({ apiKey }));
      return { kind: "product", productId, mode };
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unauthenticated) return { kind: "unknown" };
      throw error;
    }
  };
}
