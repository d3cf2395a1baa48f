import type { Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface HttpDrainOptions {
  /** During a drain, a keep-alive connection that carried no request for this long is closed. */
  idleMs?: number;
  /** Connections still open this long after the drain began are cut. */
  timeoutMs?: number;
}

interface ConnectionState {
  /** Responses under way on this connection (1 at most without pipelining). */
  inFlight: Set<ServerResponse>;
  /** When the last response ended, or the connection opened. */
  idleSince: number;
}

/**
 * Closes an HTTP/1.1 server so that its keep-alive clients never see a reset. Install on the
 * server before it listens; `close()` then:
 *
 * - stops accepting connections;
 * - lets every request under way finish, answering it with `Connection: close`;
 * - answers a request that arrives on an open connection during the drain, also with
 *   `Connection: close`, so its client learns from a response, not from a broken socket, that
 *   the connection is over;
 * - closes a connection that stays silent for `idleMs` with a FIN (`socket.end()`).
 *
 * Node's own `server.close()` destroys every connection that looks idle at once. Under load that
 * is the connection whose client has just sent its next request, still unread in the kernel:
 * the socket closes with unread data, the kernel answers with a reset, and the client's request
 * fails with ECONNRESET. Waiting `idleMs` of real silence leaves only the race every keep-alive
 * timeout has, which clients are built to retry.
 */
export function gracefulHttpClose(server: Server, options: HttpDrainOptions = {}): () => Promise<void> {
  const idleMs = options.idleMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const connections = new Map<Socket, ConnectionState>();
  let draining = false;

  server.on("connection", (socket: Socket) => {
    connections.set(socket, { inFlight: new Set(), idleSince: Date.now() });
    socket.once("close", () => connections.delete(socket));
  });
  // Prepended: it must see each request before a handler can send the response's headers.
  server.prependListener("request", (request, response: ServerResponse) => {
    const state = connections.get(request.socket);
    if (draining) response.setHeader("connection", "close");
    if (!state) return;
    state.inFlight.add(response);
    response.once("close", () => {
      state.inFlight.delete(response);
      state.idleSince = Date.now();
    });
  });

  return () =>
    new Promise<void>((resolve) => {
      draining = true;
      for (const state of connections.values()) {
        for (const response of state.inFlight) if (!response.headersSent) response.setHeader("connection", "close");
      }
      // Node's close() would destroy the idle-looking connections; the sweep below ends them instead.
      server.closeIdleConnections = () => {};
      const sweep = setInterval(
        () => {
          const now = Date.now();
          for (const [socket, state] of connections) {
            if (state.inFlight.size === 0 && now - state.idleSince >= idleMs && !socket.writableEnded) socket.end();
          }
        },
        Math.min(100, idleMs),
      );
      const cut = setTimeout(() => {
        for (const socket of connections.keys()) socket.destroy();
      }, timeoutMs);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(cut);
        resolve();
      });
    });
}
