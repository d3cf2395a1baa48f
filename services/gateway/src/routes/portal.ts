import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative, sep } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * The affiliate portal (contract section 14) and the merchant console (section 19): the static
 * files `@affiliate/portal` and `@affiliate/console` build, served under /portal and /console. They are read once, at start-up, into memory: the set of answerable
 * paths is the set of built files, so no request path ever reaches the file system.
 *
 * Every answer carries a Content-Security-Policy that admits nothing but this origin: the page's
 * own script and stylesheet, and fetches to the affiliate API beside it. No inline script or
 * style, no eval, no framing, no form posted elsewhere; a token in the page can leave only
 * towards the gateway that issued it.
 */
export const portalContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const securityHeaders = {
  "content-security-policy": portalContentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "x-frame-options": "DENY",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

export interface PortalFile {
  body: Buffer;
  contentType: string;
  cacheControl: string;
  etag: string;
}

/** An app's files by the path they answer, `/portal/assets/index-….js`; the page at `/portal`. */
export type PortalFiles = ReadonlyMap<string, PortalFile>;

/** The browser apps the gateway serves: where each is served, and the workspace that builds it. */
export const browserApps = {
  portal: { path: "/portal", packageName: "@affiliate/portal", what: "The portal" },
  console: { path: "/console", packageName: "@affiliate/console", what: "The console" },
} as const;

type BrowserApp = (typeof browserApps)[keyof typeof browserApps];

/** Where an app's workspace puts its build. */
export function builtAppDirectory(app: BrowserApp): string {
  const manifest = createRequire(import.meta.url).resolve(`${app.packageName}/package.json`);
  return join(dirname(manifest), "dist");
}

/** Where `@affiliate/portal` puts its build. */
export const builtPortalDirectory = (): string => builtAppDirectory(browserApps.portal);

function filesUnder(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const loaded = new Map<string, PortalFiles>();

/**
 * Reads the built portal once per process. A gateway without it would answer /portal with a
 * 404 nobody expects, so a missing build stops it with one line saying how to make one.
 */
export function loadPortalFiles(directory = builtPortalDirectory()): PortalFiles {
  return loadAppFiles(browserApps.portal, directory);
}

/** Reads the built console once per process, as the portal. */
export function loadConsoleFiles(directory = builtAppDirectory(browserApps.console)): PortalFiles {
  return loadAppFiles(browserApps.console, directory);
}

function loadAppFiles(app: BrowserApp, directory: string): PortalFiles {
  const known = loaded.get(directory);
  if (known) return known;
  let paths: string[];
  try {
    paths = filesUnder(directory);
  } catch {
    throw new Error(`${app.what} is not built (no ${directory}): run npm run build`);
  }
  if (!paths.includes(join(directory, "index.html"))) {
    throw new Error(`${app.what} is not built (no index.html in ${directory}): run npm run build`);
  }
  const files = new Map<string, PortalFile>();
  for (const path of paths) {
    const url = `${app.path}/${relative(directory, path).split(sep).join("/")}`;
    const body = readFileSync(path);
    const isPage = url === `${app.path}/index.html`;
    files.set(isPage ? app.path : url, {
      body,
      contentType: contentTypes[extname(path)] ?? "application/octet-stream",
      // Vite names assets by their content hash: a name never changes meaning. The page names
      // the current assets, so it is asked again every time.
      cacheControl: url.startsWith(`${app.path}/assets/`) ? "public, max-age=31536000, immutable" : "no-cache",
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
    });
  }
  loaded.set(directory, files);
  return files;
}

export interface PortalRouteDeps {
  files: PortalFiles;
  /** Where the app is served; /portal unless given. */
  path?: string;
}

/**
 * GET /portal (the page; also at /portal/) and GET /portal/* (its assets), and the same for
 * /console. These are pages, not API operations: they are not in the OpenAPI document, like
 * /docs. No key, no rate limit: the answers are a handful of files from memory, the same for
 * everyone.
 */
export async function portalRoutes(
  app: FastifyInstance,
  { files, path: base = browserApps.portal.path }: PortalRouteDeps,
) {
  const serve = (file: PortalFile | undefined, request: FastifyRequest, reply: FastifyReply) => {
    if (!file) return reply.code(404).send({ error: "Route not found" });
    reply.headers(securityHeaders).header("cache-control", file.cacheControl).header("etag", file.etag);
    if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
    return reply.type(file.contentType).send(file.body);
  };
  const page = files.get(base);
  app.get(base, async (request, reply) => serve(page, request, reply));
  app.get(`${base}/*`, async (request, reply) => {
    const path = request.url.split("?", 1)[0] ?? "";
    return serve(path === `${base}/` ? page : files.get(path), request, reply);
  });
}
