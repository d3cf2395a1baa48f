/**
 * The console's sign-in (contract section 19). The secret key is used once, to open a session;
 * the session token then lives in this module's memory only: never in storage, a cookie or the
 * address bar, so a reload or a closed tab ends it and nothing is left for the next person at the
 * screen. Every call goes through @affiliate/client, the client merchants use.
 */
import { ownOriginFetch } from "@affiliate/browser-kit";
import { AffiliateClient } from "@affiliate/client";

export interface Session {
  client: AffiliateClient;
  expiresAt: Date;
}

/** The console's own origin: the gateway that served the page answers the API too. */
const baseUrl = () => location.origin;

/** Eight hours: a working day. The server caps it at twelve. */
const sessionSeconds = 8 * 3600;

/**
 * Trades the secret key for a console session. The key goes no further than this call: the
 * client made with it is dropped when this returns.
 */
export async function openSession(secretKey: string): Promise<Session> {
  const withKey = new AffiliateClient({
    baseUrl: baseUrl(),
    apiKey: secretKey,
    retry: { maxAttempts: 3 },
    fetch: ownOriginFetch,
  });
  const { data } = await withKey.console.sessions.open({ ttl_seconds: sessionSeconds });
  return sessionOf(data.token, data.expires_at);
}

/** A session from its token: every call of its client is signed in with it. */
export function sessionOf(token: string, expiresAt: string): Session {
  return {
    client: new AffiliateClient({
      baseUrl: baseUrl(),
      consoleToken: token,
      retry: { maxAttempts: 3 },
      fetch: ownOriginFetch,
    }),
    expiresAt: new Date(expiresAt),
  };
}
