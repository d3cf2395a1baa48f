/**
 * The affiliate API (contract section 14) as the portal reads it: same origin, a bearer token,
 * never a cookie. Answers are parsed with every `…_cents` field as an exact bigint.
 */
import { parseExactJson } from "./exact-json.js";

export type Period = "7d" | "30d" | "90d" | "12m";
export type CommissionStatus = "pending" | "approved" | "paid" | "rejected" | "refunded";
export type PayoutStatus = "pending" | "approved" | "failed" | "processing" | "completed";

export interface Me {
  partnership_id: string;
  status: string;
  referral_code: string;
  referral_link: string | null;
  affiliate: { name: string; email: string };
  program: { name: string; currency: string; hold_days: number; payout_minimum_cents?: bigint };
}

export interface Metrics {
  clicks: number;
  signups: number;
  conversions: number;
  revenue_cents: bigint;
  commissions_cents: bigint;
}

export interface Stats extends Metrics {
  period: Period;
  conversion_rate: number;
  previous_period: Metrics;
  timeseries: (Metrics & { date: string })[];
}

export interface Commission {
  id: string;
  status: CommissionStatus;
  level: number;
  amount_cents: bigint;
  payment_amount_cents: bigint;
  hold_until: string;
  hold_reason: string | null;
  created_at: string;
  payout_id: string | null;
  refund_reason: string | null;
  customer: string | null;
}

/** A payout with its lines (commissions, then clawbacks), which sum exactly to amount_cents. */
export interface Payout {
  id: string;
  status: PayoutStatus;
  amount_cents: bigint;
  adjustment_cents: bigint;
  commission_count: number;
  created_at: string;
  paid_at: string | null;
  lines: PayoutLine[];
}

export interface PayoutLine {
  kind: "commission" | "adjustment";
  id: string;
  amount_cents: bigint;
  description: string;
}

/** How the affiliate is paid, as the API shows it: personal details masked. */
export interface PayoutMethod {
  type: "paypal" | "wise";
  email: string | null;
  account_holder_name: string | null;
  iban: string | null;
  currency: string | null;
  receiver_type: "person" | "institution" | null;
  updated_at: string;
}

export type PayoutMethodBody =
  | { type: "paypal"; email: string }
  | {
      type: "wise";
      account_holder_name: string;
      iban?: string;
      email?: string;
      currency?: string;
      receiver_type?: "person" | "institution";
    };

export interface Page<T> {
  data: T[];
  pagination: { next_cursor: string | null; has_more: boolean };
}

export interface IssuedToken {
  token: string;
  expires_at: string;
}

/** An answer other than 2xx: its status, the API's `error` text, and Retry-After when given. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterSeconds: number | null,
    /** A validation answer's problems by field (the payout-method form shows them beside each field). */
    readonly fieldErrors: Record<string, string[]> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The request never got an answer (offline, the server down, or too slow). */
export class NetworkError extends Error {
  constructor(cause: unknown) {
    super("The server could not be reached", { cause });
    this.name = "NetworkError";
  }
}

const requestTimeoutMs = 15_000;

async function call<T>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  options: { token?: string; body?: unknown } = {},
) {
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "omit",
      cache: "no-store",
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
  } catch (error) {
    throw new NetworkError(error);
  }
  const text = await response.text();
  const parsed = text === "" ? undefined : parseBody(text);
  if (!response.ok) {
    const retryAfter = Number(response.headers.get("retry-after"));
    const message =
      typeof parsed === "object" && parsed !== null && typeof (parsed as { error?: unknown }).error === "string"
        ? (parsed as { error: string }).error
        : `HTTP ${response.status}`;
    const fieldErrors = (parsed as { details?: { fieldErrors?: Record<string, string[]> } } | undefined)?.details
      ?.fieldErrors;
    throw new ApiError(
      response.status,
      message,
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
      fieldErrors ?? {},
    );
  }
  return parsed as T;
}

function parseBody(text: string): unknown {
  try {
    return parseExactJson(text);
  } catch {
    return undefined;
  }
}

/** Asks for an emailed sign-in link: the API answers 202 whatever the email. */
export async function requestSignInLink(productId: string, email: string): Promise<void> {
  await call("POST", "/affiliate/v1/login", { body: { product_id: productId, email } });
}

/** Trades the one-time code of an emailed link for a token. A used or expired code is a 401. */
export async function exchangeSignInCode(code: string): Promise<IssuedToken> {
  return (await call<{ data: IssuedToken }>("POST", "/affiliate/v1/login/exchange", { body: { code } })).data;
}

/** The routes a signed-in affiliate reads, each scoped by the token to its own partnership. */
export class AffiliateApi {
  constructor(private readonly token: string) {}

  async me(): Promise<Me> {
    return (await this.#get<{ data: Me }>("/affiliate/v1/me")).data;
  }

  async stats(period: Period): Promise<Stats> {
    return (await this.#get<{ data: Stats }>(`/affiliate/v1/stats?period=${period}`)).data;
  }

  commissions(cursor?: string): Promise<Page<Commission>> {
    return this.#get(`/affiliate/v1/commissions${pageQuery(cursor)}`);
  }

  payouts(cursor?: string): Promise<Page<Payout>> {
    return this.#get(`/affiliate/v1/payouts${pageQuery(cursor)}`);
  }

  /** How the affiliate is paid (masked), or null when it has set nothing yet. */
  async payoutMethod(): Promise<PayoutMethod | null> {
    try {
      return (await this.#get<{ data: PayoutMethod }>("/affiliate/v1/payout-method")).data;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  async setPayoutMethod(body: PayoutMethodBody): Promise<PayoutMethod> {
    return (await call<{ data: PayoutMethod }>("PUT", "/affiliate/v1/payout-method", { token: this.token, body })).data;
  }

  async deletePayoutMethod(): Promise<void> {
    await call("DELETE", "/affiliate/v1/payout-method", { token: this.token });
  }

  #get<T>(path: string): Promise<T> {
    return call<T>("GET", path, { token: this.token });
  }
}

const pageSize = 20;
const pageQuery = (cursor?: string) => `?limit=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
