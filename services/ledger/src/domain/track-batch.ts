import { normalizeEmail } from "@affiliate/contract-rules";
import { DomainError, newId, type Queryable, type Sql, type TransactionSql } from "@affiliate/platform";
import { enqueueCommissionEvents } from "../events/outbox.js";
import { getCommissionsOfEvents, insertCommissions, type NewCommission } from "../store/commissions.js";
import {
  type EventRow,
  findPaymentsByExternalIds,
  insertEventsUnlessReplay,
  type StoredEvent,
  setCommissionSkipped,
} from "../store/tracking-events.js";
import { BatchDirectory, type Credit, creditInOrder } from "./attribute.js";
import { recordCommissionChange } from "./commission-changes.js";
import { decideCommissions } from "./commission-rules.js";
import { fraudFlagsOf, fraudVerdict } from "./fraud/check-events.js";
import { nextLivePayments, numberPayments } from "./number-payments.js";
import type { PartnersDirectory } from "./ports.js";
import { RollupChanges } from "./rollup-changes.js";
import { newVisitorId, trackErrors } from "./tracking-rules.js";
import type {
  Attribution,
  CommissionDecision,
  CommissionSummary,
  FraudFlag,
  PaymentHistory,
  TrackedEvent,
  TrackInput,
  TrackOutcome,
  TrackResult,
} from "./types.js";

/** What recording (Track, TrackBatch, PreviewCommissions) needs. */
export interface TrackDeps {
  sql: Sql;
  partners: PartnersDirectory;
  clock: () => Date;
}

/** The most events one TrackBatch call takes (contract section 5a). */
export const maxBatchEvents = 500;

/** INVALID_ARGUMENT unless 1 to maxBatchEvents events. */
export function assertBatchSize(count: number): void {
  if (count < 1 || count > maxBatchEvents) {
    throw DomainError.invalidField("events", `Send 1 to ${maxBatchEvents} events per batch`);
  }
}

const dayMs = 24 * 3600 * 1000;

/** An event of the batch, normalised, with its position in the request. */
interface Pending {
  position: number;
  input: TrackInput;
  occurredAt: Date;
  customerEmail: string | undefined;
  visitorId: string | undefined;
}

/**
 * Records events (contract sections 5 and 5a) as if each were sent alone, in order, and answers
 * each with its own outcome. An invalid event, or a click on a dead link, fails alone: everything
 * is validated and attributed before anything is written. Then all the live events, the
 * customers' payment counters, their commissions (decideCommissions: level 1 for an active
 * partnership within its limits, level 2 for its active sponsor), the rollup changes and the
 * commission.created events are written in one transaction with one statement each (the rollup
 * changes as two inserts of deltas, no row lock shared with other writers); sandbox events are one insert into their own table and only
 * say what they would have earned against the live history, counting toward nothing.
 *
 * Replays: a payment whose external_id is already recorded answers the original (200) without
 * being attributed again; the same external_id later in the batch, or in a concurrent call (the
 * insert's ON CONFLICT decides), is a replay of the first.
 */
export async function trackBatch(deps: TrackDeps, inputs: TrackInput[]): Promise<TrackOutcome[]> {
  assertBatchSize(inputs.length);
  const now = deps.clock();
  const outcomes: TrackOutcome[] = new Array(inputs.length);
  const valid: Record<"live" | "sandbox", Pending[]> = { live: [], sandbox: [] };
  for (const [position, input] of inputs.entries()) {
    const errors = trackErrors(input, now);
    if (Object.keys(errors).length > 0) {
      outcomes[position] = { error: new DomainError("invalid_argument", "Validation failed", errors) };
      continue;
    }
    valid[input.testMode ? "sandbox" : "live"].push({
      position,
      input,
      occurredAt: input.occurredAt ?? now,
      customerEmail: input.customerEmail === undefined ? undefined : normalizeEmail(input.customerEmail),
      visitorId: input.visitorId ?? (input.type === "click" ? newVisitorId() : undefined),
    });
  }
  const partners = new BatchDirectory(deps.partners);
  await Promise.all([
    recordAll({ ...deps, partners, now, testMode: false }, valid.live, outcomes),
    recordAll({ ...deps, partners, now, testMode: true }, valid.sandbox, outcomes),
  ]);
  return outcomes;
}

interface ModeDeps extends Omit<TrackDeps, "partners" | "clock"> {
  partners: BatchDirectory;
  now: Date;
  testMode: boolean;
}

const paymentKey = (input: TrackInput) =>
  input.type === "payment" && input.externalId !== undefined
    ? `${input.productId}\u0000${input.externalId}`
    : undefined;

