/**
 * Domain events -> what the notifier records: the webhook body, the resource in its REST shape
 * made by the same mappers as the gateway's GET answers (packages/rest-shapes), and the emails.
 * Personal data comes from its owners (events/owners.ts), never from the event.
 */
import { decodeEvent, UndecodableEvent } from "@affiliate/platform";
import { type DomainEvent, ledgerEvents, partnersEvents, payoutsEvents, privacyEvents } from "@affiliate/proto/events";
import {
  type CommissionApprovedSchema,
  type CommissionCreatedSchema,
  type CommissionFlaggedSchema,
  type CommissionRefundedSchema,
  type CommissionRejectedSchema,
  type CommissionReviewedSchema,
  CommissionStatus,
} from "@affiliate/proto/ledger";
import type {
  PartnershipCreatedSchema,
  PartnershipReactivatedSchema,
  PartnershipRemovedSchema,
} from "@affiliate/proto/partners";
import type {
  PayoutApprovedSchema,
  PayoutCompletedSchema,
  PayoutCreatedSchema,
  PayoutRejectedSchema,
} from "@affiliate/proto/payouts";
import {
  toPublicCommission,
  toPublicPartnership,
  toPublicPayout,
  toPublicRefund,
} from "@affiliate/rest-shapes/mappers";
import type { MessageShape } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import { affiliateLoginEmail, refundNoticeEmail, welcomeEmail } from "../domain/email-templates.js";
import type { NotifiableEvent } from "../domain/record-event.js";
import type { WebhookEventType } from "../domain/types.js";
import type { Owners } from "./owners.js";

const isoOf = (at: Timestamp | undefined) => (at ? timestampDate(at) : new Date()).toISOString();

/** What the emails link to: the program's public portal (PORTAL_URL), when there is one. */
export interface EmailSettings {
  portalUrl: string | undefined;
}

/**
 * One subscription: the domain subject, the public type (null for an event that is no webhook,
 * only an email), and how to read the event.
 */
export interface Subscription<T extends WebhookEventType | null = WebhookEventType | null> {
  /** The producing service, whose stream carries the subject. */
  stream: string;
  subject: string;
  type: T;
  /**
   * What the event alone says, without asking any service: its product, and whether it sends
   * the affiliate an email. An event no endpoint of the product subscribes to and that sends no
   * email is skipped before any call or transaction.
   */
  peek(data: Uint8Array): { productId: string; sendsEmail: boolean };
  build(owners: Owners, eventId: string, data: Uint8Array, settings: EmailSettings): Promise<NotifiableEvent>;
}

function partnershipSubscription<T extends WebhookEventType>(
  domainEvent: DomainEvent<
    typeof PartnershipCreatedSchema | typeof PartnershipReactivatedSchema | typeof PartnershipRemovedSchema
  >,
  type: T,
): Subscription<T> {
  const { service: stream, subject } = domainEvent;
  const read = (data: Uint8Array) => {
    const event = decodeEvent(domainEvent, data) as MessageShape<typeof PartnershipCreatedSchema>;
    if (!event.partnership?.id || !event.partnership.productId)
      throw new UndecodableEvent(`${subject} without a partnership`);
    return { event, partnership: event.partnership, notify: "notify" in event ? event.notify : false };
  };
  return {
    stream,
    subject,
    type,
    peek(data) {
      const { partnership, notify } = read(data);
      return { productId: partnership.productId, sendsEmail: notify };
    },
    async build(owners, eventId, data, { portalUrl }) {
      const { event, partnership: ref, notify } = read(data);
      const [partnership, stats] = await Promise.all([
        owners.partnership(ref.productId, ref.id),
        owners.partnershipStats(ref.productId, ref.id),
      ]);
      const affiliate = partnership.affiliate ?? { email: "", name: "" };
      return {
        productId: ref.productId,
        body: { id: eventId, type, created_at: isoOf(event.occurredAt), data: toPublicPartnership(partnership, stats) },
        emails:
          notify && affiliate.email
            ? [
                welcomeEmail(
                  affiliate,
                  partnership.referralCode,
                  portalUrl ? { url: portalUrl, productId: ref.productId } : undefined,
                ),
              ]
            : [],
      };
    },
  };
}

