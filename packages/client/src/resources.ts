import type {
  BodyOf,
  CallOptions,
  IdempotencyOptions,
  Lenient,
  OperationId,
  QueryOf,
  RequestOf,
  ResultOf,
} from "./operations.js";
import { PagedList } from "./pagination.js";

/** Sends one operation (Requester.call). */
export type Call = <Id extends OperationId>(id: Id, request: RequestOf<Id>) => Promise<ResultOf<Id>>;

/** The body an operation takes, numbers as number or bigint. */
export type Body<Id extends OperationId> = Lenient<BodyOf<Id>>;
/** The query an operation takes, numbers as number or bigint. */
export type Query<Id extends OperationId> = Lenient<QueryOf<Id>>;
/** One item of a list operation's `data`. */
export type ItemOf<Id extends OperationId> = ResultOf<Id> extends { data: (infer Item)[] } ? Item : never;

type Page<Id extends OperationId> = ResultOf<Id> & { data: ItemOf<Id>[] };

/** A method of the client, tagged with the operation it sends (the coverage test reads the tag). */
export type Endpoint<Id extends OperationId, Method> = Method & { readonly operationId: Id };

function endpoint<Id extends OperationId, Method extends (...args: never[]) => unknown>(
  operationId: Id,
  method: Method,
): Endpoint<Id, Method> {
  return Object.assign(method, { operationId });
}

/**
 * A list operation as a PagedList: awaited for its first page, iterated for every item. A list
 * asked for with a `cursor` (a page the caller kept from an earlier answer) starts there.
 */
function list<Id extends OperationId>(
  fetchPage: (cursor: string | undefined) => Promise<ResultOf<Id>>,
  start?: string,
): PagedList<ItemOf<Id>, Page<Id>> {
  return new PagedList<ItemOf<Id>, Page<Id>>((cursor) => fetchPage(cursor ?? start) as Promise<Page<Id>>);
}

/**
 * Every operation of the API as a method, grouped by resource as the document's tags group them.
 * A method's arguments are the path ids (in path order), then the body or query, then options.
 */
