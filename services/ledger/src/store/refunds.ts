import { DomainError, type Queryable } from "@affiliate/platform";
import type { Commission } from "../domain/types.js";

export interface PaymentRow {
  id: string;
  amountCents: number;
  refundedCents: number;
}

/** Locks the payment (serialising its refunds) and returns it. */
export async function lockPayment(sql: Queryable, eventId: string): Promise<PaymentRow> {
  const [row] = await sql<PaymentRow[]>`
    select id, amount_cents, refunded_cents from tracking_events where id = ${eventId} for update`;
  if (!row) throw new DomainError("not_found", "No payment matches the identifier");
  return row;
}

export async function paymentOfCommission(
  sql: Queryable,
  productId: string,
  commissionId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ eventId: string }[]>`
    select event_id from commissions where product_id = ${productId} and id = ${commissionId}`;
  return row?.eventId;
}

export async function paymentByExternalId(
  sql: Queryable,
  productId: string,
  externalId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`
    select id from tracking_events
    where product_id = ${productId} and external_id = ${externalId} and event_type = 'payment'`;
  return row?.id;
}

/** Live payments of this customer with exactly this amount, newest first (at most `limit`). */
export async function paymentsByEmailAndAmount(
  sql: Queryable,
  productId: string,
  email: string,
  amountCents: number,
  limit: number,
): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from tracking_events
    where product_id = ${productId} and event_type = 'payment' and customer_email = ${email} and amount_cents = ${amountCents}
    order by occurred_at desc, id desc limit ${limit}`;
  return rows.map((row) => row.id);
}

/** The payment's commissions (level 1 first), locked. */
export async function lockCommissionsOfPayment(sql: Queryable, eventId: string): Promise<void> {
  await sql`select id from commissions where event_id = ${eventId} order by level for update`;
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
