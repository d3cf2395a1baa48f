import type { OperationId, RequestOf, ResultOf } from "./operations.js";
import { type ClientOptions, Requester } from "./requester.js";
import { createResources } from "./resources.js";

export * from "./errors.js";
export type { components, operations, webhooks } from "./generated/openapi.js";
export { type Int64Fields, parseExact, stringifyExact } from "./json.js";
export type {
  BodyOf,
  CallOptions,
  IdempotencyOptions,
  Lenient,
  Method,
  OperationId,
  PathParamsOf,
  QueryOf,
  RequestOf,
  ResultOf,
} from "./operations.js";
export { operationTable } from "./operations.js";
export { type ListPage, PagedList } from "./pagination.js";
export type { ClientOptions, RetryEvent } from "./requester.js";
export { type Body, type Endpoint, type ItemOf, operationsWithoutMethod, type Query } from "./resources.js";
export { defaultRetryOptions, type RetryOptions } from "./retry.js";
export {
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhooks.js";

type Resources = ReturnType<typeof createResources>;

/**
 * The affiliate platform's API. Every operation of its OpenAPI document is a method, grouped by
 * resource (`client.refunds.create(…)`, `client.affiliates.list(…)`), and any one can also be
 * sent by its operation id (`client.request("getCommission", { params: { id } })`).
 */
export class AffiliateClient implements Resources {
  readonly #requester: Requester;
  readonly events: Resources["events"];
  readonly affiliates: Resources["affiliates"];
  readonly affiliate: Resources["affiliate"];
  readonly commissions: Resources["commissions"];
  readonly refunds: Resources["refunds"];
  readonly payouts: Resources["payouts"];
  readonly program: Resources["program"];
  readonly stats: Resources["stats"];
  readonly webhooks: Resources["webhooks"];
  readonly customers: Resources["customers"];
  readonly integrations: Resources["integrations"];
  readonly publishableKeys: Resources["publishableKeys"];
  readonly console: Resources["console"];
  readonly operations: Resources["operations"];

  constructor(options: ClientOptions) {
    this.#requester = new Requester(options);
    const resources = createResources((id, request) => this.#requester.call(id, request));
    this.events = resources.events;
    this.affiliates = resources.affiliates;
    this.affiliate = resources.affiliate;
    this.commissions = resources.commissions;
    this.refunds = resources.refunds;
    this.payouts = resources.payouts;
    this.program = resources.program;
    this.stats = resources.stats;
    this.webhooks = resources.webhooks;
    this.customers = resources.customers;
    this.integrations = resources.integrations;
    this.publishableKeys = resources.publishableKeys;
    this.console = resources.console;
    this.operations = resources.operations;
  }

  /** Sends operation `id` of the document with the same retries and exact reading as the methods. */
  request<Id extends OperationId>(id: Id, request: RequestOf<Id>): Promise<ResultOf<Id>> {
    return this.#requester.call(id, request);
  }
}
