import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { gracefulHttpClose, type HttpDrainOptions } from "../src/http-drain.js";

/**
 * The drain seen from clients' sockets: what each connection receives (responses, a FIN, or a
 * reset), on a plain node:http server with one slow route whose answer the test releases.
 */
const servers: http.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections();
});

async function serve(options: HttpDrainOptions = {}) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const arrived: string[] = [];
  const server = http.createServer((request, response) => {
    arrived.push(request.url ?? "");
    const answer = () => response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    if (request.url === "/slow") void released.then(answer);
    else answer();
  });
  servers.push(server);
  const close = gracefulHttpClose(server, options);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, close, release, arrived };
}

interface Response {
  status: number;
  connection: string | undefined;
}

/** One raw keep-alive connection: requests written by hand, responses and the end as they come. */
function connection(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let received = "";
  let waiting: (() => void) | undefined;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
    waiting?.();
  });
  const ended = new Promise<string>((resolve) => {
    socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    socket.on("end", () => resolve("FIN"));
  });
  const responses = (): Response[] =>
    received
      .split(/(?=HTTP\/1\.1 )/)
      .filter(Boolean)
      .map((text) => ({
        status: Number(text.slice(9, 12)),
        connection: /\r\nconnection: ([^\r]*)/i.exec(text)?.[1]?.toLowerCase(),
      }));
  return {
    ended,
    responses,
    send(path: string) {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: test\r\n\r\n`);
    },
    async responseCount(count: number) {
      while (responses().length < count) await new Promise<void>((resolve) => (waiting = resolve));
    },
  };
}

describe("gracefulHttpClose", () => {
  it("lets a request under way finish, answered with Connection: close, then ends its connection", async () => {
    const server = await serve();
    const client = connection(server.port);
    client.send("/slow");
    while (server.arrived.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = server.close();
    server.release();
    await closed;
    expect(await client.ended).toBe("FIN");
    expect(client.responses()).toEqual([{ status: 200, connection: "close" }]);
  });

  it("answers a request that arrives on an open connection during the drain, with Connection: close", async () => {
    const server = await serve({ idleMs: 60_000 });
    const client = connection(server.port);
    client.send("/fast");
    await client.responseCount(1);
    const closed = server.close();
    client.send("/fast");
    await closed;
    expect(await client.ended).toBe("FIN");
    expect(client.responses()).toEqual([
      { status: 200, connection: "keep-alive" },
      { status: 200, connection: "close" },
    ]);
  });

  it("ends a silent keep-alive connection with a FIN, not a reset", async () => {
    const server = await serve({ idleMs: 100 });
    const client = connection(server.port);
    client.send("/fast");
    await client.responseCount(1);
    await server.close();
    expect(await client.ended).toBe("FIN");
  });

  it("refuses new connections once the drain has begun", async () => {
    const server = await serve();
    const held = connection(server.port);
    held.send("/slow");
    while (server.arrived.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = server.close();
    const late = connection(server.port);
    expect(await late.ended).toBe("ECONNREFUSED");
    server.release();
    await closed;
  });

  it("under load on 20 keep-alive connections: every request answered 200, no connection reset", async () => {
    const server = await serve();
    const statuses = new Map<number, number>();
    const failures = new Map<string, number>();
    const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
    // Each client owns one keep-alive connection and sends its next request as soon as it can,
    // until the server refuses a new connection.
    const client = async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (;;) {
        const outcome = await new Promise<number | string>((resolve) => {
          http
            .get({ port: server.port, host: "127.0.0.1", path: "/fast", agent }, (response) => {
              response.resume();
              response.on("end", () => resolve(response.statusCode ?? 0));
            })
            .on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        });
        if (typeof outcome === "number") count(statuses, outcome);
        else count(failures, outcome);
        if (outcome === "ECONNREFUSED") break;
      }
      agent.destroy();
    };
    const clients = Array.from({ length: 20 }, client);
    while ((statuses.get(200) ?? 0) < 2000) await new Promise((resolve) => setTimeout(resolve, 10));
    await server.close();
    await Promise.all(clients);
    expect([...statuses.keys()]).toEqual([200]);
    expect(failures).toEqual(new Map([["ECONNREFUSED", 20]]));
  });
});
