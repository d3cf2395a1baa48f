import { isIP } from "node:net";
import { baseConfigShape, loadConfig, port, secret, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

const perMinute = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

/** proxy-addr's names for the private ranges, which Fastify's trustProxy takes as they are. */
const namedRanges = new Set(["loopback", "linklocal", "uniquelocal"]);

/** An address, an address/prefix range, or one of proxy-addr's named ranges. */
function isTrustableProxy(entry: string): boolean {
  if (namedRanges.has(entry)) return true;
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

const trustedProxies = z
  .string()
  .default("")
  .transform((value) =>
    value
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ""),
  )
  .refine((entries) => entries.every(isTrustableProxy), {
    message: "must be addresses or CIDR ranges (or loopback, linklocal, uniquelocal), comma-separated",
  });

export const gatewayConfigShape = {
  ...baseConfigShape,
  PORT: port(8080),
  HOST: z.string().min(1).default("127.0.0.1"),
  /** Prometheus metrics (GET /metrics), on HOST; never the public port. */
  METRICS_PORT: port(9080),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  LEDGER_URL: serviceUrls.default("http://127.0.0.1:7102"),
  PAYOUTS_URL: serviceUrls.default("http://127.0.0.1:7103"),
  NOTIFIER_URL: serviceUrls.default("http://127.0.0.1:7105"),
  PRIVACY_URL: serviceUrls.default("http://127.0.0.1:7104"),
  INTEGRATIONS_URL: serviceUrls.default("http://127.0.0.1:7106"),
  /**
   * The proxies in front of the gateway (an Ingress controller, a load balancer) whose
   * X-Forwarded-For it believes, so that the per-address budgets (sign-in, requests without a key)
   * count clients rather than the proxy: empty (the default) believes none, and the address is the
   * connection's; otherwise addresses or CIDR ranges, comma-separated (the controller's pods, for
   * instance `uniquelocal` for the private ranges). "Any proxy" is not offered: every client could
   * then pick its own address, and its own budget.
   */
  TRUST_PROXY: trustedProxies,
  /** Requests per minute per API key (or per IP when no key is sent) on /api/v1. */
  RATE_LIMIT_PER_MINUTE: perMinute(6000),
  /**
   * Events per minute per key (or per IP when no key is sent) on the tracking endpoints: a
   * request to POST /events is one, a batch as many as it holds.
   */
  TRACKING_RATE_LIMIT_PER_MINUTE: perMinute(60_000),
  /**
   * Clicks per minute per client address on the routes that record clicks without a secret key
   * (GET /r/:code, POST /events/click): a burst from one address is cut there, never a product's
   * or a key's traffic as a whole.
   */
  CLICK_RATE_LIMIT_PER_MINUTE: perMinute(120),
  /**
   * Keys the hash of a visitor's address that the gateway records with the clicks it takes itself
   * (never the address). Equal on every replica, so one address hashes the same everywhere.
   */
  CLICK_ADDRESS_HASH_KEY: secret("local-development-click-address-hash-key"),
  /**
   * How long a single POST /events waits for concurrent ones to share one TrackBatch call with;
   * 0 sends each as its own Track call.
   */
  TRACK_COALESCE_MS: z.coerce.number().min(0).max(50).default(2),
  /** A coalesced batch is sent at once when it holds this many events. */
  TRACK_COALESCE_MAX_EVENTS: z.coerce.number().int().min(1).max(500).default(100),
  /** How long a resolved key is trusted without asking partners again. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  /** How long a product's active-affiliates count (GET /api/v1/stats) is reused; 0 asks every time. */
  ACTIVE_AFFILIATES_CACHE_MS: z.coerce.number().int().min(0).default(5000),
};

export type GatewayConfig = Readonly<z.infer<z.ZodObject<typeof gatewayConfigShape>>>;

/** Parses the environment once; a bad value stops the process with one line naming it. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return loadConfig(gatewayConfigShape, env);
}
