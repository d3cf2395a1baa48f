import { DomainError, type Queryable } from "@affiliate/platform";
import type {
  Commission,
  CommissionReview,
  CommissionRule,
  CommissionStatus,
  FraudFlag,
  HoldReason,
  ReviewDecision,
} from "../domain/types.js";

/** A Commission's columns, of commission rows `c` joined to their payment event `e`. */
const commissionColumns = (sql: Queryable) => sql`
  c.id, c.product_id, c.partnership_id, c.event_id, c.level, c.parent_commission_id, c.amount_cents,
  c.original_amount_cents, c.status, c.hold_until, c.referral_code, e.customer_email,
  c.payment_amount_cents, c.payment_occurred_at, c.payout_id, c.reason, c.hold_reason, c.created_at,
  c.rule_source, c.rule_type, c.rule_rate_bps, c.rule_flat_cents, c.rule_payment_number, c.rule_first_payment_at,
  c.flags, c.review_decision, c.review_note, c.review_key, c.reviewed_at,
  e.attribution`;

/** A commission as its columns read: the frozen rule and the review in columns of their own. */
type CommissionRow = Omit<Commission, "rule" | "flags" | "review"> & {
  flags: FraudFlag[] | null;
  reviewDecision: ReviewDecision | null;
  reviewNote: string | null;
  reviewKey: string | null;
  reviewedAt: Date | null;
  ruleSource: CommissionRule["source"] | null;
  ruleType: CommissionRule["type"] | null;
  ruleRateBps: number | null;
  ruleFlatCents: number | null;
  rulePaymentNumber: number | null;
  ruleFirstPaymentAt: Date | null;
};

function toCommission(row: CommissionRow): Commission {
  const {
    ruleSource,
    ruleType,
    ruleRateBps,
    ruleFlatCents,
    rulePaymentNumber,
    ruleFirstPaymentAt,
    flags,
    reviewDecision,
    reviewNote,
    reviewKey,
    reviewedAt,
    ...commission
  } = row;
  const review: CommissionReview | null =
    reviewDecision && reviewedAt
      ? { decision: reviewDecision, note: reviewNote ?? "", key: reviewKey ?? "", reviewedAt }
      : null;
  const rule =
    ruleSource && ruleType && rulePaymentNumber !== null && ruleFirstPaymentAt
      ? {
          source: ruleSource,
          type: ruleType,
          rateBps: ruleRateBps,
          flatCents: ruleFlatCents,
          paymentNumber: rulePaymentNumber,
          firstPaymentAt: ruleFirstPaymentAt,
        }
      : null;
  return { ...commission, rule, flags: (flags ?? []).map(unfoldedFlag), review };
}

/**
 * A flag as stored: the column's JSON keys came back camelCased by the pool's transform, which
 * also reached into the evidence; the evidence keeps the names it was written with.
 */
function unfoldedFlag(flag: FraudFlag): FraudFlag {
  const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return {
    signal: flag.signal,
    evidence: Object.fromEntries(Object.entries(flag.evidence ?? {}).map(([key, value]) => [snake(key), value])),
  };
}

const toCommissions = (rows: readonly CommissionRow[]) => rows.map(toCommission);

const selectCommission = (sql: Queryable) => sql`
  select ${commissionColumns(sql)} from commissions c join tracking_events e on e.id = c.event_id`;

export interface NewCommission {
  id: string;
  productId: string;
  partnershipId: string;
  eventId: string;
  level: 1 | 2;
  parentCommissionId: string | null;
  amountCents: number;
  status: CommissionStatus;
  holdUntil: Date;
  referralCode: string;
  paymentAmountCents: number;
  paymentOccurredAt: Date;
  rule: CommissionRule;
  /** The payment's fraud flags; empty when none was raised. */
  flags: FraudFlag[];
  /** review: held for the merchant's review; null otherwise. */
  holdReason: Extract<HoldReason, "review"> | null;
  /** Why it was created rejected (by the fraud checks); null otherwise. */
  reason: string | null;
}

/** Inserts commissions (of any number of payments) and returns them as stored, in one statement. */
export async function insertCommissions(sql: Queryable, commissions: NewCommission[]): Promise<Commission[]> {
  if (commissions.length === 0) return [];
  return toCommissions(
    await sql<CommissionRow[]>`
    with c as (insert into commissions ${sql(
      commissions.map((c) => ({
        id: c.id,
        product_id: c.productId,
        partnership_id: c.partnershipId,
        event_id: c.eventId,
        level: c.level,
        parent_commission_id: c.parentCommissionId,
        original_amount_cents: c.amountCents,
        amount_cents: c.amountCents,
        status: c.status,
        hold_until: c.holdUntil,
        referral_code: c.referralCode,
        payment_amount_cents: c.paymentAmountCents,
        payment_occurred_at: c.paymentOccurredAt,
        approved_at: c.status === "approved" ? new Date() : null,
        rule_source: c.rule.source,
        rule_type: c.rule.type,
        rule_rate_bps: c.rule.rateBps,
        rule_flat_cents: c.rule.flatCents,
        rule_payment_number: c.rule.paymentNumber,
        rule_first_payment_at: c.rule.firstPaymentAt,
        flags: c.flags.length > 0 ? sql.json(c.flags as never) : null,
        hold_reason: c.holdReason,
        reason: c.reason,
      })),
    )} returning *)
    select ${commissionColumns(sql)} from c join tracking_events e on e.id = c.event_id order by c.level`,
  );
}

