import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import helmet from "@fastify/helmet";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { securityHeaders } from "../http/security-headers.js";

/**
 * The affiliate portal (contract section 14) and the merchant console (section 19): the static
 * files `@affiliate/portal` and `@affiliate/console` build, served under /portal and /console by
 * @fastify/static, one route per built file registered at start-up: the set of answerable paths
 * is the set of built files, so no other request path ever reaches the file system.
 *
 * Every answer carries a Content-Security-Policy that admits nothing but this origin: the page's
 * own script and stylesheet, and fetches to the affiliate API beside it. No inline script or
 * style, no eval, no framing, no form posted elsewhere; a token in the page can leave only
 * towards the gateway that issued it.
 */
const portalCspDirectives = {
  "default-src": ["'self'"],
  "script-src": ["'self'"],
  "style-src": ["'self'"],
  "img-src": ["'self'"],
  "font-src": ["'self'"],
  "connect-src": ["'self'"],
  "object-src": ["'none'"],
  "base-uri": ["'none'"],
  "form-action": ["'self'"],
  "frame-ancestors": ["'none'"],
};

/** The policy as helmet writes it in the header: directives joined by ";". */
export const portalContentSecurityPolicy = Object.entries(portalCspDirectives)
  .map(([directive, sources]) => [directive, ...sources].join(" "))
  .join(";");

const pageHeaders = securityHeaders({
  contentSecurityPolicy: { useDefaults: false, directives: portalCspDirectives },
  referrerPolicy: { policy: "no-referrer" },
  xFrameOptions: { action: "deny" },
});

/** Helmet writes no Permissions-Policy (it leaves the feature list to the page), so it is set here. */
const permissionsPolicy = "camera=(), microphone=(), geolocation=(), payment=()";

/** A browser app's build, as the gateway serves it: the directory Vite wrote. */
export interface PortalFiles {
  directory: string;
}

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

/**
 * The built portal. A gateway without it would answer /portal with a 404 nobody expects, so a
 * missing build stops it with one line saying how to make one.
 */
export function loadPortalFiles(directory = builtPortalDirectory()): PortalFiles {
  return builtApp(browserApps.portal, directory);
}

/** The built console, as the portal. */
export function loadConsoleFiles(directory = builtAppDirectory(browserApps.console)): PortalFiles {
  return builtApp(browserApps.console, directory);
}

function builtApp(app: BrowserApp, directory: string): PortalFiles {
  try {
    statSync(directory);
  } catch {
    throw new Error(`${app.what} is not built (no ${directory}): run npm run build`);
  }
  try {
    statSync(join(directory, "index.html"));
  } catch {
    throw new Error(`${app.what} is not built (no index.html in ${directory}): run npm run build`);
  }
  return { directory };
}

export interface PortalRouteDeps {
  files: PortalFiles;
  /** Where the app is served; /portal unless given. */
  path?: string;
}

/**
 * Cache-Control by what a file is, written here because @fastify/send's own header holds one
 * max-age for every file and cannot say no-cache: Vite names assets by their content hash, so a
 * name never changes meaning; the page names the current assets, so it is asked again every
 * time (its ETag answers 304 while it has not changed). JavaScript is typed as RFC 9239 names
 * it, where @fastify/send's MIME table still says application/javascript.
 */
function cacheAndTypeHeaders(assetsPath: string) {
  return (reply: FastifyReply, path: string) => {
    const asset = reply.request.url.startsWith(assetsPath);
    reply.header("cache-control", asset ? "public, max-age=31536000, immutable" : "no-cache");
    if (path.endsWith(".js") && reply.statusCode !== 304) reply.type("text/javascript; charset=utf-8");
  };
}

/**
 * GET /portal (the page; also at /portal/) and GET /portal/<file> (its assets), and the same for
 * /console. These are pages, not API operations: they are not in the OpenAPI document, like
 * /docs. No key, no rate limit: the answers are a handful of files, the same for everyone.
 */
export async function portalRoutes(
  app: FastifyInstance,
  { files, path: base = browserApps.portal.path }: PortalRouteDeps,
) {
  await app.register(helmet, pageHeaders);
  app.addHook("onRequest", async (_request, reply) => {
    reply.header("permissions-policy", permissionsPolicy);
  });
  await app.register(fastifyStatic, {
    root: files.directory,
    prefix: `${base}/`,
    // One route per file found now, rather than one wildcard route that looks paths up.
    wildcard: false,
    cacheControl: false,
    setHeaders: cacheAndTypeHeaders(`${base}/assets/`),
  });
  app.get(base, (_request, reply) => reply.sendFile("index.html"));
}
