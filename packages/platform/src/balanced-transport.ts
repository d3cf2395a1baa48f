import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { type ContextValues, createContextValues, type Transport } from "@connectrpc/connect";

/** A transport to one address, and how to let go of its connection. */
export interface Endpoint {
  transport: Transport;
  close(): void;
}

export interface BalancedTransportOptions {
  /** Makes the transport to one address: a base URL with its host replaced by the address. */
  connect(baseUrl: string): Endpoint;
  /** Every address a host name has now; `dns.lookup(host, { all: true })` by default. */
  resolve?: (host: string) => Promise<string[]>;
  /**
   * How often names are resolved again. Kubernetes' DNS answers a headless Service with its
   * ready pods and keeps the answer 5 s by default: a new replica takes calls within seconds,
   * and one that stops being ready stops receiving new ones.
   */
  refreshMs?: number;
  /** How long a connection to an address that left the answer is kept for calls still in flight. */
  drainMs?: number;
  /**
   * Whether a failed unary call was never processed by the address it went to (refused stream,
   * GOAWAY, connection refused), so that sending it once more, elsewhere, is safe. Such a call is
   * sent once more, to another address when there is one, and the address that refused it is
   * passed over for `restMs`. Without it no call is sent twice.
   */
  notProcessed?: (error: unknown) => boolean;
  /** How long an address that refused a call is passed over while others remain. */
  restMs?: number;
}

export interface BalancedTransport extends Transport {
  /** The base URLs calls are spread over now, one per address (for tests and diagnostics). */
  addresses(): string[];
  /** Resolves the names again at once. */
  refresh(): Promise<void>;
  /** Stops re-resolving and closes every connection. */
  close(): void;
}

const defaultResolve = async (host: string) => (await lookup(host, { all: true })).map((entry) => entry.address);

/** One entry of the comma-separated list a balanced transport is given. */
interface Target {
  baseUrl: string;
  host: string;
  /** An IP address or localhost: used as given, there is nothing to resolve. */
  literal: boolean;
}

/** `baseUrl` without a trailing slash, its host replaced by `address` when one is given. */
function urlFor(baseUrl: string, address?: string): string {
  const target = new URL(baseUrl);
  if (address !== undefined) target.hostname = isIP(address) === 6 ? `[${address}]` : address;
  return target.toString().replace(/\/$/, "");
}

function parseTargets(baseUrls: string): Target[] {
  return baseUrls
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((baseUrl) => {
      const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, "");
      return { baseUrl, host, literal: isIP(host) !== 0 || host === "localhost" };
    });
}

/**
 * Per-call balancing for Connect over HTTP/2. A caller keeps one multiplexed connection per
 * server, so a Service that balances connections (a ClusterIP) sends every call of a caller to
 * the same replica. Here the service's address is one URL whose name resolves to every replica
 * (a headless Service: one address per ready pod), or a comma-separated list of URLs (replicas
 * at fixed addresses, or several names). One connection is kept per address, and calls go
 * round-robin over them. Names are resolved again every `refreshMs`; a failed or empty
 * resolution keeps the name's last good answer.
 *
 * A replica that goes away (a rolling restart, a scale-down) refuses the calls that reach it
 * after it began to drain. Such a call was never processed: it is sent once more to another
 * replica (see `notProcessed`), and the refusing address rests a moment, so a restart costs the
 * callers nothing, even before DNS stops naming the replica.
 */
