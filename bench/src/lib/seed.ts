import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  addEventToRollups,
  type CommissionStatus,
  commissionAmount,
  type EventRow,
  foldActivityDeltas,
  foldPartnershipDeltas,
  type NewCommission,
  RollupChanges,
} from "@affiliate/ledger/seeding";
import { newId, type Queryable } from "@affiliate/platform";
import type { Sql } from "postgres";

/**
 * Bulk seeding straight into the services' schemas: going through the API would take minutes
 * for what SQL does in seconds, and the measured reads do not care how the rows got there as
 * long as they are the services' own. So the rows are made by the ledger's own functions: its
 * ids, its money rounding, and its rollup changes (daily, hourly, per partnership), written a
 * transaction's worth at a time as the ledger writes them; only the events and commissions
 * themselves go in by COPY.
 */

export { newId };

/** Rows per multi-row INSERT: ~5 columns x 5,000 stays well under Postgres' 65,535 parameters. */
const rowsPerStatement = 5000;

export interface SeededPartnership {
  id: string;
  referralCode: string;
}

/**
 * `count` active partnerships in one product, each with an affiliate of its own. Ids are
 * generated in order, so the last row is the newest, as if they had registered one by one.
 * `tag` keeps emails unique when several products are seeded in one database.
 */
export async function seedPartnerships(
  sql: Sql,
  productId: string,
  count: number,
  tag: string,
): Promise<SeededPartnership[]> {
  const seeded: SeededPartnership[] = [];
  for (let start = 0; start < count; start += rowsPerStatement) {
    const size = Math.min(rowsPerStatement, count - start);
    const affiliates = [];
    const partnerships = [];
    for (let i = start; i < start + size; i++) {
      const affiliateId = newId("aff");
      const partnership = { id: newId("ptn"), referralCode: `${tag}-${i}` };
      affiliates.push({ id: affiliateId, email: `${tag}-${i}@bench.invalid`, name: `Bench Affiliate ${i}` });
      partnerships.push({
        id: partnership.id,
        product_id: productId,
        affiliate_id: affiliateId,
        status: "active",
        referral_code: partnership.referralCode,
      });
      seeded.push(partnership);
    }
    // Affiliates first: partnerships reference them.
    await sql`insert into partners.affiliates ${sql(affiliates)}`;
    await sql`insert into partners.partnerships ${sql(partnerships)}`;
  }
  // A service would have had autovacuum analyze the tables long ago; right after a bulk load the
  // planner would otherwise guess from an empty-table estimate.
  await sql`analyze partners.affiliates`;
  await sql`analyze partners.partnerships`;
  return seeded;
}

export interface EventTotals {
  events: number;
  clicks: number;
  signups: number;
  conversions: number;
  revenueCents: number;
  commissionsCents: number;
}

const dayMs = 24 * 3600 * 1000;
const commissionRateBps = 2000; // the program default (contract section 3)
const holdDays = 30;

/** COPY text format: tab-separated, \N for null (our values never hold tabs or backslashes). */
const copyLine = (values: (string | number | null)[]) =>
  `${values.map((value) => (value === null ? "\\N" : String(value))).join("\t")}\n`;

/**
 * Yields COPY text in chunks of lines rather than one line per chunk: a million tiny writes
 * would cost more in stream overhead than the COPY itself.
 */
async function* chunked(lines: Iterable<string>, linesPerChunk = 5000): AsyncGenerator<string> {
  let chunk = "";
  let count = 0;
  for (const line of lines) {
    chunk += line;
    if (++count === linesPerChunk) {
      yield chunk;
      chunk = "";
      count = 0;
    }
  }
  if (chunk) yield chunk;
}

async function copyInto(sql: Sql, table: string, columns: string[], lines: Iterable<string>): Promise<void> {
  const writable = await sql.unsafe(`copy ${table} (${columns.join(", ")}) from stdin`).writable();
  await pipeline(Readable.from(chunked(lines)), writable);
}

/** Events per transaction when the ledger records a batch (TrackBatch takes at most 500). */
const eventsPerTransaction = 500;

/**
 * The rollup changes of seeded rows, gathered as the ledger gathers a transaction's (RollupChanges)
 * one transaction's worth of events at a time, written as the ledger writes them (deltas), then
 * folded into the rollups as the ledger's compaction folds them: a long-lived ledger has folded
 * its history, and keeps only the last fraction of a second's deltas.
 */
