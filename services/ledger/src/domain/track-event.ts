import { DomainError, newId, normalizeEmail, type Sql, type TransactionSql } from "@affiliate/platform";
import { enqueueCommissionEvent } from "../events/outbox.js";
import type { PartnersDirectory } from "../partners-directory.js";
import { getCommissionsOfEvent, insertCommissions, type NewCommission } from "../store/commissions.js";
import { type EventRow, findPaymentByExternalId, insertEventUnlessReplay, type StoredEvent } from "../store/events.js";
import { attribute } from "./attribute.js";
import { recordCommissionChange } from "./commission-changes.js";
import { commissionAmount } from "./money.js";
import { RollupChanges } from "./rollup-changes.js";
import { assertValidTrack, newVisitorId } from "./rules.js";
import type { Attribution, CommissionSummary, TrackedEvent, TrackInput } from "./types.js";

export interface TrackDeps {
  sql: Sql;
  partners: PartnersDirectory;
  clock: () => Date;
}

export interface TrackResult {
  event: TrackedEvent;
  /** True when the payment's external_id was already recorded: this is the original. */
  replayed: boolean;
}

const dayMs = 24 * 3600 * 1000;

/**
 * Records a click, signup or payment (contract section 5). A live attributed payment to an
 * active partnership also creates its level-1 commission, and a level-2 one for an active
 * sponsor, in the same transaction as the event, the rollups and the commission.created events.
 * Sandbox events (test keys) are stored apart and only say what they would have created.
 */
export async function trackEvent(deps: TrackDeps, input: TrackInput): Promise<TrackResult> {
  const now = deps.clock();
  assertValidTrack(input, now);
  const occurredAt = input.occurredAt ?? now;
  const customerEmail = input.customerEmail === undefined ? undefined : normalizeEmail(input.customerEmail);
  const visitorId = input.visitorId ?? (input.type === "click" ? newVisitorId() : undefined);

  // A retried payment is answered from the original without attributing it again: retries come
  // when something is flaky, and attribution may need partners. The insert's ON CONFLICT below
  // still decides replays that race each other.
  if (input.type === "payment" && input.externalId !== undefined) {
    const original = await findPaymentByExternalId(deps.sql, input.testMode, input.productId, input.externalId);
    if (original) return replayOf(deps.sql, input.testMode, original);
  }

  const attribution = await attribute(deps.sql, deps.partners, { ...input, occurredAt, customerEmail });
  if (input.type === "click" && attribution?.status !== "active") {
    // Removed, rejected or pending partnerships take no clicks: their links are dead.
    throw new DomainError("not_found", "Unknown referral code");
  }

  const event: EventRow = {
    id: newId("evt"),
    productId: input.productId,
    eventType: input.type,
    partnershipId: attribution?.partnershipId ?? null,
    visitorId: visitorId ?? null,
    customerEmail: customerEmail ?? null,
    providerCustomerId: input.providerCustomerId ?? null,
    amountCents: input.amountCents ?? null,
    externalId: input.externalId ?? null,
    ip: input.ip ?? null,
    userAgent: input.userAgent ?? null,
    occurredAt,
  };
  const planned =
    input.type === "payment" && attribution?.status === "active"
      ? await planCommissions(deps.partners, event, attribution, now)
      : [];

  if (input.testMode) {
    const simulatedCommissions = planned.map(({ level, amountCents, status }) => ({
      id: null,
      level,
      amountCents,
      status,
    }));
    const inserted = await insertEventUnlessReplay(deps.sql, true, { ...event, simulatedCommissions });
    if (!inserted) return replayExisting(deps.sql, true, event);
    return { event: trackedEvent(event, true, simulatedCommissions), replayed: false };
  }

  return deps.sql.begin(async (tx) => {
    if (!(await insertEventUnlessReplay(tx, false, event))) return replayExisting(tx, false, event);
    const created = await insertCommissions(tx, planned);
    // The rollups last, with the events, issued together (postgres.js pipelines them in issue
    // order): rollup rows are the hot ones (every event of a day adds to one of 16), so their
    // locks are held only from this round trip to COMMIT.
    await Promise.all([
      ...created.map((commission) => enqueueCommissionEvent(tx, "commissionCreated", commission)),
      recordRollups(tx, event, planned),
    ]);
    const summaries = planned.map(({ id, level, amountCents, status }) => ({ id, level, amountCents, status }));
    return { event: trackedEvent(event, false, summaries), replayed: false };
  });
}

