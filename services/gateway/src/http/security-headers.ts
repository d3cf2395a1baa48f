import type { FastifyHelmetOptions } from "@fastify/helmet";

/**
 * Security headers through @fastify/helmet, registered in the scope of the answers they guard
 * (the portal's and the console's pages, the attribution script, the referral link), never on
 * the JSON API. Helmet's defaults stay (nosniff, no referrer, same-origin opener and resource
 * policies, no framing by others, and the rest of its set), but for Strict-Transport-Security:
 * TLS ends in front of the gateway, and whether a domain and its subdomains are HTTPS-only is the
 * operator's edge to declare, not an answer of this service.
 */
export function securityHeaders(
  overrides: Pick<
    FastifyHelmetOptions,
    "contentSecurityPolicy" | "crossOriginResourcePolicy" | "referrerPolicy" | "xFrameOptions"
  > = {},
): FastifyHelmetOptions {
  return { strictTransportSecurity: false, ...overrides };
}