class SeededRollups {
  private readonly done: RollupChanges[] = [];
  private current = new RollupChanges();
  private eventsInCurrent = 0;

  /** The changes of the transaction the next event belongs to. */
  next(): RollupChanges {
    if (this.eventsInCurrent === eventsPerTransaction) {
      this.done.push(this.current);
      this.current = new RollupChanges();
      this.eventsInCurrent = 0;
    }
    this.eventsInCurrent++;
    return this.current;
  }

  /** Writes every transaction's changes, a few transactions at a time. */
  async write(sql: Sql, concurrency = 4): Promise<void> {
    const queue = [...this.done, this.current];
    const worker = async () => {
      for (let changes = queue.shift(); changes; changes = queue.shift()) {
        const pending = changes;
        await sql.begin(async (tx) => {
          await tx`set local search_path = ledger`;
          await pending.flush(tx as unknown as Queryable);
        });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await foldSeededDeltas(sql);
  }
}

/**
 * Folds every rollup delta into the rollups with the ledger's own statements, under the ledger
 * compaction's lock (waiting for it, if a running ledger is folding), a batch per transaction.
 */
async function foldSeededDeltas(sql: Sql): Promise<void> {
  for (;;) {
    const moved = await sql.begin(async (tx) => {
      await tx`set local search_path = ledger`;
      await tx`select pg_advisory_xact_lock(hashtext('ledger.rollup_compaction'))`;
      const ledgerTx = tx as unknown as Queryable;
      return (await foldActivityDeltas(ledgerTx, 5000)) + (await foldPartnershipDeltas(ledgerTx, 5000));
    });
    if (moved === 0) return;
  }
}

/** A live event as the ledger stores it, with no customer data beyond what is given. */
const eventRow = (fields: Partial<EventRow> & Pick<EventRow, "productId" | "eventType" | "occurredAt">): EventRow => ({
  id: newId("evt"),
  partnershipId: null,
  visitorId: null,
  customerEmail: null,
  providerCustomerId: null,
  amountCents: null,
  externalId: null,
  ip: null,
  ipHash: null,
  referrerHost: null,
  attribution: null,
  userAgent: null,
  ...fields,
});

/** The tracking_events columns both seeders COPY, in the order of their lines. */
const eventColumns = [
  "id",
  "product_id",
  "event_type",
  "partnership_id",
  "visitor_id",
  "customer_email",
  "provider_customer_id",
  "amount_cents",
  "external_id",
  "occurred_at",
];

const eventLine = (e: EventRow) =>
  copyLine([
    e.id,
    e.productId,
    e.eventType,
    e.partnershipId,
    e.visitorId,
    e.customerEmail,
    e.providerCustomerId,
    e.amountCents,
    e.externalId,
    e.occurredAt.toISOString(),
  ]);

/** The commissions columns both seeders COPY, in the order of commissionLine. */
const commissionColumns = [
  "id",
  "product_id",
  "partnership_id",
  "event_id",
  "level",
  "parent_commission_id",
  "original_amount_cents",
  "amount_cents",
  "status",
  "hold_until",
  "referral_code",
  "payment_amount_cents",
  "payment_occurred_at",
  "approved_at",
  "rule_source",
  "rule_type",
  "rule_rate_bps",
  "rule_flat_cents",
  "rule_payment_number",
  "rule_first_payment_at",
];

const commissionLine = (c: NewCommission) =>
  copyLine([
    c.id,
    c.productId,
    c.partnershipId,
    c.eventId,
    c.level,
    c.parentCommissionId,
    c.amountCents,
    c.amountCents,
    c.status,
    c.holdUntil.toISOString(),
    c.referralCode,
    c.paymentAmountCents,
    c.paymentOccurredAt.toISOString(),
    c.status === "approved" ? c.holdUntil.toISOString() : null,
    c.rule.source,
    c.rule.type,
    c.rule.rateBps,
    c.rule.flatCents,
    c.rule.paymentNumber,
    c.rule.firstPaymentAt.toISOString(),
  ]);

/** A commission of a payment, `approved` once its hold is over (by `now`), as the ledger makes it. */
function commissionOf(
  payment: EventRow,
  payee: SeededPartnership,
  level: 1 | 2,
  rateBps: number,
  parentCommissionId: string | null,
  now: number,
): NewCommission {
  const holdUntil = new Date(payment.occurredAt.getTime() + holdDays * dayMs);
  const status: CommissionStatus = holdUntil.getTime() <= now ? "approved" : "pending";
  const paymentCents = payment.amountCents ?? 0;
  return {
    id: newId("com"),
    productId: payment.productId,
    partnershipId: payee.id,
    eventId: payment.id,
    level,
    parentCommissionId,
    amountCents: commissionAmount(paymentCents, rateBps),
    status,
    holdUntil,
    referralCode: payee.referralCode,
    paymentAmountCents: paymentCents,
    paymentOccurredAt: payment.occurredAt,
    flags: [],
    holdReason: null,
    reason: null,
    // The program's percentage; every seeded payment is its customer's first (the bench sets no
    // limits, so no payment counter is seeded).
    rule: {
      source: "program",
      type: "percent",
      rateBps,
      flatCents: null,
      paymentNumber: 1,
      firstPaymentAt: payment.occurredAt,
    },
  };
}

/**
 * `count` live tracking events of one product spread evenly over the last 364 days (not 365, so
 * that the whole history stays inside a 12m window asked for minutes later), plus `today` more
 * between UTC midnight and a minute ago, with what the ledger would have written alongside them:
 * a level-1 commission per payment and the rollups (daily, hourly, per partnership), summing
 * exactly these events. Mix: 80% clicks, 15% signups, 5% attributed payments.
 */
export async function seedEvents(
  sql: Sql,
  productId: string,
  partnerships: readonly SeededPartnership[],
  count: number,
  options: { today?: number } = {},
): Promise<EventTotals> {
  const now = Date.now();
  const today = options.today ?? 0;
  const total = count + today;
  const totals: EventTotals = {
    events: total,
    clicks: 0,
    signups: 0,
    conversions: 0,
    revenueCents: 0,
    commissionsCents: 0,
  };
  const rollups = new SeededRollups();
  const commissions: string[] = [];

  // Oldest first, as events arrive in production: a day's events then sit in neighbouring heap
  // pages, and a transaction's worth of them in one or two hours' rollup rows.
  const sinceMidnight =
    now - 60_000 - Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  const offsets = new Float64Array(total);
  for (let i = 0; i < count; i++) offsets[i] = 60_000 + Math.floor(Math.random() * 364 * dayMs);
  for (let i = count; i < total; i++) offsets[i] = 60_000 + Math.floor(Math.random() * Math.max(0, sinceMidnight));
  offsets.sort().reverse();

  function* eventLines(): Generator<string> {
    for (let i = 0; i < total; i++) {
      const occurredAt = new Date(now - (offsets[i] ?? 0));
      const partnership = partnerships[i % partnerships.length] as SeededPartnership;
      const roll = Math.random();
      let event: EventRow;
      const made: NewCommission[] = [];
      if (roll < 0.8) {
        event = eventRow({
          productId,
          eventType: "click",
          partnershipId: partnership.id,
          visitorId: `vis_${i}`,
          occurredAt,
        });
        totals.clicks++;
      } else if (roll < 0.95) {
        event = eventRow({
          productId,
          eventType: "signup",
          partnershipId: partnership.id,
          customerEmail: `c${i}@bench.invalid`,
          providerCustomerId: `cus_${i}`,
          occurredAt,
        });
        totals.signups++;
      } else {
        event = eventRow({
          productId,
          eventType: "payment",
          partnershipId: partnership.id,
          providerCustomerId: `cus_${i}`,
          amountCents: 1000 + Math.floor(Math.random() * 19_000),
          externalId: `pay_${i}`,
          occurredAt,
        });
        const commission = commissionOf(event, partnership, 1, commissionRateBps, null, now);
        made.push(commission);
        commissions.push(commissionLine(commission));
        totals.conversions++;
        totals.revenueCents += event.amountCents ?? 0;
        totals.commissionsCents += commission.amountCents;
      }
      addEventToRollups(rollups.next(), event, made);
      yield eventLine(event);
    }
  }

  await copyInto(sql, "ledger.tracking_events", eventColumns, eventLines());
  // After the events: each commission references its payment.
  await copyInto(sql, "ledger.commissions", commissionColumns, commissions);
  await rollups.write(sql);
  for (const table of [
    "tracking_events",
    "commissions",
    "daily_rollups",
    "hourly_rollups",
    "partnership_rollups",
    "activity_deltas",
    "partnership_deltas",
  ]) {
    await sql.unsafe(`analyze ledger.${table}`);
  }
  return totals;
}

/** Links each partnership to its sponsor, as registration with `sponsorReferralCode` does. */
export async function setSponsors(
  sql: Sql,
  pairs: readonly { partnership: SeededPartnership; sponsor: SeededPartnership }[],
): Promise<void> {
  for (let start = 0; start < pairs.length; start += rowsPerStatement) {
    const batch = pairs.slice(start, start + rowsPerStatement);
    await sql`
      update partners.partnerships p set sponsor_partnership_id = s.sponsor
      from unnest(${sql.array(batch.map((pair) => pair.partnership.id))}::text[],
                  ${sql.array(batch.map((pair) => pair.sponsor.id))}::text[]) as s (id, sponsor)
      where p.id = s.id`;
  }
}

/** Who a seeded payment is attributed to: the partnership, and its sponsor for a level-2 commission. */
export interface Payee {
  partnership: SeededPartnership;
  sponsor?: SeededPartnership;
}

export interface PaymentTotals {
  payments: number;
  /** The payments' external_ids, in seeding order (payee i % payees.length). */
  externalIds: string[];
  revenueCents: number;
  levelOneCents: number;
  levelTwoCents: number;
  levelTwoCommissions: number;
}

const tier2RateBps = 500; // the program default (contract section 3)

/**
 * `count` live attributed payments of one product, as `POST /events` with the program defaults
 * would have left them once their hold ended: each with its level-1 commission (20%) and, when
 * the payee has a sponsor, a level-2 one (5%), both `approved`, in no payout; plus the rollup
 * changes the ledger makes for them. Payments fall 31-90 days back, so their 30-day hold is over.
 * Payee i % payees.length gets payment i; external_ids are `${tag}-${i}`.
 */
export async function seedApprovedPayments(
  sql: Sql,
  productId: string,
  payees: readonly Payee[],
  count: number,
  tag: string,
): Promise<PaymentTotals> {
  const now = Date.now();
  const totals: PaymentTotals = {
    payments: count,
    externalIds: [],
    revenueCents: 0,
    levelOneCents: 0,
    levelTwoCents: 0,
    levelTwoCommissions: 0,
  };
  const rollups = new SeededRollups();
  const commissions: string[] = [];

  // Oldest first, as they would have arrived.
  const offsets = new Float64Array(count);
  for (let i = 0; i < count; i++) offsets[i] = (holdDays + 1) * dayMs + Math.floor(Math.random() * 59 * dayMs);
  offsets.sort().reverse();

  function* eventLines(): Generator<string> {
    for (let i = 0; i < count; i++) {
      const payee = payees[i % payees.length] as Payee;
      const externalId = `${tag}-${i}`;
      const payment = eventRow({
        productId,
        eventType: "payment",
        partnershipId: payee.partnership.id,
        providerCustomerId: `cus_${tag}_${i}`,
        amountCents: 1000 + Math.floor(Math.random() * 19_000),
        externalId,
        occurredAt: new Date(now - (offsets[i] ?? 0)),
      });
      const levelOne = commissionOf(payment, payee.partnership, 1, commissionRateBps, null, now);
      const made = [levelOne];
      if (payee.sponsor) made.push(commissionOf(payment, payee.sponsor, 2, tier2RateBps, levelOne.id, now));
      totals.externalIds.push(externalId);
      totals.revenueCents += payment.amountCents ?? 0;
      totals.levelOneCents += levelOne.amountCents;
      totals.levelTwoCents += made[1]?.amountCents ?? 0;
      totals.levelTwoCommissions += made.length - 1;
      // Level 1 before its level 2 in the same COPY: the parent reference is checked at its end.
      for (const commission of made) commissions.push(commissionLine(commission));
      addEventToRollups(rollups.next(), payment, made);
      yield eventLine(payment);
    }
  }

  await copyInto(sql, "ledger.tracking_events", eventColumns, eventLines());
  await copyInto(sql, "ledger.commissions", commissionColumns, commissions);
  await rollups.write(sql);
  return totals;
}

/**
 * Rows where the product's rollups disagree with its events and commissions (the ledger
 * README's invariants, extended to partnership_rollups), and days whose hourly rollups do not
 * add up to the daily ones: 0, 0 and 0 on a consistent ledger.
 */
export async function rollupMismatches(
  sql: Sql,
  productId: string,
): Promise<{ daily: number; partnerships: number; hourly: number }> {
  const [daily] = await sql<{ count: number }[]>`
    select count(*)::int as count from
      (select day, sum(commissions_cents) as commissions, sum(conversions) as conversions,
              sum(revenue_cents) as revenue
       from ledger.daily_figures where product_id = ${productId} group by day) r
      full join (select (payment_occurred_at at time zone 'UTC')::date as day, sum(amount_cents) as commissions
                 from ledger.commissions where product_id = ${productId} and status <> 'rejected' group by 1) c
        using (day)
      full join (select (occurred_at at time zone 'UTC')::date as day, count(*) as conversions,
                        sum(amount_cents) as revenue
                 from ledger.tracking_events
                 where product_id = ${productId} and event_type = 'payment' and partnership_id is not null
                 group by 1) e using (day)
    where coalesce(r.commissions, 0) <> coalesce(c.commissions, 0)
       or coalesce(r.conversions, 0) <> coalesce(e.conversions, 0)
       or coalesce(r.revenue, 0) <> coalesce(e.revenue, 0)`;
  const [partnerships] = await sql<{ count: number }[]>`
    select count(*)::int as count from
      (select partnership_id, sum(conversions) as conversions,
              sum(pending_count) as pending_count, sum(pending_amount_cents) as pending_cents,
              sum(approved_count) as approved_count, sum(approved_amount_cents) as approved_cents,
              sum(paid_count) as paid_count, sum(paid_amount_cents) as paid_cents
       from ledger.partnership_figures where product_id = ${productId} group by partnership_id) r
      full join (select partnership_id,
                        count(*) filter (where status = 'pending') as pending_count,
                        coalesce(sum(amount_cents) filter (where status = 'pending'), 0) as pending_cents,
                        count(*) filter (where status = 'approved') as approved_count,
                        coalesce(sum(amount_cents) filter (where status = 'approved'), 0) as approved_cents,
                        count(*) filter (where status = 'paid') as paid_count,
                        coalesce(sum(amount_cents) filter (where status = 'paid'), 0) as paid_cents
                 from ledger.commissions where product_id = ${productId} group by partnership_id) c
        using (partnership_id)
      full join (select partnership_id, count(*) as conversions from ledger.tracking_events
                 where product_id = ${productId} and event_type = 'payment' and partnership_id is not null
                 group by partnership_id) e using (partnership_id)
    where coalesce(r.conversions, 0) <> coalesce(e.conversions, 0)
       or coalesce(r.pending_count, 0) <> coalesce(c.pending_count, 0)
       or coalesce(r.pending_cents, 0) <> coalesce(c.pending_cents, 0)
       or coalesce(r.approved_count, 0) <> coalesce(c.approved_count, 0)
       or coalesce(r.approved_cents, 0) <> coalesce(c.approved_cents, 0)
       or coalesce(r.paid_count, 0) <> coalesce(c.paid_count, 0)
       or coalesce(r.paid_cents, 0) <> coalesce(c.paid_cents, 0)`;
  const [hourly] = await sql<{ count: number }[]>`
    select count(*)::int as count from
      (select day, sum(clicks) as clicks, sum(signups) as signups, sum(conversions) as conversions,
              sum(revenue_cents) as revenue, sum(commissions_cents) as commissions
       from ledger.daily_figures where product_id = ${productId} group by day) d
      full join (select (hour at time zone 'UTC')::date as day, sum(clicks) as clicks, sum(signups) as signups,
                        sum(conversions) as conversions, sum(revenue_cents) as revenue,
                        sum(commissions_cents) as commissions
                 from ledger.hourly_figures where product_id = ${productId} group by 1) h using (day)
    where (d.clicks, d.signups, d.conversions, d.revenue, d.commissions)
          is distinct from (h.clicks, h.signups, h.conversions, h.revenue, h.commissions)`;
  return { daily: daily?.count ?? 0, partnerships: partnerships?.count ?? 0, hourly: hourly?.count ?? 0 };
}
