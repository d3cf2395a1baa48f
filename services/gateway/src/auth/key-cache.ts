import { createHash } from "node:crypto";
import { asRead } from "@affiliate/platform";
import type { KeyMode, PartnersService } from "@affiliate/proto/partners";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";

/**
 * What partners said about a credential: an API key's product and mode, an affiliate token's
 * partnership (and when it expires), or that it is unknown.
 */
export type KeyResolution =
  | { kind: "product"; productId: string; mode: KeyMode }
  | { kind: "affiliate"; productId: string; partnershipId: string; expiresAt: Date }
  | { kind: "unknown" };

/** Asks the owner of the credentials. Throws on anything but an answer (unreachable, deadline). */
export type ResolveKey = (credential: string) => Promise<KeyResolution>;

/** Affiliate tokens start so (contract section 14); anything else is resolved as an API key. */
export const affiliateTokenPrefix = "apt_";

export interface KeyCacheOptions {
  resolve: ResolveKey;
  /** How long a resolved key is reused; 0 disables positive caching. */
  ttlMs: number;
  /** How long an unknown key is remembered, so a flood of bad keys reaches partners once. */
  negativeTtlMs?: number;
  max?: number;
}

/**
 * What the gateway keys a credential's cache entry and rate limit by (sha256, base64url): raw
 * credentials never sit in memory longer than the request that carried them.
 */
export function credentialFingerprint(credential: string): string {
  return createHash("sha256").update(credential).digest("base64url");
}

/**
 * Resolved credentials (API keys and affiliate tokens), keyed by their sha256. A positive entry
 * is only as good as the eviction feed: entries are served only while `trusted` (the gateway is
 * following partners' key rotations, token revocations and status changes), and any eviction or
 * change of trust invalidates resolutions still in flight, so an answer that partners gave before
 * a revocation is never stored after it. A token's entry never outlives the token.
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

  /** Forgets every API key of the product (its affiliate tokens stay); returns how many entries were dropped. */
  evictProduct(productId: string): number {
    return this.#evictWhere((entry) => entry.kind === "product" && entry.productId === productId);
  }

  /** Forgets every affiliate token of the partnership; returns how many entries were dropped. */
  evictPartnership(partnershipId: string): number {
    return this.#evictWhere((entry) => entry.kind === "affiliate" && entry.partnershipId === partnershipId);
  }

  #evictWhere(doomed: (entry: KeyResolution) => boolean): number {
    this.#invalidate();
    const hashes: string[] = [];
    for (const [hash, entry] of this.#entries.entries()) if (doomed(entry)) hashes.push(hash);
    for (const hash of hashes) this.#entries.delete(hash);
    return hashes.length;
  }

  /** Forgets everything; for a rotation whose product is not known. */
  evictAll(): void {
    this.#invalidate();
    this.#entries.clear();
  }

  async resolve(apiKey: string): Promise<KeyResolution> {
    const hash = credentialFingerprint(apiKey);
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
      return;
    }
    // A token is forgotten when it expires, whatever the cache's own lifetime.
    const ttl =
      resolution.kind === "affiliate"
        ? Math.min(this.#ttlMs, resolution.expiresAt.getTime() - Date.now())
        : this.#ttlMs;
    if (this.#trusted && ttl > 0) this.#entries.set(hash, resolution, { ttl });
  }

  #invalidate(): void {
    this.#generation++;
    this.#inflight.clear();
  }
}

/** Console sessions through partners: the product of a live session, or undefined. A read. */
export function consoleSessionsWith(
  partners: Client<typeof PartnersService>,
): (token: string) => Promise<{ productId: string } | undefined> {
  return async (token) => {
    try {
      const { productId } = await asRead(partners.authenticateConsoleSession({ token }));
      return { productId };
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unauthenticated) return undefined;
      throw error;
    }
  };
}

/**
 * Resolution through partners: Authenticate for an API key, AuthenticateAffiliateToken for an
 * affiliate token; UNAUTHENTICATED means the credential is unknown. A read: a lost call is
 * UNAVAILABLE (503), never an unknown outcome of the request it guards.
 */
export function authenticateWith(partners: Client<typeof PartnersService>): ResolveKey {
  return async (credential) => {
    try {
      if (credential.startsWith(affiliateTokenPrefix)) {
        const token = await asRead(partners.authenticateAffiliateToken({ token: credential }));
        if (!token.expiresAt) return { kind: "unknown" };
        const { productId, partnershipId } = token;
        return { kind: "affiliate", productId, partnershipId, expiresAt: timestampDate(token.expiresAt) };
      }
      const { productId, mode } = await asRead(partners.authenticate({ apiKey: credential }));
      return { kind: "product", productId, mode };
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unauthenticated) return { kind: "unknown" };
      throw error;
    }
  };
}
