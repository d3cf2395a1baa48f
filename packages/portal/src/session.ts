/**
 * Where the portal keeps its token: sessionStorage, so it lives as long as the tab and no longer,
 * is never sent by the browser on its own (no cookie), and is readable only by this origin's
 * scripts, of which the Content-Security-Policy admits only the portal's own.
 */
/** A token and, when the portal learned it, when it expires (a `#token=` link does not say). */
export interface Session {
  token: string;
  expires_at: string | null;
}

const storageKey = "affiliate-portal.session";

export function savedSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(storageKey);
    if (!raw) return null;
    const session = JSON.parse(raw) as Partial<Session>;
    if (typeof session.token !== "string") return null;
    return { token: session.token, expires_at: typeof session.expires_at === "string" ? session.expires_at : null };
  } catch {
    return null;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(storageKey, JSON.stringify(session));
}

export function forgetSession(): void {
  sessionStorage.removeItem(storageKey);
}

/** Whether the token's own expiry has passed (the API is the judge; this only saves a round trip). */
export function hasExpired(session: Session, now = Date.now()): boolean {
  if (session.expires_at === null) return false;
  const expiresAt = Date.parse(session.expires_at);
  return Number.isFinite(expiresAt) && expiresAt <= now;
}

/** What the address's fragment carries: `#token=apt_…`, `#code=…` (an emailed link), `#product=prd_…`. */
export interface SignInFragment {
  token?: string;
  code?: string;
  product?: string;
}

/**
 * Reads the fragment and removes it from the address bar and the history, so that a token or
 * code is not left where the next person at the screen, or a bookmark, would find it. The
 * fragment never reaches a server, nor a Referer header.
 */
export function takeSignInFragment(): SignInFragment {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const fragment: SignInFragment = {};
  for (const name of ["token", "code", "product"] as const) {
    const value = params.get(name);
    if (value) fragment[name] = value;
  }
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  return fragment;
}
