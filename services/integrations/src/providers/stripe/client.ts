import Stripe from "stripe";

/**
 * Stripe's own client with a connection's API key, at `apiBase` (Stripe's API, or a local fake in
 * tests), retrying a failed request twice within `timeoutMs` each.
 */
export function stripeClient(options: { apiBase: string; apiKey: string; timeoutMs: number }): Stripe {
  const base = new URL(options.apiBase);
  return new Stripe(options.apiKey, {
    host: base.hostname,
    port: base.port || (base.protocol === "https:" ? 443 : 80),
    protocol: base.protocol === "https:" ? "https" : "http",
    timeout: options.timeoutMs,
    maxNetworkRetries: 2,
  });
}
