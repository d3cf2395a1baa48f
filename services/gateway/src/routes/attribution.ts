import { createHmac } from "node:crypto";
import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { characterCount, referralCodePattern } from "@affiliate/contract-rules";
import { EventType, type LedgerService } from "@affiliate/proto/ledger";
import type { PartnersService } from "@affiliate/proto/partners";
import { toPublicTrackedEvent } from "@affiliate/rest-shapes/mappers";
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { clickBodySchema, trackEventResponseSchema } from "@affiliate/rest-shapes/schemas/tracking";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import helmet from "@fastify/helmet";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { HttpError } from "../errors.js";
import { defineRoute } from "../http/define-route.js";
import { securityHeaders } from "../http/security-headers.js";

/**
 * What the gateway records of a click it takes itself, instead of the visitor's address: a keyed
 * hash of it (HMAC-SHA256 under CLICK_ADDRESS_HASH_KEY), so clicks from one address can be told
 * apart from others (duplicates, bursts) without the address being kept anywhere.
 */
export function addressHasher(key: string): (address: string) => string {
  return (address) => createHmac("sha256", key).update(address).digest("base64url").slice(0, 32);
}

/** The host of a referring page's URL, or undefined when it is not an http(s) URL. */
export function referrerHostOf(referrer: string | undefined): string | undefined {
  if (!referrer) return undefined;
  try {
    const url = new URL(referrer);
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
    return url.host.slice(0, 255) || undefined;
  } catch {
    return undefined;
  }
}

/** The user agent as the ledger takes it: at most 1024 characters. */
function userAgentOf(request: FastifyRequest): string | undefined {
  const agent = request.headers["user-agent"];
  if (typeof agent !== "string" || agent === "") return undefined;
  return characterCount(agent) > 1024 ? Array.from(agent).slice(0, 1024).join("") : agent;
}

/** The click's context as the gateway sees it: the agent, the hashed address, the referring host. */
function clickContext(request: FastifyRequest, hashAddress: (address: string) => string, referrer: string | undefined) {
  return {
    userAgent: userAgentOf(request),
    ipHash: hashAddress(request.ip),
    referrerHost: referrerHostOf(referrer),
  };
}

/**
 * Where a referral link sends the visitor: the program's template with the code filled in, and
 * `aff_vid` (the visitor id the click was recorded under) appended, so the landing page's script
 * carries the visitor on. Undefined when the template is not a usable URL.
 */
export function landingUrlOf(template: string, code: string, visitorId: string | undefined): string | undefined {
  try {
    const url = new URL(template.replaceAll("{code}", encodeURIComponent(code)));
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
    if (visitorId !== undefined) url.searchParams.set("aff_vid", visitorId);
    return url.toString();
  } catch {
    return undefined;
  }
}

const unknownCode = "Unknown referral code";

export interface ClickRouteDeps {
  ledger: Client<typeof LedgerService>;
  partners: Client<typeof PartnersService>;
  hashAddress: (address: string) => string;
}

const publicProgramSchema = z.object({
  data: z.object({
    attribution_window_days: z.int().meta({ description: "How long the script keeps a referral." }),
    referral_url_template: z.string().nullable(),
  }),
});

/**
 * POST /events/click (contract section 17): the browser script's click, with the page's
 * publishable key (any key of the product works). Cross-origin by design (server.ts opens CORS
 * for it); rate-limited per client address, never per product or key, so one noisy address
 * cannot spend a merchant's budget.
 */
export async function clickRoutes(app: FastifyInstance, { ledger, partners, hashAddress }: ClickRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/program/public",
    operationId: "getPublicProgram",
    tags: ["Tracking"],
    summary: "Read the program's public referral settings (publishable key)",
    description:
      "What the browser script needs: how long a referral is kept (attribution_window_days) and the referral link template. Takes a publishable key (or a secret key). Any origin may call it (CORS).",
    access: "click",
    answers: { 200: { description: "The public settings", schema: publicProgramSchema } },
    handler: async ({ request }) => {
      const { program } = await partners.getProgram({ productId: request.productId });
      return {
        data: {
          attribution_window_days: program?.attributionWindowDays ?? 60,
          referral_url_template: program?.referralUrlTemplate || null,
        },
      };
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/events/click",
    operationId: "recordClick",
    tags: ["Tracking"],
    summary: "Record a click from a page (publishable key)",
    description:
      "What /js/v1/affiliate.js calls when a page's URL carries a referral code. Takes a publishable key (pk_live_…, pk_test_…: sandbox) or a secret key. The gateway records the user agent, the referring page's host and a keyed hash of the client's address (never the address). Any origin may call it (CORS). Rate-limited per client address by CLICK_RATE_LIMIT_PER_MINUTE.",
    access: "click",
    body: clickBodySchema,
    answers: {
      201: { description: "Recorded", schema: trackEventResponseSchema },
      404: { description: "No active affiliate of this program has the code", schema: errorSchema },
    },
    handler: async ({ body, request, reply }) => {
      const response = await ledger.track({
        productId: request.productId,
        testMode: request.testMode,
        type: EventType.CLICK,
        referralCode: body.referral_code,
        visitorId: body.visitor_id,
        ...clickContext(request, hashAddress, body.referrer),
      });
      return reply.code(201).send({ data: toPublicTrackedEvent(response.event) });
    },
  });
}

