import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postWebhook } from "../src/outbound/post-webhook.js";
import { isPublicAddress, urlProblem } from "../src/outbound/ssrf-guard.js";

describe("the SSRF guard", () => {
  it.each([
    ["loopback", "127.0.0.1"],
    ["loopback, elsewhere in 127/8", "127.10.0.1"],
    ["private 10/8", "10.1.2.3"],
    ["private 172.16/12", "172.31.255.255"],
    ["private 192.168/16", "192.168.0.10"],
    ["link-local and cloud metadata", "169.254.169.254"],
    ["CGNAT", "100.64.0.1"],
    ["this network", "0.0.0.0"],
    ["IPv6 loopback", "::1"],
    ["IPv6 unspecified", "::"],
    ["IPv6 unique-local", "fd00:ec2::254"],
    ["IPv6 link-local", "fe80::1"],
    ["IPv4-mapped loopback", "::ffff:127.0.0.1"],
    ["IPv4-mapped private, hex form", "::ffff:a00:1"],
  ])("refuses %s (%s)", (_class, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("allows public %s", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it("refuses on creation what can be judged without resolving: scheme, credentials, private literals, localhost", () => {
    expect(urlProblem("ftp://example.com/x", false)).toBe("Must be an http(s) URL");
    expect(urlProblem("not a url", false)).toBe("Must be an absolute http(s) URL");
    expect(urlProblem("https://user:pw@example.com/", false)).toBe("Must not contain credentials");
    expect(urlProblem("http://[::1]:8080/hook", false)).toContain("private");
    expect(urlProblem("http://localhost:8080/hook", false)).toBe("Must not point to localhost");
    expect(urlProblem("https://example.com/hook", false)).toBeUndefined();
    expect(urlProblem("http://127.0.0.1:8080/hook", true)).toBeUndefined();
  });
});

describe("postWebhook", () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === "/redirect") res.writeHead(302, { location: `http://127.0.0.1:${port}/internal` }).end();
      else if (req.url === "/slow") setTimeout(() => res.writeHead(200).end(), 2000);
      else if (req.url === "/busy") res.writeHead(503, { "retry-after": "120" }).end();
      else res.writeHead(200).end("x".repeat(100_000));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it("refuses a private literal and a name resolving to loopback at connect time, sending nothing", async () => {
    const before = hits;
    const literal = await postWebhook(`http://127.0.0.1:${port}/`, "{}", {}, { allowPrivate: false });
    expect(literal.statusCode).toBeUndefined();
    expect(literal.error).toContain("not a public address");
    expect(literal.outcome).toBe("ssrf_refused");
    const named = await postWebhook(`http://localhost:${port}/`, "{}", {}, { allowPrivate: false });
    expect(named.statusCode).toBeUndefined();
    expect(named.error).toContain("non-public address");
    expect(named.outcome).toBe("ssrf_refused");
    expect(hits).toBe(before);
  });

  it("follows no redirect: a 302 to an internal address is an answer, and the target is never asked", async () => {
    const before = hits;
    const result = await postWebhook(`http://127.0.0.1:${port}/redirect`, "{}", {}, { allowPrivate: true });
    expect(result).toMatchObject({ statusCode: 302, outcome: "3xx" });
    expect(hits).toBe(before + 1);
  });

  it("gives up when no answer comes in time, reads a large answer only up to its cap, and reports Retry-After", async () => {
    const slow = await postWebhook(`http://127.0.0.1:${port}/slow`, "{}", {}, { allowPrivate: true, timeoutMs: 200 });
    expect(slow.statusCode).toBeUndefined();
    expect(slow).toMatchObject({ outcome: "timeout", error: "timeout after 0.2 s" });
    const large = await postWebhook(`http://127.0.0.1:${port}/large`, "{}", {}, { allowPrivate: true });
    expect(large.statusCode).toBe(200);
    const busy = await postWebhook(`http://127.0.0.1:${port}/busy`, "{}", {}, { allowPrivate: true });
    expect(busy).toMatchObject({ statusCode: 503, retryAfterMs: 120_000, outcome: "5xx" });
  });

  it("names why no answer came: a TLS handshake that fails is tls, a closed port connection_refused", async () => {
    // https:// to a plain-HTTP server: the handshake gets no TLS record back.
    const tls = await postWebhook(`https://127.0.0.1:${port}/`, "{}", {}, { allowPrivate: true });
    expect(tls.statusCode).toBeUndefined();
    expect(tls.outcome).toBe("tls");
    expect(tls.error).toContain("SSL routines");
    const closed = await postWebhook("http://127.0.0.1:1/", "{}", {}, { allowPrivate: true });
    expect(closed).toMatchObject({ outcome: "connection_refused", error: "connect ECONNREFUSED 127.0.0.1:1" });
  });
});
