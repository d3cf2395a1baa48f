import type { Queryable } from "@affiliate/platform";
import type { Commission } from "../domain/types.js";

export interface PaymentRow {
  id: string;
  amountCents: number;
  refundedCents: number;
}

const paymentColumns = (sql: Queryable) => sql`id, amount_cents, refunded_cents`;

/**
 * Finds and locks, in one statement, the live payment a refund names: by a commission of it, or
 * by its external_id. Locking the payment row serialises the payment's refunds.
 */
export async function lockPaymentOf(
  sql: Queryable,
  productId: string,
  by: { commissionId: string } | { externalId: string },
): Promise<PaymentRow | undefined> {
  const [row] =
    "commissionId" in by
      ? await sql<PaymentRow[]>`
          select ${paymentColumns(sql)} from tracking_events
          where id = (select event_id from commissions where product_id = ${productId} and id = ${by.commissionId})
          for update`
      : await sql<PaymentRow[]>`
          select ${paymentColumns(sql)} from tracking_events
          where product_id = ${productId} and external_id = ${by.externalId} and event_type = 'payment'
          for update`;
  return row;
}

/**
 * Live payments of this customer with exactly this amount, newest first (at most `limit`),
 * locked: the caller refunds the one it finds, or refuses when there are several.
 */
export async function lockPaymentsByEmailAndAmount(
  sql: Queryable,
  productId: string,
  email: string,
  amountCents: number,
  limit: number,
): Promise<PaymentRow[]> {
  return sql<PaymentRow[]>`
    select ${paymentColumns(sql)} from tracking_events
    where product_id = ${productId} and event_type = 'payment' and customer_email = ${email} and amount_cents = ${amountCents}
    order by occurred_at desc, id desc limit ${limit}
    for update`;
}

export async function setPaymentRefunded(sql: Queryable, eventId: string, refundedCents: number): Promise<void> {
  await sql`update tracking_events set refunded_cents = ${refundedCents} where id = ${eventId}`;
}

export async function insertRefund(
  sql: Queryable,
  refund: {
    id: string;
    productId: string;
    eventId: string;
    commissionId: string;
    amountCents: number;
    reason: string | null;
    idempotencyKey: string | null;
  },
): Promise<void> {
  await sql`
    insert into refunds (id, product_id, event_id, commission_id, amount_cents, reason, idempotency_key)
    values (${refund.id}, ${refund.productId}, ${refund.eventId}, ${refund.commissionId}, ${refund.amountCents},
            ${refund.reason}, ${refund.idempotencyKey})`;
}

export async function setCommissionAmount(
  sql: Queryable,
  commission: Pick<Commission, "id">,
  change: { amountCents: number; status: Commission["status"]; reason: string | null },
): Promise<void> {
  await sql`
    update commissions set amount_cents = ${change.amountCents}, status = ${change.status},
      reason = coalesce(${change.reason}, reason), updated_at = now()
    where id = ${commission.id}`;
}