export type ReferralLinkRouteDeps = ClickRouteDeps;

/**
 * GET /r/:code (contract section 17): a referral link anyone can share. The code alone names the
 * partnership, across products; the click is recorded (the visitor id, the referring host, the
 * user agent, the hashed address) and the visitor sent on to the program's referral URL with
 * `aff_vid`. An unknown, dead, ambiguous or malformed code, or a program without a
 * referral_url_template, is 404 and records nothing; so is HEAD always silent (a link preview
 * or a crawler's check is not a click). Rate-limited per client address.
 */
export async function referralLinkRoutes(
  app: FastifyInstance,
  { partners, ledger, hashAddress }: ReferralLinkRouteDeps,
) {
  // Helmet's Referrer-Policy, no-referrer: the visit the redirect leads to carries no Referer on.
  await app.register(helmet, securityHeaders({ contentSecurityPolicy: false }));
  defineRoute(app, {
    method: "GET",
    url: "/r/:code",
    operationId: "followReferralLink",
    tags: ["Tracking"],
    summary: "Follow a referral link: record the click and redirect",
    description:
      "No key. Records a click for the active partnership with this code and answers 302 to the program's referral_url_template with the code filled in and aff_vid=<visitor id> appended. A code no active partnership has (or that two products share), or a program without a referral_url_template, is 404 and records nothing. HEAD answers the same redirect without aff_vid and records nothing. Rate-limited per client address by CLICK_RATE_LIMIT_PER_MINUTE.",
    access: "public",
    params: z.object({ code: z.string().max(200) }),
    answers: {
      302: {
        description: "The click is recorded; Location is the program's referral URL with aff_vid",
        headers: z.object({ Location: z.string() }),
      },
      404: { description: "Unknown, inactive or ambiguous code, or no referral_url_template", schema: errorSchema },
    },
    handler: async ({ params, request, reply }) => {
      const code = params.code;
      if (!referralCodePattern.test(code)) throw new HttpError(404, { error: unknownCode });
      let link: Awaited<ReturnType<typeof partners.resolveReferralLink>>;
      try {
        link = await partners.resolveReferralLink({ referralCode: code });
      } catch (error) {
        if (error instanceof ConnectError && error.code === Code.NotFound) {
          throw new HttpError(404, { error: unknownCode });
        }
        throw error;
      }
      if (
        !link.referralUrlTemplate ||
        landingUrlOf(link.referralUrlTemplate, link.referralCode, undefined) === undefined
      ) {
        throw new HttpError(404, {
          error: "This program has no referral URL (referral_url_template) to send visitors to",
        });
      }
      reply.header("cache-control", "no-store");
      if (request.method === "HEAD") {
        return reply.redirect(landingUrlOf(link.referralUrlTemplate, link.referralCode, undefined) as string, 302);
      }
      const referer = request.headers.referer;
      const response = await ledger.track({
        productId: link.productId,
        testMode: false,
        type: EventType.CLICK,
        referralCode: link.referralCode,
        ...clickContext(request, hashAddress, typeof referer === "string" ? referer : undefined),
      });
      const visitorId = response.event?.visitorId || undefined;
      return reply.redirect(landingUrlOf(link.referralUrlTemplate, link.referralCode, visitorId) as string, 302);
    },
  });
}

/** The built attribution script: where it is, to be served from there. */
export interface ScriptFile {
  directory: string;
  fileName: string;
}

/** Where `@affiliate/attribution-script` puts its build. */
export function builtScriptPath(): string {
  const manifest = createRequire(import.meta.url).resolve("@affiliate/attribution-script/package.json");
  return join(dirname(manifest), "dist", "affiliate.js");
}

/** Finds the built script; a gateway without it stops with one line saying how to build it. */
export function loadAttributionScript(path = builtScriptPath()): ScriptFile {
  try {
    statSync(path);
  } catch {
    throw new Error(`The attribution script is not built (no ${path}): run npm run build`);
  }
  return { directory: dirname(path), fileName: basename(path) };
}

/**
 * GET /js/v1/affiliate.js (contract section 17): the script merchants paste into their pages. It
 * is loaded from their origins, so any site may embed it (CORS in server.ts, a cross-origin
 * resource policy here); cached for 5 minutes and revalidated by its ETag, so a fix reaches every
 * page within minutes while pages do not ask on every view. Not an API operation: not in the
 * OpenAPI document.
 */
export async function attributionScriptRoutes(app: FastifyInstance, { script }: { script: ScriptFile }) {
  await app.register(
    helmet,
    securityHeaders({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: "cross-origin" } }),
  );
  await app.register(fastifyStatic, {
    root: script.directory,
    // This one route serves it, whatever else the build directory holds.
    serve: false,
    // stale-while-revalidate, which @fastify/send's max-age option cannot write, and JavaScript
    // typed as RFC 9239 names it (its MIME table still says application/javascript).
    cacheControl: false,
    setHeaders: (reply) => {
      reply.header("cache-control", "public, max-age=300, stale-while-revalidate=86400");
      if (reply.statusCode !== 304) reply.type("text/javascript; charset=utf-8");
    },
  });
  app.get("/js/v1/affiliate.js", (_request, reply) => reply.sendFile(script.fileName));
}