export async function getCommissionOrThrow(sql: Queryable, productId: string, id: string): Promise<Commission> {
  const [row] = await sql<CommissionRow[]>`${selectCommission(sql)} where c.product_id = ${productId} and c.id = ${id}`;
  if (!row) throw new DomainError("not_found", `Commission ${id} not found`);
  return toCommission(row);
}

/** The product's commissions among these ids, in no particular order; unknown ids are left out. */
export async function getCommissions(sql: Queryable, productId: string, ids: readonly string[]): Promise<Commission[]> {
  if (ids.length === 0) return [];
  return toCommissions(
    await sql<CommissionRow[]>`${selectCommission(sql)} where c.product_id = ${productId} and c.id in ${sql(ids)}`,
  );
}

/** The commissions of these payments, level 1 before level 2 within each payment. */
export async function getCommissionsOfEvents(sql: Queryable, eventIds: string[]): Promise<Commission[]> {
  if (eventIds.length === 0) return [];
  return toCommissions(
    await sql<
      CommissionRow[]
    >`${selectCommission(sql)} where c.event_id in ${sql(eventIds)} order by c.event_id, c.level`,
  );
}

/** The payment's commissions, locked, level 1 first (the order every locker of a family uses). */
export async function lockCommissionsOfEvent(sql: Queryable, eventId: string): Promise<Commission[]> {
  return toCommissions(
    await sql<CommissionRow[]>`${selectCommission(sql)} where c.event_id = ${eventId} order by c.level for update of c`,
  );
}

/** The commission and its level-2 children, locked, parent first. */
export async function lockCommissionFamily(sql: Queryable, productId: string, id: string): Promise<Commission[]> {
  const locked = await sql<{ id: string }[]>`
    select id from commissions
    where product_id = ${productId} and (id = ${id} or parent_commission_id = ${id})
    order by level for update`;
  if (!locked.some((row) => row.id === id)) throw new DomainError("not_found", `Commission ${id} not found`);
  return toCommissions(
    await sql<
      CommissionRow[]
    >`${selectCommission(sql)} where c.id in ${sql(locked.map((row) => row.id))} order by c.level`,
  );
}

export async function setCommissionStatus(
  sql: Queryable,
  ids: string[],
  change: { status: CommissionStatus; reason?: string | undefined },
): Promise<void> {
  await sql`
    update commissions set status = ${change.status},
      reason = coalesce(${change.reason ?? null}, reason),
      approved_at = case when ${change.status} = 'approved' then now() else approved_at end,
      updated_at = now()
    where id in ${sql(ids)}`;
}

/**
 * Approves up to `limit` pending commissions whose hold has ended and that no dispute holds.
 * SKIP LOCKED lets several ledger replicas sweep at once without waiting on, or
 * double-approving, each other's rows; a commission a hold is being put on (locked) is skipped
 * until the next sweep, which reads it held.
 */
export async function approveDueCommissions(sql: Queryable, now: Date, limit: number): Promise<Commission[]> {
  const approved = await sql<{ id: string }[]>`
    update commissions set status = 'approved', approved_at = ${now}, updated_at = ${now}
    where id in (
      select id from commissions where status = 'pending' and hold_reason is null and hold_until <= ${now}
      order by hold_until limit ${limit} for update skip locked)
    returning id`;
  if (approved.length === 0) return [];
  return toCommissions(
    await sql<CommissionRow[]>`${selectCommission(sql)} where c.id in ${sql(approved.map((row) => row.id))}`,
  );
}

export async function listCommissions(
  sql: Queryable,
  query: {
    productId: string;
    status?: CommissionStatus | undefined;
    partnershipId?: string | undefined;
    payoutId?: string | undefined;
    flagged?: boolean | undefined;
    afterId?: string | undefined;
    limit: number;
  },
): Promise<Commission[]> {
  return toCommissions(
    await sql<CommissionRow[]>`
    ${selectCommission(sql)}
    where c.product_id = ${query.productId}
      ${query.status ? sql`and c.status = ${query.status}` : sql``}
      ${query.partnershipId ? sql`and c.partnership_id = ${query.partnershipId}` : sql``}
      ${query.payoutId ? sql`and c.payout_id = ${query.payoutId}` : sql``}
      ${query.flagged ? sql`and c.hold_reason = 'review'` : sql``}
      ${query.afterId ? sql`and c.id < ${query.afterId}` : sql``}
    order by c.id desc
    limit ${query.limit}`,
  );
}

/**
 * Keeps a review on a commission (the caller holds its row lock): the decision, note, key and
 * time, the status it leaves, and the hold that remains (null, or a dispute's).
 */
export async function recordReview(
  sql: Queryable,
  id: string,
  review: CommissionReview & {
    status: CommissionStatus;
    holdReason: HoldReason | null;
    /** The new reason (a rejection's note); undefined keeps the stored one. */
    reason?: string | undefined;
  },
): Promise<void> {
  await sql`
    update commissions set review_decision = ${review.decision}, review_note = ${review.note},
      review_key = ${review.key}, reviewed_at = ${review.reviewedAt},
      status = ${review.status}, hold_reason = ${review.holdReason},
      reason = coalesce(${review.reason ?? null}, reason),
      approved_at = case when ${review.status} = 'approved' and status <> 'approved' then ${review.reviewedAt} else approved_at end,
      updated_at = now()
    where id = ${id}`;
}