/** Records the valid events of one mode (live or sandbox), filling in their outcomes. */
async function recordAll(deps: ModeDeps, events: Pending[], outcomes: TrackOutcome[]): Promise<void> {
  if (events.length === 0) return;
  const { sql, testMode } = deps;

  // A payment's external_id seen before in the batch: answered after the first is settled.
  const firstOfKey = new Map<string, Pending>();
  const repeats: { event: Pending; first: Pending }[] = [];
  const firsts: Pending[] = [];
  for (const event of events) {
    const key = paymentKey(event.input);
    const first = key === undefined ? undefined : firstOfKey.get(key);
    if (key !== undefined && first) repeats.push({ event, first });
    else {
      if (key !== undefined) firstOfKey.set(key, event);
      firsts.push(event);
    }
  }

  // A retried payment is answered from the original without attributing it again: retries come
  // when something is flaky, and attribution may need partners.
  const stored = await replaysOf(sql, testMode, firsts);
  const fresh = firsts.filter((event) => {
    const original = stored.get(paymentKey(event.input) ?? "");
    if (original) outcomes[event.position] = { result: original };
    return !original;
  });

  const credits = await creditInOrder(
    sql,
    deps.partners,
    testMode,
    fresh.map((e) => ({
      ...e.input,
      occurredAt: e.occurredAt,
      customerEmail: e.customerEmail,
      visitorId: e.visitorId,
    })),
  );
  const attributions = credits.map((credit) => credit?.attribution);
  // Sponsors asked for together too, before commissions are planned one by one.
  await Promise.all(
    attributions.map((a, i) =>
      a?.activeSponsorPartnershipId
        ? deps.partners.byPartnershipId(fresh[i]?.input.productId ?? "", a.activeSponsorPartnershipId)
        : undefined,
    ),
  );
  const planned: Planned[] = [];
  for (const [i, pending] of fresh.entries()) {
    const attribution = attributions[i];
    if (pending.input.type === "click" && attribution?.status !== "active") {
      // Removed, rejected or pending partnerships take no clicks: their links are dead.
      outcomes[pending.position] = { error: new DomainError("not_found", "Unknown referral code") };
      continue;
    }
    const row = eventRow(pending, credits[i]);
    const sponsor = attribution?.activeSponsorPartnershipId
      ? await deps.partners.byPartnershipId(row.productId, attribution.activeSponsorPartnershipId)
      : undefined;
    planned.push({ pending, row, attribution, sponsor, flags: [] });
  }
  if (!testMode) {
    const flags = await fraudFlagsOf(sql, deps.now, planned);
    for (const p of planned) p.flags = flags.get(p.row.id) ?? [];
  }

  const recorded = testMode
    ? await writeSandbox(deps, planned)
    : await sql.begin((tx) => writeLive(tx, deps.now, planned));
  for (const { pending } of planned) {
    const result = recorded.get(pending.position);
    outcomes[pending.position] = result
      ? { result }
      : { error: new DomainError("aborted", "The payment was recorded concurrently; retry the request") };
  }
  for (const { event, first } of repeats) {
    // Settled above: every first occurrence is either a replay or in `planned`.
    const original = outcomes[first.position] as TrackOutcome;
    outcomes[event.position] = original.result
      ? { result: { event: original.result.event, replayed: true } }
      : original;
  }
}

function eventRow(pending: Pending, credit: Credit | undefined): EventRow {
  const { input } = pending;
  const attribution = credit?.attribution;
  return {
    id: newId("evt"),
    productId: input.productId,
    eventType: input.type,
    partnershipId: attribution?.partnershipId ?? null,
    visitorId: pending.visitorId ?? null,
    customerEmail: pending.customerEmail ?? null,
    providerCustomerId: input.providerCustomerId ?? null,
    amountCents: input.amountCents ?? null,
    externalId: input.externalId ?? null,
    ip: input.ip ?? null,
    userAgent: input.userAgent ?? null,
    ipHash: input.ipHash ?? null,
    referrerHost: input.referrerHost ?? null,
    attribution: credit?.method ?? null,
    occurredAt: pending.occurredAt,
  };
}

const noCommission: CommissionDecision = { commissions: [], skipped: null };

/** What an event earns: only an attributed payment does, by decideCommissions. */
function decisionOf(planned: Planned, histories: Map<string, PaymentHistory>): CommissionDecision {
  const { row, attribution, sponsor } = planned;
  const history = histories.get(row.id);
  if (row.eventType !== "payment" || !attribution || !history) return noCommission;
  return decideCommissions(
    { amountCents: row.amountCents ?? 0, occurredAt: row.occurredAt },
    attribution,
    sponsor,
    history,
  );
}

/**
 * The decision's commissions as rows: ids (the level-2 one pointing at level 1), status and hold.
 * A payment's fraud flags go on both levels: held for review (pending whatever its hold period),
 * or rejected, as the program's settings say (check-events.ts).
 */
