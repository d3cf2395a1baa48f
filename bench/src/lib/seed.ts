import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Sql } from "postgres";
import { uuidv7 } from "uuidv7";

/**
 * Bulk seeding straight into the services' schemas: going through the API would take minutes
 * for what SQL does in seconds, and the measured reads do not care how the rows got there as
 * long as they look like the services' own (same id format, same invariants).
 */

/** An id as the services make them: type prefix + a time-ordered UUIDv7 without dashes. */
export const newId = (prefix: string) => `${prefix}_${uuidv7().replaceAll("-", "")}`;

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
const shardCount = 16;
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

interface Rollup {
  day: string;
  shard: number;
  clicks: number;
  signups: number;
  conversions: number;
  revenueCents: number;
  commissionsCents: number;
}

/** What seedEvents adds to one shard of a partnership's rollup (partnership_rollups). */
interface EventPartnershipRollup {
  partnershipId: string;
  shard: number;
  clicks: number;
  conversions: number;
  pendingCount: number;
  pendingAmountCents: number;
  approvedCount: number;
  approvedAmountCents: number;
}

const zeroFigures = () => ({
  clicks: 0,
  conversions: 0,
  pendingCount: 0,
  pendingAmountCents: 0,
  approvedCount: 0,
  approvedAmountCents: 0,
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

/**
 * `count` live tracking events of one product spread evenly over the last 364 days (not 365, so
 * that the whole history stays inside a 12m window asked for minutes later), with what the
 * ledger would have written alongside them: a level-1 commission per payment, the daily
 * rollups (one row per UTC day and shard) and the partnerships' rollups (one row per
 * partnership and shard), summing exactly these events. Mix: 80% clicks, 15%
 * signups, 5% attributed payments.
 */
export async function seedEvents(
  sql: Sql,
  productId: string,
  partnerships: readonly SeededPartnership[],
  count: number,
): Promise<EventTotals> {
  const now = Date.now();
  const totals: EventTotals = {
    events: count,
    clicks: 0,
    signups: 0,
    conversions: 0,
    revenueCents: 0,
    commissionsCents: 0,
  };
  const rollups = new Map<string, Rollup>();
  const byPartnership = new Map<string, EventPartnershipRollup>();
  const commissions: string[] = [];

  // Oldest first, as events arrive in production: a day's events then sit in neighbouring heap
  // pages, and a scan of one day reads few pages. Random order would spread them over the table
  // and make every partial-day scan look far costlier than it is.
  const offsets = new Float64Array(count);
  for (let i = 0; i < count; i++) offsets[i] = 60_000 + Math.floor(Math.random() * 364 * dayMs);
  offsets.sort().reverse();

  function* eventLines(): Generator<string> {
    for (let i = 0; i < count; i++) {
      const occurredAt = new Date(now - (offsets[i] ?? 0));
      const day = occurredAt.toISOString().slice(0, 10);
      // The ledger picks a random shard per event; so do we.
      const shard = Math.floor(Math.random() * shardCount);
      const key = `${day}/${shard}`;
      let rollup = rollups.get(key);
      if (!rollup) {
        rollup = { day, shard, clicks: 0, signups: 0, conversions: 0, revenueCents: 0, commissionsCents: 0 };
        rollups.set(key, rollup);
      }
      const partnership = partnerships[i % partnerships.length] as SeededPartnership;
      // The ledger adds each event to one random shard of its partnership's rollup as well.
      const partnershipKey = `${partnership.id}/${Math.floor(Math.random() * shardCount)}`;
      let owned = byPartnership.get(partnershipKey);
      if (!owned) {
        owned = { partnershipId: partnership.id, shard: Number(partnershipKey.split("/")[1]), ...zeroFigures() };
        byPartnership.set(partnershipKey, owned);
      }
      const id = newId("evt");
      const at = occurredAt.toISOString();
      const roll = Math.random();
      if (roll < 0.8) {
        rollup.clicks++;
        owned.clicks++;
        totals.clicks++;
        yield copyLine([id, productId, "click", partnership.id, `vis_${i}`, null, null, null, null, at]);
      } else if (roll < 0.95) {
        rollup.signups++;
        totals.signups++;
        yield copyLine([
          id,
          productId,
          "signup",
          partnership.id,
          null,
          `c${i}@bench.invalid`,
          `cus_${i}`,
          null,
          null,
          at,
        ]);
      } else {
        const amount = 1000 + Math.floor(Math.random() * 19_000);
        const commission = Math.round((amount * commissionRateBps) / 10_000);
        rollup.conversions++;
        owned.conversions++;
        rollup.revenueCents += amount;
        rollup.commissionsCents += commission;
        totals.conversions++;
        totals.revenueCents += amount;
        totals.commissionsCents += commission;
        yield copyLine([id, productId, "payment", partnership.id, null, null, `cus_${i}`, amount, `pay_${i}`, at]);
        const holdUntil = new Date(occurredAt.getTime() + holdDays * dayMs);
        const approved = holdUntil.getTime() <= now;
        if (approved) {
          owned.approvedCount++;
          owned.approvedAmountCents += commission;
        } else {
          owned.pendingCount++;
          owned.pendingAmountCents += commission;
        }
        commissions.push(
          copyLine([
            newId("com"),
            productId,
            partnership.id,
            id,
            1,
            commission,
            commission,
            approved ? "approved" : "pending",
            holdUntil.toISOString(),
            partnership.referralCode,
            amount,
            at,
            approved ? holdUntil.toISOString() : null,
          ]),
        );
      }
    }
  }

  await copyInto(sql, "ledger.tracking_events", eventColumns, eventLines());
  // After the events: each commission references its payment.
  await copyInto(
    sql,
    "ledger.commissions",
    [
      "id",
      "product_id",
      "partnership_id",
      "event_id",
      "level",
      "original_amount_cents",
      "amount_cents",
      "status",
      "hold_until",
      "referral_code",
      "payment_amount_cents",
      "payment_occurred_at",
      "approved_at",
    ],
    commissions,
  );
  const rows = [...rollups.values()].map((r) => ({
    product_id: productId,
    day: r.day,
    shard: r.shard,
    clicks: r.clicks,
    signups: r.signups,
    conversions: r.conversions,
    revenue_cents: r.revenueCents,
    commissions_cents: r.commissionsCents,
  }));
  for (let start = 0; start < rows.length; start += rowsPerStatement) {
    await sql`insert into ledger.daily_rollups ${sql(rows.slice(start, start + rowsPerStatement))}`;
  }
  const partnershipRows = [...byPartnership.values()].map((r) => ({
    partnership_id: r.partnershipId,
    shard: r.shard,
    product_id: productId,
    clicks: r.clicks,
    conversions: r.conversions,
    pending_count: r.pendingCount,
    pending_amount_cents: r.pendingAmountCents,
    approved_count: r.approvedCount,
    approved_amount_cents: r.approvedAmountCents,
  }));
  for (let start = 0; start < partnershipRows.length; start += rowsPerStatement) {
    await sql`insert into ledger.partnership_rollups ${sql(partnershipRows.slice(start, start + rowsPerStatement))}`;
  }
  for (const table of ["tracking_events", "commissions", "daily_rollups", "partnership_rollups"]) {
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

/** round(amount × rate / 10,000), halves up, in integers: the ledger's money rounding. */
const centsAt = (amount: number, rateBps: number) => Math.floor((2 * amount * rateBps + 10_000) / 20_000);

interface PartnershipRollup {
  partnershipId: string;
  shard: number;
  conversions: number;
  approvedCount: number;
  approvedAmountCents: number;
}

/**
 * `count` live attributed payments of one product, as `POST /events` with the program defaults
 * would have left them once their hold ended: each with its level-1 commission (20%) and, when
 * the payee has a sponsor, a level-2 one (5%), both `approved`, in no payout; plus the rows they
 * add to daily_rollups and partnership_rollups, one shard per payment as the ledger picks it.
 * Payments fall 31-90 days back, so their 30-day hold is over. Payee i % payees.length gets
 * payment i; external_ids are `${tag}-${i}`.
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
  const daily = new Map<string, Rollup>();
  const byPartnership = new Map<string, PartnershipRollup>();
  const partnershipRow = (partnershipId: string, shard: number) => {
    const key = `${partnershipId}/${shard}`;
    let row = byPartnership.get(key);
    if (!row) {
      row = { partnershipId, shard, conversions: 0, approvedCount: 0, approvedAmountCents: 0 };
      byPartnership.set(key, row);
    }
    return row;
  };
  const commissions: string[] = [];

  // Oldest first, as they would have arrived.
  const offsets = new Float64Array(count);
  for (let i = 0; i < count; i++) offsets[i] = (holdDays + 1) * dayMs + Math.floor(Math.random() * 59 * dayMs);
  offsets.sort().reverse();

  function* eventLines(): Generator<string> {
    for (let i = 0; i < count; i++) {
      const payee = payees[i % payees.length] as Payee;
      const occurredAt = new Date(now - (offsets[i] ?? 0));
      const at = occurredAt.toISOString();
      const holdUntil = new Date(occurredAt.getTime() + holdDays * dayMs).toISOString();
      const amount = 1000 + Math.floor(Math.random() * 19_000);
      const levelOne = centsAt(amount, commissionRateBps);
      const levelTwo = payee.sponsor ? centsAt(amount, tier2RateBps) : 0;
      const eventId = newId("evt");
      const externalId = `${tag}-${i}`;
      totals.externalIds.push(externalId);
      totals.revenueCents += amount;
      totals.levelOneCents += levelOne;
      totals.levelTwoCents += levelTwo;

      const shard = Math.floor(Math.random() * shardCount);
      const day = at.slice(0, 10);
      let rollup = daily.get(`${day}/${shard}`);
      if (!rollup) {
        rollup = { day, shard, clicks: 0, signups: 0, conversions: 0, revenueCents: 0, commissionsCents: 0 };
        daily.set(`${day}/${shard}`, rollup);
      }
      rollup.conversions++;
      rollup.revenueCents += amount;
      rollup.commissionsCents += levelOne + levelTwo;
      const own = partnershipRow(payee.partnership.id, shard);
      own.conversions++;
      own.approvedCount++;
      own.approvedAmountCents += levelOne;

      yield copyLine([
        eventId,
        productId,
        "payment",
        payee.partnership.id,
        null,
        null,
        `cus_${tag}_${i}`,
        amount,
        externalId,
        at,
      ]);
      const levelOneId = newId("com");
      const common = (level: number, amountCents: number, parent: string | null, referralCode: string) => [
        productId,
        eventId,
        level,
        parent,
        amountCents,
        amountCents,
        "approved",
        holdUntil,
        referralCode,
        amount,
        at,
        holdUntil,
      ];
      commissions.push(
        copyLine([levelOneId, payee.partnership.id, ...common(1, levelOne, null, payee.partnership.referralCode)]),
      );
      if (payee.sponsor) {
        totals.levelTwoCommissions++;
        const sponsorRow = partnershipRow(payee.sponsor.id, shard);
        sponsorRow.approvedCount++;
        sponsorRow.approvedAmountCents += levelTwo;
        commissions.push(
          copyLine([newId("com"), payee.sponsor.id, ...common(2, levelTwo, levelOneId, payee.sponsor.referralCode)]),
        );
      }
    }
  }

  await copyInto(sql, "ledger.tracking_events", eventColumns, eventLines());
  // Level 1 before its level 2 in the same COPY: the parent reference is checked at its end.
  await copyInto(
    sql,
    "ledger.commissions",
    [
      "id",
      "partnership_id",
      "product_id",
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
    ],
    commissions,
  );
  const dailyRows = [...daily.values()].map((r) => ({
    product_id: productId,
    day: r.day,
    shard: r.shard,
    clicks: 0,
    signups: 0,
    conversions: r.conversions,
    revenue_cents: r.revenueCents,
    commissions_cents: r.commissionsCents,
  }));
  for (let start = 0; start < dailyRows.length; start += rowsPerStatement) {
    await sql`
      insert into ledger.daily_rollups ${sql(dailyRows.slice(start, start + rowsPerStatement))}
      on conflict (product_id, day, shard) do update set
        conversions = daily_rollups.conversions + excluded.conversions,
        revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = daily_rollups.commissions_cents + excluded.commissions_cents`;
  }
  const partnershipRows = [...byPartnership.values()].map((r) => ({
    partnership_id: r.partnershipId,
    shard: r.shard,
    product_id: productId,
    conversions: r.conversions,
    approved_count: r.approvedCount,
    approved_amount_cents: r.approvedAmountCents,
  }));
  for (let start = 0; start < partnershipRows.length; start += rowsPerStatement) {
    await sql`
      insert into ledger.partnership_rollups ${sql(partnershipRows.slice(start, start + rowsPerStatement))}
      on conflict (partnership_id, shard) do update set
        conversions = partnership_rollups.conversions + excluded.conversions,
        approved_count = partnership_rollups.approved_count + excluded.approved_count,
        approved_amount_cents = partnership_rollups.approved_amount_cents + excluded.approved_amount_cents`;
  }
  return totals;
}

/**
 * Rows where the product's rollups disagree with its events and commissions (the ledger
 * README's invariants, extended to partnership_rollups): 0 and 0 on a consistent ledger.
 */
export async function rollupMismatches(sql: Sql, productId: string): Promise<{ daily: number; partnerships: number }> {
  const [daily] = await sql<{ count: number }[]>`
    select count(*)::int as count from
      (select day, sum(commissions_cents) as commissions, sum(conversions) as conversions,
              sum(revenue_cents) as revenue
       from ledger.daily_rollups where product_id = ${productId} group by day) r
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
       from ledger.partnership_rollups where product_id = ${productId} group by partnership_id) r
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
  return { daily: daily?.count ?? 0, partnerships: partnerships?.count ?? 0 };
}
