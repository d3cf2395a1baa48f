import type { EmailDraft } from "./types.js";

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const dollars = (cents: number) =>
  `${cents < 0 ? "-" : ""}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, "0")}`;

/** The welcome email of a registration (spec 6): the affiliate's referral code. */
export function welcomeEmail(affiliate: { email: string; name: string }, referralCode: string): EmailDraft {
  const greeting = affiliate.name ? `Hello ${affiliate.name},` : "Hello,";
  return {
    template: "welcome",
    recipient: affiliate.email,
    subject: "Welcome to the affiliate program",
    text: `${greeting}\n\nYou have joined the affiliate program. Your referral code is ${referralCode}.\nShare it: every payment it brings earns you a commission.\n`,
    html: `<p>${escapeHtml(greeting)}</p><p>You have joined the affiliate program. Your referral code is <strong>${escapeHtml(referralCode)}</strong>.</p><p>Share it: every payment it brings earns you a commission.</p>`,
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