function commissionSubscription<T extends WebhookEventType>(
  domainEvent: DomainEvent<
    | typeof CommissionCreatedSchema
    | typeof CommissionApprovedSchema
    | typeof CommissionRejectedSchema
    | typeof CommissionFlaggedSchema
    | typeof CommissionReviewedSchema
  >,
  type: T,
): Subscription<T> {
  const { service: stream, subject } = domainEvent;
  const read = (data: Uint8Array) => {
    const event = decodeEvent(domainEvent, data);
    if (!event.commission?.id || !event.commission.productId)
      throw new UndecodableEvent(`${subject} without a commission`);
    return { event, ref: event.commission };
  };
  return {
    stream,
    subject,
    type,
    peek: (data) => ({ productId: read(data).ref.productId, sendsEmail: false }),
    async build(owners, eventId, data) {
      const { event, ref } = read(data);
      const commission = await owners.commission(ref.productId, ref.id);
      const partnership = await owners.partnership(ref.productId, commission.partnershipId);
      return {
        productId: ref.productId,
        body: {
          id: eventId,
          type,
          created_at: isoOf(event.occurredAt),
          data: toPublicCommission(commission, partnership),
        },
        emails: [],
      };
    },
  };
}

/**
 * commission.refunded: the commission, the refund's figures (spec 4.9) and its reason. The
 * affiliate is emailed on a full void or on any clawback of a paid commission (contract 7),
 * never on a partial refund of an unpaid one.
 */
const commissionRefunded: Subscription<"commission.refunded"> = {
  stream: ledgerEvents.commissionRefunded.service,
  subject: ledgerEvents.commissionRefunded.subject,
  type: "commission.refunded",
  peek(data) {
    const event = decodeEvent(ledgerEvents.commissionRefunded, data);
    if (!event.commission?.productId) throw new UndecodableEvent("CommissionRefunded without a commission");
    return { productId: event.commission.productId, sendsEmail: refundNotifiesAffiliate(event) };
  },
  async build(owners, eventId, data) {
    const event = decodeEvent(ledgerEvents.commissionRefunded, data);
    const ref = event.commission;
    if (!ref?.id || !ref.productId) throw new UndecodableEvent("CommissionRefunded without a commission");
    const commission = await owners.commission(ref.productId, ref.id);
    const partnership = await owners.partnership(ref.productId, commission.partnershipId);
    const reason = commission.reason || null;
    const affiliate = partnership.affiliate ?? { email: "", name: "" };
    const previousCents = Number(event.previousAmountCents);
    const newCents = Number(event.newAmountCents);
    return {
      productId: ref.productId,
      body: {
        id: eventId,
        type: "commission.refunded",
        created_at: isoOf(event.occurredAt),
        data: {
          ...toPublicCommission(commission, partnership),
          ...(event.refund ? toPublicRefund(event.refund) : {}),
          reason,
        },
      },
      emails:
        refundNotifiesAffiliate(event) && affiliate.email
          ? [
              refundNoticeEmail(affiliate, {
                commissionId: commission.id,
                previousCents,
                newCents,
                clawbackCents: Number(event.clawbackCents),
                reason,
                currency: "usd",
              }),
            ]
          : [],
    };
  },
};

/** A full void (the commission fell to 0) or a clawback of a paid one (contract 7). */
export function refundNotifiesAffiliate(event: MessageShape<typeof CommissionRefundedSchema>): boolean {
  const fullVoid = event.newAmountCents === 0n && event.previousAmountCents > 0n;
  const clawback = event.previousStatus === CommissionStatus.PAID && event.newAmountCents < event.previousAmountCents;
  return fullVoid || clawback;
}

function payoutSubscription<T extends WebhookEventType>(
  domainEvent: DomainEvent<
    | typeof PayoutCreatedSchema
    | typeof PayoutApprovedSchema
    | typeof PayoutRejectedSchema
    | typeof PayoutCompletedSchema
  >,
  type: T,
): Subscription<T> {
  const { service: stream, subject } = domainEvent;
  const read = (data: Uint8Array) => {
    const event = decodeEvent(domainEvent, data);
    if (!event.payout?.id || !event.payout.productId) throw new UndecodableEvent(`${subject} without a payout`);
    return { event, payout: event.payout };
  };
  return {
    stream,
    subject,
    type,
    peek: (data) => ({ productId: read(data).payout.productId, sendsEmail: false }),
    async build(owners, eventId, data) {
      const { event, payout } = read(data);
      const partnership = await owners.partnership(payout.productId, payout.partnershipId);
      return {
        productId: payout.productId,
        body: {
          id: eventId,
          type,
          created_at: isoOf(event.occurredAt),
          data: toPublicPayout(payout, partnership, { deleted: type === "payout.rejected" }),
        },
        emails: [],
      };
    },
  };
}

