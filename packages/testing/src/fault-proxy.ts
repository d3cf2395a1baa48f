import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP proxy a test puts between a service and what it talks to (Postgres, NATS, another
 * service) to inject faults there, instead of stopping the machine's shared servers.
 */
export interface FaultProxy {
  /** The port the proxy listens on (127.0.0.1). */
  port: number;
  /** `url` with its host and port replaced by the proxy's: give this to the service. */
  url(url: string): string;
  /** Resets every open connection and refuses new ones (the port stops listening) until restore(). */
  cut(): Promise<void>;
  /** Undoes cut(), stall() and delay(): connections are accepted and forwarded again. */
  restore(): Promise<void>;
  /** Stops forwarding in both directions, keeping every socket open (a frozen peer). */
  stall(): void;
  /** Forwards each chunk `ms` later than it arrived, in order. */
  delay(ms: number): void;
  /** Resets every open connection once; new ones are accepted as usual. */
  reset(): void;
  /**
   * Resets every open connection and each new one as soon as it is accepted, until restore():
   * a server not up yet, whose attempts the test can count (`refused`).
   */
  refuse(): void;
  /** Connections refused by refuse() so far. */
  readonly refused: number;
  /** Number of connections open through the proxy. */
  readonly connections: number;
  close(): Promise<void>;
}

type Mode = "forward" | "stall" | "refuse";

interface Pair {
  client: Socket;
  upstream: Socket;
}

/** Starts a proxy to `target` ("host:port" or a URL such as postgres://…@127.0.0.1:5432/db). */
export async function createFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port: targetPort } = parseTarget(target);
  const pairs = new Set<Pair>();
  let mode: Mode = "forward";
  let delayMs = 0;

  const relay = (from: Socket, to: Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (delayMs === 0) to.write(chunk);
      else setTimeout(() => to.writable && to.write(chunk), delayMs);
    });
    from.on("end", () => to.end());
  };

  let refused = 0;
  const server = createServer((client) => {
    if (mode === "refuse") {
      refused += 1;
      client.on("error", () => undefined).resetAndDestroy();
      return;
    }
    const upstream = tcpConnect({ host: hostname, port: targetPort });
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      if (!client.destroyed) client.destroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    relay(client, upstream);
    relay(upstream, client);
    if (mode === "stall") pause(pair);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  let listening = true;

  const pause = ({ client, upstream }: Pair) => {
    client.pause();
    upstream.pause();
  };
  const resetAll = () => {
    for (const { client, upstream } of [...pairs]) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    pairs.clear();
  };

  return {
    port,
    url(url) {
      const parsed = new URL(url);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(port);
      return parsed.toString();
    },
    async cut() {
      resetAll();
      if (!listening) return;
      listening = false;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async restore() {
      if (!listening) {
        await listen(port);
        listening = true;
      }
      mode = "forward";
      delayMs = 0;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    stall() {
      mode = "stall";
      for (const pair of pairs) pause(pair);
    },
    delay(ms) {
      delayMs = ms;
    },
    reset: resetAll,
    refuse() {
      mode = "refuse";
      resetAll();
    },
    get refused() {
      return refused;
    },
    get connections() {
      return pairs.size;
    },
    async close() {
      resetAll();
      if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseTarget(target: string): { hostname: string; port: number } {
  if (target.includes("://")) {
    const url = new URL(target);
    return { hostname: url.hostname, port: Number(url.port) };
  }
  const [hostname = "127.0.0.1", port = "0"] = target.split(":");
  return { hostname, port: Number(port) };
}
