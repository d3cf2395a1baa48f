import type { Queryable } from "@affiliate/platform";

/**
 * THE INVARIANT (contract 8; the README carries the same SQL): every payout other than a draft
 * has an amount equal to the sum of its links plus its linked adjustments, an adjustment_cents
 * equal to the latter, and a commission_count equal to its links. Open payouts are recomputed on
 * every change; closed ones never change, so they keep it too. Returns the offending payouts:
 * none when healthy.
 */
export const invariantQuery = `
select p.id, p.status, p.amount_cents, p.adjustment_cents, p.commission_count,
       coalesce(l.total, 0) + coalesce(a.total, 0) as expected_amount_cents,
       coalesce(a.total, 0) as expected_adjustment_cents,
       coalesce(l.count, 0) as expected_commission_count
from payouts p
left join (select payout_id, sum(amount_cents) as total, count(*) as count
           from payout_commissions group by payout_id) l on l.payout_id = p.id
left join (select payout_id, sum(amount_cents) as total
           from adjustments where payout_id is not null group by payout_id) a on a.payout_id = p.id
where p.status <> 'draft'
  and (p.amount_cents <> coalesce(l.total, 0) + coalesce(a.total, 0)
       or p.adjustment_cents <> coalesce(a.total, 0)
       or p.commission_count <> coalesce(l.count, 0))
order by p.id`;

export function payoutInvariantViolations(sql: Queryable) {
  return sql.unsafe<Record<string, unknown>[]>(invariantQuery);
}