function newCommissions(planned: Planned, decision: CommissionDecision, now: Date): NewCommission[] {
  const { row, attribution, flags } = planned;
  if (!attribution || decision.commissions.length === 0) return [];
  const holdUntil = new Date(row.occurredAt.getTime() + attribution.program.holdDays * dayMs);
  const verdict = fraudVerdict(flags, attribution.program.fraud);
  const status = verdict === "reject" ? "rejected" : verdict === "review" || holdUntil > now ? "pending" : "approved";
  let parentCommissionId: string | null = null;
  return decision.commissions.map((earned) => {
    const id = newId("com");
    const commission: NewCommission = {
      id,
      productId: row.productId,
      partnershipId: earned.partnershipId,
      eventId: row.id,
      level: earned.level,
      parentCommissionId: earned.level === 2 ? parentCommissionId : null,
      amountCents: earned.amountCents,
      status,
      holdUntil,
      referralCode: earned.referralCode,
      paymentAmountCents: row.amountCents ?? 0,
      paymentOccurredAt: row.occurredAt,
      rule: earned.rule,
      flags,
      holdReason: verdict === "review" ? "review" : null,
      reason: verdict === "reject" ? `Rejected by the fraud checks: ${flags.map((f) => f.signal).join(", ")}` : null,
    };
    if (earned.level === 1) parentCommissionId = id;
    return commission;
  });
}

const summaryOf = ({ id, level, amountCents, status }: CommissionSummary): CommissionSummary => ({
  id,
  level,
  amountCents,
  status,
});

/** An event to record, with the partnership it is credited to and that partnership's active sponsor. */
type Planned = {
  pending: Pending;
  row: EventRow;
  attribution: Attribution | undefined;
  sponsor: Attribution | undefined;
  /** Live events' fraud flags: a click's are stored on it, a payment's on its commissions. */
  flags: FraudFlag[];
};

/**
 * The live writes, in one transaction: the events first (their ON CONFLICT decides which
 * payments are replays), then the payment counters of the events inserted (numbering each
 * customer's payments, rows locked in key order), then their commissions as decideCommissions
 * gives them, then the outbox rows and the rollups, issued together (postgres.js pipelines them
 * in issue order). The rollup changes are inserted deltas (rollup-changes.ts), so no writer of
 * the same product waits on this transaction's rollups.
 */
async function writeLive(tx: TransactionSql, now: Date, planned: Planned[]): Promise<Map<number, TrackResult>> {
  const inserted = await insertEventsUnlessReplay(
    tx,
    false,
    planned.map((p) => (p.row.eventType === "click" ? { ...p.row, flags: p.flags } : p.row)),
  );
  const kept = planned.filter((p) => inserted.has(p.row.id));
  const histories = await numberPayments(
    tx,
    kept.flatMap((p) => (p.row.eventType === "payment" && p.attribution ? [p.row] : [])),
  );
  const decided = kept.map((p) => {
    const decision = decisionOf(p, histories);
    return { ...p, decision, commissions: newCommissions(p, decision, now) };
  });
  const [created] = await Promise.all([
    insertCommissions(
      tx,
      decided.flatMap((d) => d.commissions),
    ),
    setCommissionSkipped(
      tx,
      decided.flatMap((d) => (d.decision.skipped ? [{ eventId: d.row.id, reason: d.decision.skipped }] : [])),
    ),
  ]);
  const changes = new RollupChanges();
  for (const { row, commissions, flags } of decided) addEventToRollups(changes, { ...row, flags }, commissions);
  // Each commission.created continues the trace of the call that reported its payment, which may
  // be another than this batch's (the gateway gathers several requests' events into one call).
  const traceOfEvent = new Map(kept.map((p) => [p.row.id, p.pending.input.traceContext]));
  await Promise.all([
    enqueueCommissionEvents(tx, "commissionCreated", created, (c) => traceOfEvent.get(c.eventId)),
    enqueueCommissionEvents(
      tx,
      "commissionFlagged",
      created.filter((c) => c.holdReason === "review"),
      (c) => traceOfEvent.get(c.eventId),
    ),
    changes.flush(tx),
  ]);

  const results = new Map<number, TrackResult>();
  for (const { pending, row, commissions, decision, flags } of decided) {
    results.set(pending.position, {
      event: trackedEvent(
        { ...row, commissionSkipped: decision.skipped, flags: row.eventType === "click" ? flags : [] },
        false,
        commissions.map(summaryOf),
      ),
      replayed: false,
    });
  }
  await answerReplaysOfLost(tx, false, planned, inserted, results);
  return results;
}

/**
 * Sandbox events: one insert into their own table, with what they would have earned had they
 * been live, each against the live history of its customer (a sandbox payment counts toward no
 * limit, not even another sandbox payment's).
 */
