import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import type { BalancedTransport } from "../src/balanced-transport.js";
import { createRpcTransport } from "../src/rpc-client.js";
import { type RpcServer, startRpcServer } from "../src/rpc-server.js";
import { silentLogger } from "./helpers.js";

/**
 * Per-call balancing over the addresses a service's name resolves to, as a headless Service's
 * DNS answers with its ready pods (two replicas on the same port at two loopback addresses), or
 * over a list of URLs; each replica answers GetProgram with its own name.
 */
const servers: RpcServer[] = [];
const transports: BalancedTransport[] = [];

afterEach(async () => {
  for (const transport of transports.splice(0)) transport.close();
  for (const server of servers.splice(0)) await server.close();
});

async function replica(host: string, port: number, name: string): Promise<RpcServer> {
  const server = await startRpcServer({
    host,
    port,
    logger: silentLogger,
    readiness: async () => true,
    routes: (router) => router.service(PartnersService, { getProgram: async () => ({ program: { name } }) }),
  });
  servers.push(server);
  return server;
}

async function twoReplicas() {
  const a = await replica("127.0.0.1", 0, "a");
  await replica("127.0.0.2", a.port, "b");
  return a.port;
}

function client(port: number, resolve: (host: string) => Promise<string[]>) {
  const transport = createRpcTransport(`http://partners.test:${port}`, { resolve });
  transports.push(transport);
  const partners = createClient(PartnersService, transport);
  const callTimes = async (count: number) => {
    const answered: string[] = [];
    for (let i = 0; i < count; i++) answered.push((await partners.getProgram({})).program?.name ?? "");
    return answered;
  };
  return { transport, callTimes };
}

/** How many calls each replica answered. */
function tally(names: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

describe("createRpcTransport balancing", () => {
  it("spreads calls one by one over every address of the name", async () => {
    const port = await twoReplicas();
    const { callTimes } = client(port, async () => ["127.0.0.1", "127.0.0.2"]);
    expect(tally(await callTimes(10))).toEqual({ a: 5, b: 5 });
  });

  it("follows the name as replicas leave and join, and keeps the last answer when resolution fails", async () => {
    const port = await twoReplicas();
    let answer: string[] | Error = ["127.0.0.1", "127.0.0.2"];
    const { transport, callTimes } = client(port, async () => {
      if (answer instanceof Error) throw answer;
      return answer;
    });
    expect(tally(await callTimes(4))).toEqual({ a: 2, b: 2 });

    answer = ["127.0.0.2"];
    await transport.refresh();
    expect(transport.addresses()).toEqual([`http://127.0.0.2:${port}`]);
    expect(tally(await callTimes(4))).toEqual({ b: 4 });

    answer = new Error("SERVFAIL");
    await transport.refresh();
    expect(tally(await callTimes(2))).toEqual({ b: 2 });

    answer = ["127.0.0.2", "127.0.0.1"];
    await transport.refresh();
    expect(tally(await callTimes(4))).toEqual({ a: 2, b: 2 });
  });

  it("uses an IP address as given, without resolving it", async () => {
    const a = await replica("127.0.0.1", 0, "a");
    let resolved = 0;
    const transport = createRpcTransport(`http://127.0.0.1:${a.port}`, {
      resolve: async () => {
        resolved += 1;
        return [];
      },
    });
    transports.push(transport);
    expect((await createClient(PartnersService, transport).getProgram({})).program?.name).toBe("a");
    expect(resolved).toBe(0);
  });

  it("spreads calls over a comma-separated list of URLs, ports and all", async () => {
    const a = await replica("127.0.0.1", 0, "a");
    const b = await replica("127.0.0.1", 0, "b");
    const transport = createRpcTransport(`http://127.0.0.1:${a.port}, http://127.0.0.1:${b.port}`);
    transports.push(transport);
    const partners = createClient(PartnersService, transport);
    const answered: string[] = [];
    for (let i = 0; i < 6; i++) answered.push((await partners.getProgram({})).program?.name ?? "");
    expect(tally(answered)).toEqual({ a: 3, b: 3 });
  });

  it("sends a call a draining replica refused to the other one, and passes the drained one over", async () => {
    const a = await replica("127.0.0.1", 0, "a");
    const b = await replica("127.0.0.1", 0, "b");
    const transport = createRpcTransport(`http://127.0.0.1:${a.port},http://127.0.0.1:${b.port}`);
    transports.push(transport);
    const partners = createClient(PartnersService, transport);
    // Both connections open and in use.
    for (let i = 0; i < 4; i++) await partners.getProgram({});

    await a.close();
    servers.splice(servers.indexOf(a), 1);
    const answered: string[] = [];
    for (let i = 0; i < 6; i++) answered.push((await partners.getProgram({})).program?.name ?? "");
    expect(tally(answered)).toEqual({ b: 6 });
  });

  it("takes a replica back once it listens again", async () => {
    const a = await replica("127.0.0.1", 0, "a");
    const b = await replica("127.0.0.1", 0, "b");
    const transport = createRpcTransport(`http://127.0.0.1:${a.port},http://127.0.0.1:${b.port}`);
    transports.push(transport);
    const partners = createClient(PartnersService, transport);
    await a.close();
    servers.splice(servers.indexOf(a), 1);
    for (let i = 0; i < 2; i++) expect((await partners.getProgram({})).program?.name).toBe("b");

    await replica("127.0.0.1", a.port, "a again");
    const answered = new Set<string>();
    const deadline = Date.now() + 10_000;
    while (!answered.has("a again") && Date.now() < deadline) {
      answered.add((await partners.getProgram({})).program?.name ?? "");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect([...answered].sort()).toEqual(["a again", "b"]);
  });
});
