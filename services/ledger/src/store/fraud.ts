import type { Queryable } from "@affiliate/platform";
import type { EarlierClick } from "../domain/fraud/signals.js";

/**
 * The counted live clicks (no fraud flag) that each query's click may duplicate: those of the
 * same product and partnership, by the same visitor or address hash, in [from, to]. One
 * statement for them all, each branch on its partial index; every match is answered with the
 * positions of the queries it may answer.
 */
export async function countedClicksNear(
  sql: Queryable,
  queries: {
    productId: string;
    partnershipId: string;
    visitorId: string | null;
    ipHash: string | null;
    from: Date;
    to: Date;
  }[],
): Promise<(EarlierClick & { position: number })[]> {
  if (queries.length === 0) return [];
  return sql<(EarlierClick & { position: number })[]>`
    select q.position, c.id, c.visitor_id, c.ip_hash, c.occurred_at
    from unnest(${queries.map((_, i) => i)}::int[], ${queries.map((q) => q.productId)}::text[],
                ${queries.map((q) => q.partnershipId)}::text[], ${queries.map((q) => q.visitorId)}::text[],
                ${queries.map((q) => q.ipHash)}::text[], ${queries.map((q) => q.from.toISOString())}::timestamptz[],
                ${queries.map((q) => q.to.toISOString())}::timestamptz[])
      as q (position, product_id, partnership_id, visitor_id, ip_hash, from_at, to_at)
    cross join lateral (
      (select id, visitor_id, ip_hash, occurred_at from tracking_events
       where product_id = q.product_id and event_type = 'click' and visitor_id = q.visitor_id
         and occurred_at between q.from_at and q.to_at and partnership_id = q.partnership_id and flags is null)
      union
      (select id, visitor_id, ip_hash, occurred_at from tracking_events
       where product_id = q.product_id and event_type = 'click' and ip_hash = q.ip_hash and ip_hash is not null
         and occurred_at between q.from_at and q.to_at and partnership_id = q.partnership_id and flags is null)
    ) c`;
}

/**
 * Each partnership's level-1 commissions' payments since `since` (by payment time): their sum
 * and the part refunded, exact (numeric in SQL, bigint here). One statement.
 */
export async function refundHistories(
  sql: Queryable,
  queries: { productId: string; partnershipId: string; since: Date }[],
): Promise<Map<string, { paymentsCents: bigint; refundedCents: bigint }>> {
  const found = new Map<string, { paymentsCents: bigint; refundedCents: bigint }>();
  if (queries.length === 0) return found;
  const rows = await sql<{ partnershipId: string; paymentsCents: string; refundedCents: string }[]>`
    select q.partnership_id, h.payments_cents::text, h.refunded_cents::text
    from unnest(${queries.map((q) => q.productId)}::text[], ${queries.map((q) => q.partnershipId)}::text[],
                ${queries.map((q) => q.since.toISOString())}::timestamptz[]) as q (product_id, partnership_id, since)
    cross join lateral (
      select coalesce(sum(e.amount_cents), 0)::numeric as payments_cents,
             coalesce(sum(e.refunded_cents), 0)::numeric as refunded_cents
      from commissions c join tracking_events e on e.id = c.event_id
      where c.product_id = q.product_id and c.partnership_id = q.partnership_id and c.level = 1
        and c.payment_occurred_at >= q.since
    ) h`;
  for (const row of rows) {
    found.set(row.partnershipId, {
      paymentsCents: BigInt(row.paymentsCents),
      refundedCents: BigInt(row.refundedCents),
    });
  }
  return found;
}
