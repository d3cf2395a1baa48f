/**
 * One declaration per route (style, "Gateway"): the document lists exactly the routes the
 * gateway serves, each from its own declaration, both ways; nothing is served undeclared.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { describeApi } from "../src/describe-api.js";
import { openApiPath } from "../src/http/route-catalog.js";
import { createGateway } from "./support/harness.js";

const documented = (document: { paths: Record<string, Record<string, unknown>> }) =>
  Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
  );

/** Pages for people, not API operations: the documentation's, the affiliate portal's, the merchant console's, and the attribution script. */
const isPage = (url: string) =>
  ["/docs", "/portal", "/console", "/js/v1"].some((page) => url === page || url.startsWith(`${page}/`));

/**
 * @fastify/cors's one route, which lets its hook answer a preflight on any path: 204 where CORS
 * is open, the usual 404 elsewhere. It is no operation, and preflights reach it on the paths of
 * the routes they precede.
 */
const isCorsPreflight = (route: { method: string; url: string }) => route.method === "OPTIONS" && route.url === "*";

describe("the route catalog", () => {
  it("documents every declared route, and nothing else", async () => {
    const { app, call } = createGateway();
    const document = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    const declared = app.routeCatalog.declared().map((route) => `${route.method} ${openApiPath(route.url)}`);
    expect(documented(document).sort()).toEqual([...declared].sort());
    // The API as the spec has it, so that losing a declaration cannot go unnoticed either.
    expect(declared).toEqual(
      expect.arrayContaining([
        "POST /events",
        "POST /events/batch",
        "GET /api/v1/affiliates/{id}",
        "POST /api/v1/refunds",
        "POST /api/v1/webhooks/{id}/test",
        "DELETE /api/v1/customers",
        "GET /healthz",
        "GET /readyz",
        "GET /api/v1/openapi.json",
      ]),
    );
  });

  it("serves no route that is not declared, but Fastify's implicit HEADs, CORS's preflight, the documentation and portal pages and the attribution script", async () => {
    const { app } = createGateway();
    await app.ready();
    const undeclared = app.routeCatalog
      .registered()
      .filter((route) => route.declaration === undefined)
      .filter((route) => route.method !== "HEAD" && !isCorsPreflight(route) && !isPage(route.url));
    expect(undeclared).toEqual([]);
    const heads = app.routeCatalog.registered().filter((route) => route.method === "HEAD" && !isPage(route.url));
    const gets = app.routeCatalog.declared().filter((route) => route.method === "GET");
    expect(heads.map((route) => route.url).sort()).toEqual(gets.map((route) => route.url).sort());
  });

  it("gives every operation its own id", async () => {
    const { app } = createGateway();
    await app.ready();
    const ids = app.routeCatalog.declared().map((route) => route.declaration.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("documents the errors a route answers by its kind: the key's, a body's, a path id's", async () => {
    const { call } = createGateway();
    const document = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    const statuses = (path: string, method: string) => Object.keys(document.paths[path][method].responses).sort();
    expect(statuses("/api/v1/webhooks/{id}", "patch")).toEqual(
      ["200", "400", "401", "403", "404", "413", "415", "429", "503", "504"].sort(),
    );
    expect(statuses("/api/v1/program", "get")).toEqual(["200", "400", "401", "403", "429", "503", "504"].sort());
    expect(statuses("/healthz", "get")).toEqual(["200"]);
    expect(document.paths["/readyz"].get.security).toEqual([]);
  });

  it("writes the same document without a server, for the lint and for tools", async () => {
    const { call } = createGateway();
    const served = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    expect(JSON.parse(JSON.stringify(await describeApi()))).toEqual(served);
  });
});

describe("the example Ingress (deploy/k8s/examples/ingress.yaml)", () => {
  // Its paths, read as text: the gateway does not depend on a YAML parser for one list.
  const ingress = readFileSync(new URL("../../../deploy/k8s/examples/ingress.yaml", import.meta.url), "utf8");
  const paths = [...ingress.matchAll(/^\s*- path: (\S+)$/gm)].map((match) => match[1] as string);
  /** How an Ingress path of pathType Prefix matches: whole segments. */
  const under = (url: string, prefix: string) => url === prefix || url.startsWith(`${prefix}/`);
  /** The probes: the kubelet reaches them in the cluster; the public never should. */
  const internal = ["/healthz", "/readyz"];

  it("routes every public route the gateway serves, so none answers 404 at the edge alone", async () => {
    const { app } = createGateway();
    await app.ready();
    const urls = [
      ...new Set(
        app.routeCatalog
          .registered()
          .filter((route) => !isCorsPreflight(route))
          .map((route) => route.url),
      ),
    ];
    const unrouted = urls.filter((url) => !internal.includes(url) && !paths.some((path) => under(url, path)));
    expect(unrouted).toEqual([]);
  });

  it("routes nothing else: no probe, and no path that reaches no route", async () => {
    const { app } = createGateway();
    await app.ready();
    const urls = app.routeCatalog.registered().map((route) => route.url);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((path) => !urls.some((url) => under(url, path)))).toEqual([]);
    expect(paths.filter((path) => internal.some((url) => under(url, path)))).toEqual([]);
  });
});