async function writeSandbox(deps: ModeDeps, planned: Planned[]): Promise<Map<number, TrackResult>> {
  const histories = await nextLivePayments(
    deps.sql,
    planned.flatMap((p) => (p.row.eventType === "payment" && p.attribution ? [p.row] : [])),
  );
  const rows: StoredEvent[] = planned.map((p) => {
    const decision = decisionOf(p, histories);
    return {
      ...p.row,
      simulatedCommissions: newCommissions(p, decision, deps.now).map((c) => ({ ...summaryOf(c), id: null })),
      commissionSkipped: decision.skipped,
    };
  });
  const inserted = await insertEventsUnlessReplay(deps.sql, true, rows);
  const results = new Map<number, TrackResult>();
  for (const [i, { pending }] of planned.entries()) {
    const row = rows[i];
    if (row && inserted.has(row.id)) {
      results.set(pending.position, {
        event: trackedEvent(row, true, row.simulatedCommissions ?? []),
        replayed: false,
      });
    }
  }
  await answerReplaysOfLost(deps.sql, true, planned, inserted, results);
  return results;
}

/**
 * The payments whose insert lost to a concurrent recording of the same external_id (ON CONFLICT)
 * are answered with that original, as replays. One whose original cannot be read (it committed
 * after this statement's snapshot) stays unanswered and is asked to retry.
 */
async function answerReplaysOfLost(
  sql: Queryable,
  testMode: boolean,
  planned: Planned[],
  inserted: Set<string>,
  results: Map<number, TrackResult>,
): Promise<void> {
  const lost = planned.filter((p) => !inserted.has(p.row.id));
  const originals = await replaysOf(
    sql,
    testMode,
    lost.map((p) => p.pending),
  );
  for (const { pending } of lost) {
    const original = originals.get(paymentKey(pending.input) ?? "");
    if (original) results.set(pending.position, original);
  }
}

export function addEventToRollups(
  changes: RollupChanges,
  event: EventRow & { flags?: readonly FraudFlag[] | null | undefined },
  commissions: NewCommission[],
): void {
  const attributedPayment = event.eventType === "payment" && event.partnershipId !== null;
  // A click the fraud checks flagged (duplicate_click, bot) is stored and counted nowhere.
  const countedClick = event.eventType === "click" && !(event.flags && event.flags.length > 0);
  changes.addActivity(
    event.productId,
    event.occurredAt,
    {
      clicks: countedClick ? 1 : 0,
      signups: event.eventType === "signup" ? 1 : 0,
      conversions: attributedPayment ? 1 : 0,
      revenueCents: attributedPayment ? (event.amountCents ?? 0) : 0,
    },
    event.partnershipId,
  );
  if (event.partnershipId && (countedClick || attributedPayment)) {
    changes.addPartnership(event.productId, event.partnershipId, {
      clicks: countedClick ? 1 : 0,
      conversions: attributedPayment ? 1 : 0,
    });
  }
  for (const commission of commissions) recordCommissionChange(changes, commission, null, commission);
}

/**
 * The recorded originals of these events' payments, as replays, by payment key: one query for
 * the events, one for their commissions (live) or their stored simulation (sandbox).
 */
async function replaysOf(sql: Queryable, testMode: boolean, events: Pending[]): Promise<Map<string, TrackResult>> {
  const keys = events.flatMap((e) =>
    e.input.type === "payment" && e.input.externalId !== undefined
      ? [{ productId: e.input.productId, externalId: e.input.externalId }]
      : [],
  );
  const originals = await findPaymentsByExternalIds(sql, testMode, keys);
  const commissionsOf = new Map<string, CommissionSummary[]>();
  if (!testMode) {
    for (const commission of await getCommissionsOfEvents(
      sql,
      originals.map((o) => o.id),
    )) {
      commissionsOf.set(commission.eventId, [...(commissionsOf.get(commission.eventId) ?? []), summaryOf(commission)]);
    }
  }
  const replays = new Map<string, TrackResult>();
  for (const original of originals) {
    const commissions = testMode ? (original.simulatedCommissions ?? []) : (commissionsOf.get(original.id) ?? []);
    replays.set(`${original.productId}\u0000${original.externalId}`, {
      event: trackedEvent(original, testMode, commissions),
      replayed: true,
    });
  }
  return replays;
}

function trackedEvent(event: StoredEvent, testMode: boolean, commissions: CommissionSummary[]): TrackedEvent {
  return {
    id: event.id,
    type: event.eventType,
    partnershipId: event.partnershipId,
    visitorId: event.visitorId,
    occurredAt: event.occurredAt,
    testMode,
    commissions,
    commissionSkipped: event.commissionSkipped ?? null,
    flags: event.flags ?? [],
  };
}
