import type { EmailDraft } from "./types.js";

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const dollars = (cents: number) =>
  `${cents < 0 ? "-" : ""}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;

/**
 * The welcome email of a registration (spec 6): the affiliate's referral code, and, when the
 * program has a public portal (PORTAL_URL), a link to its sign-in for this program.
 */
export function welcomeEmail(
  affiliate: { email: string; name: string },
  referralCode: string,
  portal?: { url: string; productId: string },
): EmailDraft {
  const greeting = affiliate.name ? `Hello ${affiliate.name},` : "Hello,";
  const signIn = portal ? `${portal.url}#product=${encodeURIComponent(portal.productId)}` : undefined;
  const dashboard = "See your clicks, commissions and payouts on your dashboard";
  return {
    template: "welcome",
    recipient: affiliate.email,
    subject: "Welcome to the affiliate program",
    text: `${greeting}\n\nYou have joined the affiliate program. Your referral code is ${referralCode}.\nShare it: every payment it brings earns you a commission.\n${signIn ? `${dashboard}: ${signIn}\n` : ""}`,
    html: `<p>${escapeHtml(greeting)}</p><p>You have joined the affiliate program. Your referral code is <strong>${escapeHtml(referralCode)}</strong>.</p><p>Share it: every payment it brings earns you a commission.</p>${signIn ? `<p><a href="${escapeHtml(signIn)}">${dashboard}</a>.</p>` : ""}`,
  };
}

/**
 * The sign-in email (contract section 14): a one-time link to the portal, `#code=…` (a fragment:
 * never sent to a server, so never in an access log), or the code to paste when the program has
 * no public portal address.
 */
export function affiliateLoginEmail(
  affiliate: { email: string; name: string },
  login: { code: string; programName: string; expiresAt: Date; portalUrl: string | undefined },
): EmailDraft {
  const greeting = affiliate.name ? `Hello ${affiliate.name},` : "Hello,";
  const minutes = "It works once, within 15 minutes. If you did not ask to sign in, ignore this email.";
  const link = login.portalUrl ? `${login.portalUrl}#code=${encodeURIComponent(login.code)}` : undefined;
  const program = `your ${login.programName} affiliate dashboard`;
  const text = link
    ? `Sign in to ${program}: ${link}`
    : `To sign in to ${program}, enter this code on the sign-in page: ${login.code}`;
  const html = link
    ? `<p><a href="${escapeHtml(link)}">Sign in to ${escapeHtml(program)}</a></p>`
    : `<p>To sign in to ${escapeHtml(program)}, enter this code on the sign-in page: <code>${escapeHtml(login.code)}</code></p>`;
  return {
    template: "affiliate_login",
    recipient: affiliate.email,
    subject: `Sign in to ${program}`,
    text: `${greeting}\n\n${text}\n${minutes}\n`,
    html: `<p>${escapeHtml(greeting)}</p>${html}<p>${escapeHtml(minutes)}</p>`,
  };
}

/** The refund notice (spec 4.9, contract 7): a full void or a clawback of a paid commission. */
export function refundNoticeEmail(
  affiliate: { email: string; name: string },
  refund: {
    commissionId: string;
    previousCents: number;
    newCents: number;
    clawbackCents: number;
    reason: string | null;
    currency: string;
  },
): EmailDraft {
  const greeting = affiliate.name ? `Hello ${affiliate.name},` : "Hello,";
  const change = `Commission ${refund.commissionId} went from ${dollars(refund.previousCents)} to ${dollars(refund.newCents)} ${refund.currency.toUpperCase()} after a refund of the payment.`;
  const clawback =
    refund.clawbackCents > 0
      ? `It was already paid: ${dollars(refund.clawbackCents)} ${refund.currency.toUpperCase()} will be deducted from your next payout.`
      : "";
  const reason = refund.reason ? `Reason given: ${refund.reason}` : "";
  const lines = [change, clawback, reason].filter(Boolean);
  return {
    template: "refund_notice",
    recipient: affiliate.email,
    subject: "A commission was refunded",
    text: `${greeting}\n\n${lines.join("\n")}\n`,
    html: `<p>${escapeHtml(greeting)}</p>${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join("")}`,
  };
}
