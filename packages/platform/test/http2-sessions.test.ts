import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Http2SessionManager } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { GuardedHttp2SessionManager } from "../src/http2-sessions.js";

/**
 * connectrpc/connect-es#1768: a server's graceful GOAWAY on an idle session, followed by a call
 * before the session's socket has closed, raises the manager's late error with no listener left.
 * Here the call is made inside the client session's own `goaway` handler (registered after the
 * manager's), which is the tightest form of "a call arrives in between". The unguarded case pins
 * connect-node's behaviour: when it stops crashing, upstream has fixed it and the guard can go.
 */
const servers: { server: http2.Http2Server; sessions: http2.ServerHttp2Session[] }[] = [];
afterEach(async () => {
  for (const { server, sessions } of servers.splice(0)) {
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serverWithSessions(): Promise<{ url: string; sessions: http2.ServerHttp2Session[] }> {
  const sessions: http2.ServerHttp2Session[] = [];
  const server = http2.createServer((_req, res) => res.end("ok"));
  server.on("session", (session) => sessions.push(session));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({ server, sessions });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sessions };
}

/** Sends one GET through the manager and waits for its answer's end; returns the session it used. */
async function get(manager: Http2SessionManager): Promise<http2.ClientHttp2Session> {
  const stream = await manager.request("GET", "/", {}, {});
  const session = stream.session as http2.ClientHttp2Session;
  stream.end();
  stream.resume();
  await new Promise((resolve) => stream.once("close", resolve));
  return session;
}

/** Uncaught exceptions while `work` runs (vitest would otherwise report them for the whole file). */
async function uncaughtDuring(work: () => Promise<void>): Promise<unknown[]> {
  const caught: unknown[] = [];
  const listener = (error: unknown) => caught.push(error);
  const vitestListeners = process.listeners("uncaughtException");
  process.removeAllListeners("uncaughtException");
  process.on("uncaughtException", listener);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    process.off("uncaughtException", listener);
    for (const restore of vitestListeners) process.on("uncaughtException", restore);
  }
  return caught;
}

describe("GuardedHttp2SessionManager", () => {
  for (const [name, Manager, crashes] of [
    ["connect-node's own manager", Http2SessionManager, true],
    ["the guarded manager", GuardedHttp2SessionManager, false],
  ] as const) {
    it(`${name}: a call right after a graceful GOAWAY on an idle session ${crashes ? "crashes" : "is answered, nothing raised"}`, async () => {
      const { url, sessions } = await serverWithSessions();
      const manager = new Manager(url);
      const clientSession = await get(manager);
      let second: Promise<http2.ClientHttp2Stream> | undefined;
      clientSession.once("goaway", () => {
        second = manager.request("GET", "/", {}, {});
      });
      const caught = await uncaughtDuring(async () => {
        sessions[0]?.goaway(http2.constants.NGHTTP2_NO_ERROR);
        while (!second) await new Promise((resolve) => setTimeout(resolve, 10));
        // The call is answered, on a new session.
        const stream = await second;
        expect(stream.session === clientSession).toBe(false);
        stream.end();
        stream.resume();
        await new Promise((resolve) => stream.once("close", resolve));
      });
      manager.abort();
      expect(caught.map((error) => (error as Error).message)).toEqual(
        crashes ? ["[canceled] received GOAWAY without any open streams"] : [],
      );
    });
  }
});
