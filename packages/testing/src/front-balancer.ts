import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP balancer a test puts in front of several replicas of a public service, as a cloud load
 * balancer or kube-proxy stands in front of a Deployment's pods: each new connection goes to the
 * next replica round-robin, and a replica that refuses the connection (it has stopped listening
 * to drain, or is not up yet) is passed over for the next one. Connections already made stay
 * with their replica until one side closes them.
 */
export interface FrontBalancer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** How many connections each replica was given, by its target. */
  readonly accepted: Record<string, number>;
  close(): Promise<void>;
}

/** Starts a balancer over `targets` ("host:port" or URLs). */
export async function startFrontBalancer(targets: string[]): Promise<FrontBalancer> {
  const upstreams = targets.map((target) => {
    const url = new URL(target.includes("://") ? target : `tcp://${target}`);
    return { key: target, host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) };
  });
  if (upstreams.length === 0) throw new Error("a front balancer needs at least one target");
  const accepted: Record<string, number> = Object.fromEntries(targets.map((target) => [target, 0]));
  const open = new Set<Socket>();
  let next = 0;

  /** Connects to the next upstream that accepts, trying each once; undefined when none does. */
  const connectUpstream = async (): Promise<{ socket: Socket; key: string } | undefined> => {
    const start = next++;
    for (let i = 0; i < upstreams.length; i++) {
      const upstream = upstreams[(start + i) % upstreams.length];
      if (!upstream) continue;
      const socket = await new Promise<Socket | undefined>((resolve) => {
        const attempt = tcpConnect({ host: upstream.host, port: upstream.port });
        attempt.once("connect", () => resolve(attempt));
        attempt.once("error", () => resolve(undefined));
      });
      if (socket) return { socket, key: upstream.key };
    }
    return undefined;
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.once("close", () => open.delete(client));
    client.on("error", () => client.destroy());
    void connectUpstream().then((upstream) => {
      if (!upstream || client.destroyed) {
        upstream?.socket.destroy();
        client.destroy();
        return;
      }
      const { socket } = upstream;
      accepted[upstream.key] = (accepted[upstream.key] ?? 0) + 1;
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      // Half-closes travel through (pipe's end), so a server's FIN after `Connection: close`
      // reaches the client as it was sent; an error on either side closes the other.
      socket.on("error", () => client.destroy());
      client.on("error", () => socket.destroy());
      socket.once("close", () => client.destroySoon());
      client.once("close", () => socket.destroySoon());
      client.pipe(socket);
      socket.pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    accepted,
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
