import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the server does with one request: answer it, or drop the connection without answering. */
export type Reply = { status: number; headers?: Record<string, string>; body?: unknown; raw?: string } | "drop";

/**
 * A local HTTP server that answers each request as `script` says (by its number, from 0), and
 * records what it was sent: the retry tests see every attempt the client made.
 */
export async function scriptedServer(script: (request: SeenRequest, index: number) => Reply) {
  const seen: SeenRequest[] = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const entry = { method: request.method ?? "", url: request.url ?? "", headers: request.headers, body };
      seen.push(entry);
      const reply = script(entry, seen.length - 1);
      if (reply === "drop") {
        request.socket.destroy();
        return;
      }
      const text = reply.raw ?? (reply.body === undefined ? "" : JSON.stringify(reply.body));
      response.writeHead(reply.status, {
        ...(text ? { "content-type": "application/json" } : {}),
        "x-request-id": `req_${seen.length}`,
        ...reply.headers,
      });
      response.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
