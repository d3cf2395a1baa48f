import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Transport } from "@connectrpc/connect";

/** A transport to one address, and how to let go of its connection. */
export interface Endpoint {
  transport: Transport;
  close(): void;
}

export interface BalancedTransportOptions {
  /** Makes the transport to one address: `baseUrl` with its host replaced by the address. */
  connect(baseUrl: string): Endpoint;
  /** Every address a host name has now; `dns.lookup(host, { all: true })` by default. */
  resolve?: (host: string) => Promise<string[]>;
  /**
   * How often the name is resolved again. Kubernetes' DNS answers a headless Service with its
   * ready pods and keeps the answer 5 s by default: a new replica takes calls within seconds,
   * and one that stops being ready stops receiving new ones.
   */
  refreshMs?: number;
  /** How long a connection to an address that left the answer is kept for calls still in flight. */
  drainMs?: number;
}

export interface BalancedTransport extends Transport {
  /** The addresses calls are spread over now (for tests and diagnostics). */
  addresses(): string[];
  /** Resolves the name again at once. */
  refresh(): Promise<void>;
  /** Stops re-resolving and closes every connection. */
  close(): void;
}

const defaultResolve = async (host: string) => (await lookup(host, { all: true })).map((entry) => entry.address);

/**
 * Per-call balancing for Connect over HTTP/2. A caller keeps one multiplexed connection per
 * server, so a Service that balances connections (a ClusterIP) sends every call of a caller to
 * the same replica. Here the service's name is resolved to all of its addresses (a headless
 * Service: one per ready pod), one connection is kept per address, and calls go round-robin over
 * them. The name is resolved again every `refreshMs`; a failed resolution keeps the last good
 * answer. An IP address or localhost is used as given: there is nothing to balance.
 */
export function balancedTransport(baseUrl: string, options: BalancedTransportOptions): BalancedTransport {
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const resolve = options.resolve ?? defaultResolve;
  const refreshMs = options.refreshMs ?? 5000;
  const drainMs = options.drainMs ?? 30_000;

  const endpoints = new Map<string, Endpoint>();
  let order: string[] = [];
  let next = 0;
  // Until the first resolution succeeds, the name as given (node's own lookup reports failures).
  let fallback: Endpoint | undefined;
  let closed = false;

  const urlFor = (address: string) => {
    const target = new URL(baseUrl);
    target.hostname = isIP(address) === 6 ? `[${address}]` : address;
    return target.toString().replace(/\/$/, "");
  };

  const update = (addresses: string[]) => {
    const wanted = [...new Set(addresses)].sort();
    if (wanted.length === 0 || closed) return;
    for (const address of wanted) {
      if (!endpoints.has(address)) endpoints.set(address, options.connect(urlFor(address)));
    }
    for (const [address, endpoint] of endpoints) {
      if (wanted.includes(address)) continue;
      endpoints.delete(address);
      setTimeout(() => endpoint.close(), drainMs).unref();
    }
    order = wanted;
  };

  const refresh = async () => {
    try {
      update(await resolve(host));
    } catch {
      // Keep the last good answer: a DNS hiccup must not take the service away.
    }
  };

  const literal = isIP(host) !== 0 || host === "localhost";
  let firstResolution: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (literal) {
    fallback = options.connect(baseUrl);
  } else {
    timer = setInterval(() => void refresh(), refreshMs);
    timer.unref();
  }

  const pick = async (): Promise<Transport> => {
    if (literal && fallback) return fallback.transport;
    firstResolution ??= refresh();
    if (order.length === 0) await firstResolution;
    const address = order.length > 0 ? order[next++ % order.length] : undefined;
    const endpoint = address === undefined ? undefined : endpoints.get(address);
    if (endpoint) return endpoint.transport;
    fallback ??= options.connect(baseUrl);
    return fallback.transport;
  };

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      return (await pick()).unary(method, signal, timeoutMs, header, input, contextValues);
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      return (await pick()).stream(method, signal, timeoutMs, header, input, contextValues);
    },
    addresses: () => [...order],
    refresh,
    close() {
      closed = true;
      clearInterval(timer);
      for (const endpoint of endpoints.values()) endpoint.close();
      endpoints.clear();
      order = [];
      fallback?.close();
    },
  };
}
