import type { Queryable } from "@affiliate/platform";

/**
 * Links claimed commissions to their payouts, in one statement. A commission already linked (to
 * its payout by a refund event that arrived first) keeps its row: that one is at least as recent
 * as the claim. Inserted in commission order, so two inserts of an overlapping set wait for
 * each other rather than deadlock.
 */
export async function insertLinks(
  sql: Queryable,
  links: { payoutId: string; commissionId: string; amountCents: number }[],
): Promise<void> {
  if (links.length === 0) return;
  await sql`
    insert into payout_commissions (payout_id, commission_id, amount_cents)
    select link.payout_id, link.commission_id, link.amount_cents
    from unnest(${links.map((l) => l.payoutId)}::text[], ${links.map((l) => l.commissionId)}::text[],
                ${links.map((l) => l.amountCents)}::int8[]) as link(payout_id, commission_id, amount_cents)
    order by link.commission_id
    on conflict (commission_id) do nothing`;
}

export interface Link {
  commissionId: string;
  payoutId: string;
  amountCents: number;
  paymentRefundedCentsSeen: number;
}

/** The commission's link; read it with its payout locked, so it cannot change underneath. */
export async function getLink(sql: Queryable, commissionId: string): Promise<Link | undefined> {
  const [row] = await sql<Link[]>`
    select commission_id, payout_id, amount_cents, payment_refunded_cents_seen
    from payout_commissions where commission_id = ${commissionId}`;
  return row;
}

/**
 * Applies a refund to a link when it is newer than what the link has seen. A commission's amount
 * only falls as its payment's refunded total grows, so the lower amount always wins. Returns
 * whether the link changed.
 */
export async function applyRefundToLink(
  sql: Queryable,
  commissionId: string,
  refund: { newAmountCents: number; paymentRefundedCents: number },
): Promise<boolean> {
  const rows = await sql`
    update payout_commissions set
      amount_cents = least(amount_cents, ${refund.newAmountCents}),
      payment_refunded_cents_seen = ${refund.paymentRefundedCents}
    where commission_id = ${commissionId} and payment_refunded_cents_seen < ${refund.paymentRefundedCents}
    returning commission_id`;
  return rows.length > 0;
}

/** Links a commission to a draft with the amount a refund event reports (it beat the claim's answer). */
export async function linkFromRefund(
  sql: Queryable,
  link: { payoutId: string; commissionId: string; amountCents: number; paymentRefundedCents: number },
): Promise<void> {
  await sql`
    insert into payout_commissions (payout_id, commission_id, amount_cents, payment_refunded_cents_seen)
    values (${link.payoutId}, ${link.commissionId}, ${link.amountCents}, ${link.paymentRefundedCents})
    on conflict (commission_id) do nothing`;
}
