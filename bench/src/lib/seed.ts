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

/**
 * `count` live tracking events of one product spread evenly over the last 364 days (not 365, so
 * that the whole history stays inside a 12m window asked for minutes later), with what the
 * ledger would have written alongside them: a level-1 commission per payment and the daily
 * rollups, one row per UTC day and shard, summing exactly these events. Mix: 80% clicks, 15%
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
      const id = newId("evt");
      const at = occurredAt.toISOString();
      const roll = Math.random();
      if (roll < 0.8) {
        rollup.clicks++;
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
        rollup.revenueCents += amount;
        rollup.commissionsCents += commission;
        totals.conversions++;
        totals.revenueCents += amount;
        totals.commissionsCents += commission;
        yield copyLine([id, productId, "payment", partnership.id, null, null, `cus_${i}`, amount, `pay_${i}`, at]);
        const holdUntil = new Date(occurredAt.getTime() + holdDays * dayMs);
        const approved = holdUntil.getTime() <= now;
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

  await copyInto(
    sql,
    "ledger.tracking_events",
    [
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
    ],
    eventLines(),
  );
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
  for (const table of ["tracking_events", "commissions", "daily_rollups"]) await sql.unsafe(`analyze ledger.${table}`);
  return totals;
}