export function createResources(call: Call) {
  return {
    /** Tracking: clicks, signups and payments (`POST /events`), live or sandbox by key. */
    events: {
      /**
       * Records one event. A payment with `external_id` is safe to repeat and is retried after an
       * unknown outcome; a click, a signup or a payment without it is not.
       */
      track: endpoint("trackEvent", (body: Body<"trackEvent">, options?: CallOptions) =>
        call("trackEvent", { body, ...options }),
      ),
      /** Up to 500 events, each answered as if sent alone. Retried after an unknown outcome only when every event is a payment with `external_id`. */
      trackBatch: endpoint("trackEventBatch", (body: Body<"trackEventBatch">, options?: CallOptions) =>
        call("trackEventBatch", { body, ...options }),
      ),
    },

    affiliates: {
      register: endpoint("registerAffiliate", (body: Body<"registerAffiliate">, options?: CallOptions) =>
        call("registerAffiliate", { body, ...options }),
      ),
      bulkRegister: endpoint("bulkRegisterAffiliates", (body: Body<"bulkRegisterAffiliates">, options?: CallOptions) =>
        call("bulkRegisterAffiliates", { body, ...options }),
      ),
      list: endpoint("listAffiliates", (query?: Query<"listAffiliates">, options?: CallOptions) =>
        list<"listAffiliates">(
          (cursor) => call("listAffiliates", { query: { ...query, cursor }, ...options }),
          query?.cursor,
        ),
      ),
      get: endpoint("getAffiliate", (id: string, options?: CallOptions) =>
        call("getAffiliate", { params: { id }, ...options }),
      ),
      update: endpoint(
        "updateAffiliateStatus",
        (id: string, body: Body<"updateAffiliateStatus">, options?: CallOptions) =>
          call("updateAffiliateStatus", { params: { id }, body, ...options }),
      ),
      remove: endpoint("removeAffiliate", (id: string, options?: CallOptions) =>
        call("removeAffiliate", { params: { id }, ...options }),
      ),
      /** How the affiliate is paid, as it set it in the portal; masked. */
      payoutMethod: endpoint("getAffiliatePayoutMethodOfPartnership", (id: string, options?: CallOptions) =>
        call("getAffiliatePayoutMethodOfPartnership", { params: { id }, ...options }),
      ),
      /** The Stripe promotion codes that attribute to the affiliate (contract section 17). */
      coupons: {
        get: endpoint("getAffiliateCoupons", (id: string, options?: CallOptions) =>
          call("getAffiliateCoupons", { params: { id }, ...options }),
        ),
        /** Replaces the affiliate's promotion codes; a code another affiliate holds is 409. */
        set: endpoint("setAffiliateCoupons", (id: string, body: Body<"setAffiliateCoupons">, options?: CallOptions) =>
          call("setAffiliateCoupons", { params: { id }, body, ...options }),
        ),
      },
      /** The affiliate's own tokens for the affiliate API and the portal (contract section 14). */
      tokens: {
        /** A token (`apt_…`) for an active affiliate, shown only in this answer. */
        mint: endpoint(
          "mintAffiliateToken",
          (id: string, body: Body<"mintAffiliateToken"> = {}, options?: CallOptions) =>
            call("mintAffiliateToken", { params: { id }, body, ...options }),
        ),
        /** Revokes every token of the affiliate; every gateway refuses them within 2 seconds. */
        revoke: endpoint("revokeAffiliateTokens", (id: string, options?: CallOptions) =>
          call("revokeAffiliateTokens", { params: { id }, ...options }),
        ),
      },
    },

    /**
     * The affiliate API: one affiliate's own program, with the client's `token` (`apt_…`), from
     * a browser or a server. Sign-in needs no token; it buys one.
     */
    affiliate: {
      me: endpoint("getAffiliateMe", (options?: CallOptions) => call("getAffiliateMe", { ...options })),
      /** How the affiliate is paid: PayPal or Wise details, read masked. */
      payoutMethod: {
        get: endpoint("getAffiliatePayoutMethod", (options?: CallOptions) =>
          call("getAffiliatePayoutMethod", { ...options }),
        ),
        set: endpoint("setAffiliatePayoutMethod", (body: Body<"setAffiliatePayoutMethod">, options?: CallOptions) =>
          call("setAffiliatePayoutMethod", { body, ...options }),
        ),
        delete: endpoint("deleteAffiliatePayoutMethod", (options?: CallOptions) =>
          call("deleteAffiliatePayoutMethod", { ...options }),
        ),
      },
      stats: endpoint("getAffiliateStats", (query?: Query<"getAffiliateStats">, options?: CallOptions) =>
        call("getAffiliateStats", { query, ...options }),
      ),
      commissions: {
        list: endpoint("listAffiliateCommissions", (query?: Query<"listAffiliateCommissions">, options?: CallOptions) =>
          list<"listAffiliateCommissions">(
            (cursor) => call("listAffiliateCommissions", { query: { ...query, cursor }, ...options }),
            query?.cursor,
          ),
        ),
        get: endpoint("getAffiliateCommission", (id: string, options?: CallOptions) =>
          call("getAffiliateCommission", { params: { id }, ...options }),
        ),
      },
      payouts: {
        list: endpoint("listAffiliatePayouts", (query?: Query<"listAffiliatePayouts">, options?: CallOptions) =>
          list<"listAffiliatePayouts">(
            (cursor) => call("listAffiliatePayouts", { query: { ...query, cursor }, ...options }),
            query?.cursor,
          ),
        ),
        /** The payout with its lines, which sum exactly to its amount. */
        get: endpoint("getAffiliatePayout", (id: string, options?: CallOptions) =>
          call("getAffiliatePayout", { params: { id }, ...options }),
        ),
      },
      login: {
        /** Emails a one-time sign-in link when the email is an active affiliate's; always 202. */
        request: endpoint("requestAffiliateLogin", (body: Body<"requestAffiliateLogin">, options?: CallOptions) =>
          call("requestAffiliateLogin", { body, ...options }),
        ),
        /** Trades the link's code for a token, once. */
        exchange: endpoint(
          "exchangeAffiliateLoginCode",
          (body: Body<"exchangeAffiliateLoginCode">, options?: CallOptions) =>
            call("exchangeAffiliateLoginCode", { body, ...options }),
        ),
      },
    },

    commissions: {
      list: endpoint("listCommissions", (query?: Query<"listCommissions">, options?: CallOptions) =>
        list<"listCommissions">(
          (cursor) => call("listCommissions", { query: { ...query, cursor }, ...options }),
          query?.cursor,
        ),
      ),
      get: endpoint("getCommission", (id: string, options?: CallOptions) =>
        call("getCommission", { params: { id }, ...options }),
      ),
      update: endpoint("updateCommission", (id: string, body: Body<"updateCommission">, options?: CallOptions) =>
        call("updateCommission", { params: { id }, body, ...options }),
      ),
      /** Decides a commission held for review (`hold_reason: review`): approve or reject, with a note. */
      review: endpoint("reviewCommission", (id: string, body: Body<"reviewCommission">, options?: CallOptions) =>
        call("reviewCommission", { params: { id }, body, ...options }),
      ),
      preview: endpoint("previewCommissions", (body: Body<"previewCommissions">, options?: CallOptions) =>
        call("previewCommissions", { body, ...options }),
      ),
    },

    refunds: {
      /**
       * Refunds a payment. Always sent with an Idempotency-Key (a generated one unless given), so
       * a retry after an unknown outcome answers the first request's outcome and refunds nothing
       * twice. Keep the key to repeat the refund yourself later.
       */
      create: endpoint(
        "createRefund",
        (body: Body<"createRefund">, options?: IdempotencyOptions<"createRefund"> & CallOptions) =>
          call("createRefund", { body, ...options }),
      ),
    },

    payouts: {
      generate: endpoint("generatePayouts", (body: Body<"generatePayouts"> = {}, options?: CallOptions) =>
        call("generatePayouts", { body, ...options }),
      ),
      list: endpoint("listPayouts", (query?: Query<"listPayouts">, options?: CallOptions) =>
        list<"listPayouts">(
          (cursor) => call("listPayouts", { query: { ...query, cursor }, ...options }),
          query?.cursor,
        ),
      ),
      get: endpoint("getPayout", (id: string, options?: CallOptions) =>
        call("getPayout", { params: { id }, ...options }),
      ),
      update: endpoint("updatePayout", (id: string, body: Body<"updatePayout">, options?: CallOptions) =>
        call("updatePayout", { params: { id }, body, ...options }),
      ),
      /** The approved payouts as a provider's batch file (text/csv): PayPal, Wise, or the platform's CSV. */
      export: endpoint("exportPayouts", (query: Query<"exportPayouts">, options?: CallOptions) =>
        call("exportPayouts", { query, ...options }),
      ),
      /**
       * A provider's result file (its text): each listed payout marked paid or failed, all or
       * nothing; the same file again changes nothing (`already_imported`).
       */
      import: endpoint(
        "importPayoutResults",
        (file: string, query?: Query<"importPayoutResults">, options?: CallOptions) =>
          call("importPayoutResults", { body: file, query, ...options }),
      ),
    },

    program: {
      get: endpoint("getProgram", (options?: CallOptions) => call("getProgram", { ...options })),
      update: endpoint("updateProgram", (body: Body<"updateProgram">, options?: CallOptions) =>
        call("updateProgram", { body, ...options }),
      ),
    },

    stats: {
      get: endpoint("getStats", (query?: Query<"getStats">, options?: CallOptions) =>
        call("getStats", { query, ...options }),
      ),
      timeseries: endpoint("getStatsTimeseries", (query?: Query<"getStatsTimeseries">, options?: CallOptions) =>
        call("getStatsTimeseries", { query, ...options }),
      ),
    },

    webhooks: {
      create: endpoint("createWebhook", (body: Body<"createWebhook">, options?: CallOptions) =>
        call("createWebhook", { body, ...options }),
      ),
      list: endpoint("listWebhooks", (options?: CallOptions) =>
        list<"listWebhooks">(() => call("listWebhooks", { ...options })),
      ),
      get: endpoint("getWebhook", (id: string, options?: CallOptions) =>
        call("getWebhook", { params: { id }, ...options }),
      ),
      update: endpoint("updateWebhook", (id: string, body: Body<"updateWebhook">, options?: CallOptions) =>
        call("updateWebhook", { params: { id }, body, ...options }),
      ),
      delete: endpoint("deleteWebhook", (id: string, options?: CallOptions) =>
        call("deleteWebhook", { params: { id }, ...options }),
      ),
      /** A new signing secret; for 24 hours deliveries are signed with both (verifyWebhook takes both). */
      rotateSecret: endpoint("rotateWebhookSecret", (id: string, options?: CallOptions) =>
        call("rotateWebhookSecret", { params: { id }, ...options }),
      ),
      /** Sends a signed `webhook.test` event to the endpoint. */
      test: endpoint("testWebhook", (id: string, options?: CallOptions) =>
        call("testWebhook", { params: { id }, ...options }),
      ),
      /** Attempts every failed delivery of the endpoint created in the window again. */
      recover: endpoint("recoverDeliveries", (id: string, body: Body<"recoverDeliveries">, options?: CallOptions) =>
        call("recoverDeliveries", { params: { id }, body, ...options }),
      ),
      deliveries: {
        list: endpoint("listDeliveries", (id: string, query?: Query<"listDeliveries">, options?: CallOptions) =>
          list<"listDeliveries">(
            (cursor) => call("listDeliveries", { params: { id }, query: { ...query, cursor }, ...options }),
            query?.cursor,
          ),
        ),
        get: endpoint("getDelivery", (id: string, deliveryId: string, options?: CallOptions) =>
          call("getDelivery", { params: { id, delivery_id: deliveryId }, ...options }),
        ),
        retry: endpoint("retryDelivery", (id: string, deliveryId: string, options?: CallOptions) =>
          call("retryDelivery", { params: { id, delivery_id: deliveryId }, ...options }),
        ),
      },
    },

    customers: {
      /** Erases an end customer's personal data in every store of the product; safe to repeat. */
      erase: endpoint("eraseCustomer", (body: Body<"eraseCustomer">, options?: CallOptions) =>
        call("eraseCustomer", { body, ...options }),
      ),
      erasures: {
        list: endpoint("listErasures", (query: Query<"listErasures">, options?: CallOptions) =>
          list<"listErasures">(() => call("listErasures", { query, ...options })),
        ),
        get: endpoint("getErasure", (id: string, options?: CallOptions) =>
          call("getErasure", { params: { id }, ...options }),
        ),
      },
    },

    integrations: {
      stripe: {
        connect: endpoint("connectStripe", (body: Body<"connectStripe">, options?: CallOptions) =>
          call("connectStripe", { body, ...options }),
        ),
        get: endpoint("getStripeConnection", (options?: CallOptions) => call("getStripeConnection", { ...options })),
        disconnect: endpoint("disconnectStripe", (options?: CallOptions) => call("disconnectStripe", { ...options })),
        reconcile: endpoint("reconcileStripe", (body: Body<"reconcileStripe"> = {}, options?: CallOptions) =>
          call("reconcileStripe", { body, ...options }),
        ),
        events: {
          list: endpoint("listStripeEvents", (query?: Query<"listStripeEvents">, options?: CallOptions) =>
            list<"listStripeEvents">(
              (cursor) => call("listStripeEvents", { query: { ...query, cursor }, ...options }),
              query?.cursor,
            ),
          ),
          retry: endpoint("retryStripeEvent", (id: string, options?: CallOptions) =>
            call("retryStripeEvent", { params: { id }, ...options }),
          ),
        },
      },
    },

    /** The publishable keys (`pk_live_`/`pk_test_`) the browser script records clicks with (contract section 17). */
    publishableKeys: {
      get: endpoint("getPublishableKeys", (options?: CallOptions) => call("getPublishableKeys", { ...options })),
      /** New keys; the old ones stop working at once. */
      rotate: endpoint("rotatePublishableKeys", (options?: CallOptions) =>
        call("rotatePublishableKeys", { ...options }),
      ),
    },

    /** The merchant console's sessions (contract section 19). */
    console: {
      sessions: {
        /** Trades the secret key for a short-lived session token (`cst_…`): pass it as `consoleToken`. */
        open: endpoint("openConsoleSession", (body: Body<"openConsoleSession"> = {}, options?: CallOptions) =>
          call("openConsoleSession", { body, ...options }),
        ),
        /** Ends the session the client is signed in with. */
        close: endpoint("closeConsoleSession", (options?: CallOptions) => call("closeConsoleSession", { ...options })),
      },
    },

    /** Probes and the document; no key needed. */
    operations: {
      healthz: endpoint("healthz", (options?: CallOptions) => call("healthz", { ...options })),
      readyz: endpoint("readyz", (options?: CallOptions) => call("readyz", { ...options })),
      openapi: endpoint("openapi", (options?: CallOptions) => call("openapi", { ...options })),
    },
  };
}

/**
 * Operations of the document that have no method, each with the reason. The coverage test
 * accepts exactly these; any other operation without a method fails it.
 */
export const operationsWithoutMethod: Partial<Record<OperationId, string>> = {
  receiveStripeEvent:
    "Stripe's own deliveries: Stripe signs the raw bytes with the merchant's Stripe secret and posts them itself; " +
    "a merchant's backend has nothing to send there (Requester.call can still reach it)",
  followReferralLink: "A link people follow in their browser (a redirect), not a call a backend makes",
  recordClick: "The browser script's call, made with a publishable key from the merchant's pages",
  getPublicProgram:
    "Read by the browser script with a publishable key; a backend reads the program with its secret key",
};
