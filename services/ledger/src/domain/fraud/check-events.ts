import {
  type FraudAction,
  type FraudSettings,
  type PaymentSignal,
  refundRateWindowDays,
} from "@affiliate/contract-rules";
import type { Queryable } from "@affiliate/platform";
import { countedClicksNear, refundHistories } from "../../store/fraud.js";
import type { EventRow } from "../../store/tracking-events.js";
import type { Attribution, FraudFlag } from "../types.js";
import { bot, duplicateClick, duplicateClickWindowMs, type EarlierClick, refundRate, selfReferral } from "./signals.js";

/** A live event about to be recorded, with the partnership it is credited to. */
export interface Checked {
  row: EventRow & { ipHash: string | null };
  attribution: Attribution | undefined;
}

const dayMs = 24 * 3600 * 1000;

const isOn = (action: FraudAction) => action !== "off";

/**
 * The fraud flags of a batch's live events (contract section 18), by event id: the program's
 * settings say which signals are checked; the signals (signals.ts) decide. Reads what they need
 * in two statements at most, before the batch's transaction: the counted clicks a click may
 * duplicate, and the refunded share of the partnerships paid.
 *
 * Clicks are taken in batch order, so of a visitor's clicks on one code within the hour only
 * the first counts, in one batch as across batches. Two batches recorded at the same instant
 * may each count their first such click: the check reads before it writes and takes no lock
 * (a hot row on the click path would cost every click), so a race costs one extra count at
 * most, never a lost click.
 */
export async function fraudFlagsOf(sql: Queryable, now: Date, events: Checked[]): Promise<Map<string, FraudFlag[]>> {
  const flags = new Map<string, FraudFlag[]>();
  const [clickFlags, paymentFlags] = await Promise.all([
    flagClicks(
      sql,
      events.filter((e) => e.row.eventType === "click" && e.attribution),
    ),
    flagPayments(
      sql,
      now,
      events.filter((e) => e.row.eventType === "payment" && e.attribution),
    ),
  ]);
  for (const [id, raised] of [...clickFlags, ...paymentFlags]) if (raised.length > 0) flags.set(id, raised);
  return flags;
}

async function flagClicks(sql: Queryable, clicks: Checked[]): Promise<Map<string, FraudFlag[]>> {
  const settings = (c: Checked) => (c.attribution as Attribution).program.fraud;
  // One look-up per visitor (or address) and code, over the hour before its batch's clicks: a
  // flood of one visitor's clicks in a batch reads the stored clicks once.
  const lookups = new Map<
    string,
    { productId: string; partnershipId: string; visitorId: string | null; ipHash: string | null; from: Date; to: Date }
  >();
  const lookupOf = (row: Checked["row"]) =>
    `${row.productId}\u0000${row.partnershipId}\u0000${row.visitorId}\u0000${row.ipHash}`;
  for (const { row } of clicks.filter((c) => isOn(settings(c).duplicateClick) && (c.row.visitorId || c.row.ipHash))) {
    const from = new Date(row.occurredAt.getTime() - duplicateClickWindowMs);
    const known = lookups.get(lookupOf(row));
    lookups.set(lookupOf(row), {
      productId: row.productId,
      partnershipId: row.partnershipId as string,
      visitorId: row.visitorId,
      ipHash: row.ipHash,
      from: known && known.from < from ? known.from : from,
      to: known && known.to > row.occurredAt ? known.to : row.occurredAt,
    });
  }
  const queries = [...lookups.values()];
  const stored = await countedClicksNear(sql, queries);
  // The stored counted clicks of each partnership (signals.ts matches visitor or address).
  const storedOf = new Map<string, EarlierClick[]>();
  const seen = new Set<string>();
  for (const { position, ...click } of stored) {
    const partnershipId = (queries[position] as { partnershipId: string }).partnershipId;
    if (seen.has(click.id)) continue;
    seen.add(click.id);
    storedOf.set(partnershipId, [...(storedOf.get(partnershipId) ?? []), click]);
  }

  const flags = new Map<string, FraudFlag[]>();
  // The batch's counted clicks so far, by partnership: a later click of the batch may duplicate them.
  const countedInBatch = new Map<string, EarlierClick[]>();
  for (const { row, attribution } of clicks) {
    const fraud = (attribution as Attribution).program.fraud;
    const partnershipId = row.partnershipId as string;
    const raised: FraudFlag[] = [];
    const asBot = isOn(fraud.bot) ? bot(row.userAgent) : undefined;
    if (asBot) raised.push(asBot);
    if (isOn(fraud.duplicateClick)) {
      const earlier = [...(storedOf.get(partnershipId) ?? []), ...(countedInBatch.get(partnershipId) ?? [])];
      const duplicate = duplicateClick(row, earlier);
      if (duplicate) raised.push(duplicate);
    }
    flags.set(row.id, raised);
    if (raised.length === 0) {
      countedInBatch.set(partnershipId, [
        ...(countedInBatch.get(partnershipId) ?? []),
        { id: row.id, visitorId: row.visitorId, ipHash: row.ipHash, occurredAt: row.occurredAt },
      ]);
    }
  }
  return flags;
}

async function flagPayments(sql: Queryable, now: Date, payments: Checked[]): Promise<Map<string, FraudFlag[]>> {
  const since = new Date(now.getTime() - refundRateWindowDays * dayMs);
  const watched = new Map<string, { productId: string; partnershipId: string; since: Date }>();
  for (const { attribution, row } of payments) {
    const fraud = (attribution as Attribution).program.fraud;
    if (isOn(fraud.refundRate) && fraud.refundRateThresholdBps !== null) {
      watched.set(row.partnershipId as string, {
        productId: row.productId,
        partnershipId: row.partnershipId as string,
        since,
      });
    }
  }
  const histories = await refundHistories(sql, [...watched.values()]);
  const flags = new Map<string, FraudFlag[]>();
  for (const { row, attribution } of payments) {
    const { program, affiliateEmail } = attribution as Attribution;
    const raised: FraudFlag[] = [];
    if (isOn(program.fraud.selfReferral)) {
      const flag = selfReferral(row, { email: affiliateEmail });
      if (flag) raised.push(flag);
    }
    const history = histories.get(row.partnershipId as string);
    if (history && program.fraud.refundRateThresholdBps !== null) {
      const flag = refundRate(history, program.fraud.refundRateThresholdBps);
      if (flag) raised.push(flag);
    }
    flags.set(row.id, raised);
  }
  return flags;
}

const actionKey: Record<PaymentSignal, keyof FraudSettings> = {
  self_referral: "selfReferral",
  refund_rate: "refundRate",
};

/**
 * What a payment's flags do to its commissions: rejected when a raised signal is set to reject,
 * held for review when one is set to flag, untouched with none.
 */
export function fraudVerdict(flags: readonly FraudFlag[], settings: FraudSettings): "reject" | "review" | undefined {
  const actions = flags.map((flag) => settings[actionKey[flag.signal as PaymentSignal]]);
  if (actions.includes("reject")) return "reject";
  if (flags.length > 0) return "review";
  return undefined;
}
