/**
 * The portal's page and assets (contract section 14), as the gateway serves them: HTML for
 * /portal, every asset the page names, and a Content-Security-Policy that admits nothing but
 * this origin; the same for the console, and the attribution script as any site may embed it.
 * The pages' behaviour is tested in a browser (tools/mesh/test/portal.e2e.test.ts).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPortalFiles, portalContentSecurityPolicy } from "../src/routes/portal.js";
import { createGateway } from "./support/harness.js";

const assetsOf = (html: string) => [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((match) => match[1] ?? "");

describe("GET /portal", () => {
  it("serves the page as HTML under a policy that admits only this origin, without a key", async () => {
    const { call } = createGateway();
    const page = await call("GET", "/portal", { key: null });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["cache-control"]).toBe("no-cache");
    const policy = String(page.headers["content-security-policy"]);
    expect(policy).toBe(portalContentSecurityPolicy);
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:|data:/);
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.headers["referrer-policy"]).toBe("no-referrer");
    expect(page.headers["set-cookie"]).toBeUndefined();
    expect((await call("GET", "/portal/", { key: null })).body).toBe(page.body);
  });

  it("names only its own assets, runs no inline script, and every asset is served with its type", async () => {
    const { call } = createGateway();
    const html = (await call("GET", "/portal", { key: null })).body;
    expect(html).toMatch(/<script type="module" crossorigin src="\/portal\/assets\/[^"]+\.js"><\/script>/);
    // Every script has a src: nothing runs from the page's own text, which the policy would refuse.
    expect([...html.matchAll(/<script\b[^>]*>/g)].every(([tag]) => / src="/.test(tag))).toBe(true);
    expect(html).not.toMatch(/\sstyle=|<style/);
    const assets = assetsOf(html);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset.startsWith("/portal/")).toBe(true);
      const answer = await call("GET", asset, { key: null });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers["content-security-policy"]).toBe(portalContentSecurityPolicy);
      const type = String(answer.headers["content-type"]);
      if (asset.endsWith(".js")) expect(type).toBe("text/javascript; charset=utf-8");
      if (asset.endsWith(".css")) expect(type).toBe("text/css; charset=utf-8");
      if (asset.endsWith(".svg")) expect(type).toBe("image/svg+xml");
      if (asset.startsWith("/portal/assets/")) {
        expect(answer.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
        // The built code fetches nothing from another origin: every URL in it is a path or an XML namespace.
        const urls = answer.body.match(/https?:\/\/[^\s"'`)]+/g) ?? [];
        expect(urls.filter((url) => !url.startsWith("http://www.w3.org/"))).toEqual([]);
      }
    }
  });

  it("answers a revalidation with 304 when the file has not changed", async () => {
    const { call } = createGateway();
    const page = await call("GET", "/portal", { key: null });
    const etag = String(page.headers.etag);
    // @fastify/send's validator: weak, from the file's size and modification time.
    expect(etag).toMatch(/^(W\/)?"[\w-]+"$/);
    const again = await call("GET", "/portal", { key: null, headers: { "if-none-match": etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe("");
  });

  it("answers a path that is not a built file as an unknown route, the file system out of reach", async () => {
    const { call } = createGateway();
    for (const path of [
      "/portal/nothing.js",
      "/portal/assets/",
      "/portal/../package.json",
      "/portal/%2e%2e/package.json",
      "/portal/src/main.ts",
    ]) {
      const answer = await call("GET", path, { key: null });
      expect(answer.statusCode, path).toBe(404);
      expect(answer.json(), path).toEqual({ error: "Route not found" });
    }
  });

  it("stops the gateway with one line saying how to build the portal when it is missing", () => {
    const empty = mkdtempSync(join(tmpdir(), "portal-"));
    expect(() => loadPortalFiles(join(empty, "dist"))).toThrow(/The portal is not built .* run npm run build/);
    writeFileSync(join(empty, "app.js"), "");
    expect(() => loadPortalFiles(empty)).toThrow(/no index\.html/);
  });
});

describe("GET /console", () => {
  it("serves the console's page under the portal's policy, without a key", async () => {
    const { call } = createGateway();
    const page = await call("GET", "/console", { key: null });
    expect(page.statusCode).toBe(200);
    expect({
      type: page.headers["content-type"],
      cache: page.headers["cache-control"],
      policy: page.headers["content-security-policy"],
      framing: page.headers["x-frame-options"],
      features: page.headers["permissions-policy"],
    }).toEqual({
      type: "text/html; charset=utf-8",
      cache: "no-cache",
      policy: portalContentSecurityPolicy,
      framing: "DENY",
      features: "camera=(), microphone=(), geolocation=(), payment=()",
    });
    expect((await call("GET", "/console/", { key: null })).body).toBe(page.body);
    expect((await call("GET", "/console/nothing.js", { key: null })).statusCode).toBe(404);
  });
});

describe("GET /js/v1/affiliate.js", () => {
  it("may be embedded by any site: CORS, a cross-origin resource policy, cached 5 minutes, revalidated by its ETag", async () => {
    const { call } = createGateway();
    const script = await call("GET", "/js/v1/affiliate.js", { key: null, headers: { origin: "https://shop.example" } });
    expect(script.statusCode).toBe(200);
    expect({
      type: script.headers["content-type"],
      cache: script.headers["cache-control"],
      cors: script.headers["access-control-allow-origin"],
      resourcePolicy: script.headers["cross-origin-resource-policy"],
      sniffing: script.headers["x-content-type-options"],
    }).toEqual({
      type: "text/javascript; charset=utf-8",
      cache: "public, max-age=300, stale-while-revalidate=86400",
      cors: "*",
      resourcePolicy: "cross-origin",
      sniffing: "nosniff",
    });
    const etag = String(script.headers.etag);
    const again = await call("GET", "/js/v1/affiliate.js", { key: null, headers: { "if-none-match": etag } });
    expect(again.statusCode).toBe(304);
  });
});