export function balancedTransport(baseUrls: string, options: BalancedTransportOptions): BalancedTransport {
  const targets = parseTargets(baseUrls);
  if (targets.length === 0) throw new Error(`no service address in "${baseUrls}"`);
  const resolve = options.resolve ?? defaultResolve;
  const refreshMs = options.refreshMs ?? 5000;
  const drainMs = options.drainMs ?? 30_000;
  const restMs = options.restMs ?? 2000;
  const notProcessed = options.notProcessed ?? (() => false);

  const endpoints = new Map<string, Endpoint>();
  let order: string[] = [];
  let next = 0;
  /** Addresses that refused a call, and until when they are passed over. */
  const resting = new Map<string, number>();
  /** Each name's last good answer, as base URLs. */
  const answers = new Map<Target, string[]>();
  const named = targets.filter((target) => !target.literal);
  const literalUrls = targets.filter((target) => target.literal).map((target) => urlFor(target.baseUrl));
  // Until a name's first resolution succeeds, the name as given (node's own lookup reports failures).
  const unresolved = () => named.filter((target) => !answers.has(target)).map((target) => urlFor(target.baseUrl));
  let closed = false;

  const update = () => {
    if (closed) return;
    const wanted = [...new Set([...literalUrls, ...[...answers.values()].flat(), ...unresolved()])].sort();
    for (const url of wanted) {
      if (!endpoints.has(url)) endpoints.set(url, options.connect(url));
    }
    for (const [url, endpoint] of endpoints) {
      if (wanted.includes(url)) continue;
      endpoints.delete(url);
      resting.delete(url);
      setTimeout(() => endpoint.close(), drainMs).unref();
    }
    order = wanted;
  };

  const refresh = async () => {
    await Promise.all(
      named.map(async (target) => {
        try {
          const addresses = await resolve(target.host);
          if (addresses.length > 0)
            answers.set(
              target,
              addresses.map((address) => urlFor(target.baseUrl, address)),
            );
        } catch {
          // Keep the last good answer: a DNS hiccup must not take the service away.
        }
      }),
    );
    update();
  };

  let firstResolution: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (named.length === 0) update();
  else {
    timer = setInterval(() => void refresh(), refreshMs);
    timer.unref();
  }

  /** The next address round-robin, passing over `avoid` and resting ones while another is left. */
  const pick = async (avoid?: string): Promise<string> => {
    if (named.length > 0) {
      firstResolution ??= refresh();
      if (answers.size === 0) await firstResolution;
    }
    // Every call passes here: the usual case (nothing resting, nothing to avoid) allocates nothing.
    if (avoid === undefined && resting.size === 0) return order[next++ % order.length] as string;
    const now = Date.now();
    for (const [url, until] of resting) if (until <= now) resting.delete(url);
    const others = order.filter((url) => url !== avoid);
    const pool = others.length > 0 ? others : order;
    const awake = pool.filter((url) => !resting.has(url));
    // When every address rests, one of them anyway: a fresh connection may well serve.
    const from = awake.length > 0 ? awake : pool;
    return from[next++ % from.length] as string;
  };

  const endpointAt = (url: string): Endpoint => {
    let endpoint = endpoints.get(url);
    if (!endpoint) {
      endpoint = options.connect(url);
      endpoints.set(url, endpoint);
    }
    return endpoint;
  };

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      // One set of context values for both attempts: the second keeps the first's deadline.
      const values: ContextValues = contextValues ?? createContextValues();
      const first = await pick();
      try {
        return await endpointAt(first).transport.unary(method, signal, timeoutMs, header, input, values);
      } catch (error) {
        if (signal?.aborted || !notProcessed(error)) throw error;
        resting.set(first, Date.now() + restMs);
        const second = await pick(first);
        try {
          return await endpointAt(second).transport.unary(method, signal, timeoutMs, header, input, values);
        } catch (retryError) {
          if (notProcessed(retryError)) resting.set(second, Date.now() + restMs);
          throw retryError;
        }
      }
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      // A stream's input can be read once: it is never sent twice.
      return endpointAt(await pick()).transport.stream(method, signal, timeoutMs, header, input, contextValues);
    },
    addresses: () => [...order],
    refresh,
    close() {
      closed = true;
      clearInterval(timer);
      for (const endpoint of endpoints.values()) endpoint.close();
      endpoints.clear();
      order = [];
    },
  };
}