/** Level 1 for the partnership; level 2 for its sponsor when the sponsor is active. */
async function planCommissions(
  partners: PartnersDirectory,
  event: EventRow,
  attribution: Attribution,
  now: Date,
): Promise<NewCommission[]> {
  const payment = event.amountCents ?? 0;
  const holdUntil = new Date(event.occurredAt.getTime() + attribution.program.holdDays * dayMs);
  const status = holdUntil <= now ? "approved" : "pending";
  const common = {
    productId: event.productId,
    eventId: event.id,
    status,
    holdUntil,
    paymentAmountCents: payment,
    paymentOccurredAt: event.occurredAt,
  } as const;
  const levelOne: NewCommission = {
    ...common,
    id: newId("com"),
    partnershipId: attribution.partnershipId,
    level: 1,
    parentCommissionId: null,
    amountCents: commissionAmount(payment, attribution.program.commissionRateBps),
    referralCode: attribution.referralCode,
  };
  const sponsor = attribution.activeSponsorPartnershipId
    ? await partners.byPartnershipId(event.productId, attribution.activeSponsorPartnershipId)
    : undefined;
  if (sponsor?.status !== "active") return [levelOne];
  return [
    levelOne,
    {
      ...common,
      id: newId("com"),
      partnershipId: sponsor.partnershipId,
      level: 2,
      parentCommissionId: levelOne.id,
      amountCents: commissionAmount(payment, attribution.program.tier2RateBps),
      referralCode: sponsor.referralCode,
    },
  ];
}

async function recordRollups(tx: TransactionSql, event: EventRow, commissions: NewCommission[]): Promise<void> {
  const attributedPayment = event.eventType === "payment" && event.partnershipId !== null;
  const changes = new RollupChanges();
  changes.addDaily(event.productId, event.occurredAt, {
    clicks: event.eventType === "click" ? 1 : 0,
    signups: event.eventType === "signup" ? 1 : 0,
    conversions: attributedPayment ? 1 : 0,
    revenueCents: attributedPayment ? (event.amountCents ?? 0) : 0,
  });
  if (event.partnershipId && (event.eventType === "click" || attributedPayment)) {
    changes.addPartnership(event.productId, event.partnershipId, {
      clicks: event.eventType === "click" ? 1 : 0,
      conversions: attributedPayment ? 1 : 0,
    });
  }
  for (const commission of commissions) recordCommissionChange(changes, commission, null, commission);
  await changes.flush(tx);
}

function trackedEvent(event: EventRow, testMode: boolean, commissions: CommissionSummary[]): TrackedEvent {
  return {
    id: event.id,
    type: event.eventType,
    partnershipId: event.partnershipId,
    visitorId: event.visitorId,
    occurredAt: event.occurredAt,
    testMode,
    commissions,
  };
}

/** The insert lost to a concurrent or earlier report of the same payment: answer with that one. */
async function replayExisting(sql: Sql | TransactionSql, testMode: boolean, event: EventRow): Promise<TrackResult> {
  const original = await findPaymentByExternalId(sql, testMode, event.productId, event.externalId ?? "");
  if (!original) throw new DomainError("aborted", "The payment was recorded concurrently; retry the request");
  return replayOf(sql, testMode, original);
}

async function replayOf(sql: Sql | TransactionSql, testMode: boolean, original: StoredEvent): Promise<TrackResult> {
  const commissions = testMode
    ? (original.simulatedCommissions ?? [])
    : (await getCommissionsOfEvent(sql, original.id)).map(({ id, level, amountCents, status }) => ({
        id,
        level,
        amountCents,
        status,
      }));
  return { event: trackedEvent(original, testMode, commissions), replayed: true };
}