/**
 * customer.erased: the privacy service's receipt of a completed erasure (contract 9a). The event
 * and the webhook carry ids and times only, never the email, so nobody is asked anything.
 */
const customerErased: Subscription<"customer.erased"> = (() => {
  const erased = privacyEvents.customerErased;
  const read = (data: Uint8Array) => {
    const event = decodeEvent(erased, data);
    if (!event.erasureId || !event.productId) throw new UndecodableEvent(`${erased.subject} without an erasure`);
    return event;
  };
  return {
    stream: erased.service,
    subject: erased.subject,
    type: "customer.erased",
    peek: (data) => ({ productId: read(data).productId, sendsEmail: false }),
    async build(_owners, eventId, data) {
      const event = read(data);
      return {
        productId: event.productId,
        body: {
          id: eventId,
          type: "customer.erased",
          created_at: isoOf(event.occurredAt),
          data: {
            erasure_id: event.erasureId,
            requested_at: isoOf(event.requestedAt),
            completed_at: isoOf(event.completedAt),
          },
        },
        emails: [],
      };
    },
  };
})();

/**
 * Every public event type of contract 9 and the subscription that produces it. Keyed by the
 * public types (the list the REST schemas, the OpenAPI document and endpoint validation use), so a
 * type offered to merchants and never delivered, or a subscription producing another type than
 * its key, fails to build.
 */
export const subscriptionsByType = {
  "partnership.created": partnershipSubscription(partnersEvents.partnershipCreated, "partnership.created"),
  "partnership.reactivated": partnershipSubscription(partnersEvents.partnershipReactivated, "partnership.reactivated"),
  "partnership.removed": partnershipSubscription(partnersEvents.partnershipRemoved, "partnership.removed"),
  "commission.created": commissionSubscription(ledgerEvents.commissionCreated, "commission.created"),
  "commission.approved": commissionSubscription(ledgerEvents.commissionApproved, "commission.approved"),
  "commission.rejected": commissionSubscription(ledgerEvents.commissionRejected, "commission.rejected"),
  "commission.refunded": commissionRefunded,
  "commission.flagged": commissionSubscription(ledgerEvents.commissionFlagged, "commission.flagged"),
  "commission.reviewed": commissionSubscription(ledgerEvents.commissionReviewed, "commission.reviewed"),
  "payout.created": payoutSubscription(payoutsEvents.payoutCreated, "payout.created"),
  "payout.approved": payoutSubscription(payoutsEvents.payoutApproved, "payout.approved"),
  "payout.rejected": payoutSubscription(payoutsEvents.payoutRejected, "payout.rejected"),
  "payout.completed": payoutSubscription(payoutsEvents.payoutCompleted, "payout.completed"),
  "customer.erased": customerErased,
} satisfies { [T in WebhookEventType]: Subscription<T> };

/**
 * An affiliate's sign-in by email (contract section 14): no webhook, one email with a fresh
 * one-time code, which partners issues when the email is recorded (never carried by the event).
 * A sign-in already used or expired when its event is handled sends nothing.
 */
const affiliateLoginRequested: Subscription<null> = (() => {
  const requested = partnersEvents.affiliateLoginRequested;
  const read = (data: Uint8Array) => {
    const event = decodeEvent(requested, data);
    if (!event.loginId || !event.productId) throw new UndecodableEvent(`${requested.subject} without a login`);
    return event;
  };
  return {
    stream: requested.service,
    subject: requested.subject,
    type: null,
    peek: (data) => ({ productId: read(data).productId, sendsEmail: true }),
    async build(owners, eventId, data, { portalUrl }) {
      const event = read(data);
      const login = await owners.loginCode(event.productId, event.loginId);
      return {
        productId: event.productId,
        body: null,
        eventId,
        emails: login ? [affiliateLoginEmail(login.affiliate, { ...login, portalUrl })] : [],
      };
    },
  };
})();

/** The subscriptions as the consumers start them, one per domain subject. */
export const subscriptions: readonly Subscription[] = [...Object.values(subscriptionsByType), affiliateLoginRequested];
