import { keysetPage, type PageRequest, type PageTokens, type Sql } from "@affiliate/platform";
import {
  attemptsOf,
  findDelivery,
  listDeliveries as listDeliveryRows,
  requeueDelivery,
  requeueFailed,
} from "../store/deliveries.js";
import { lockEndpoint } from "../store/endpoints.js";
import { deliveryNotFound, webhookNotFound } from "./errors.js";
import type { Attempt, Delivery } from "./types.js";
import { getWebhookOrThrow } from "./webhooks.js";

export interface DeliveryDeps {
  sql: Sql;
  clock: () => Date;
  pageTokens: PageTokens;
}

export async function listDeliveries(deps: DeliveryDeps, productId: string, webhookId: string, page: PageRequest) {
  await getWebhookOrThrow(deps, productId, webhookId);
  return keysetPage(deps.pageTokens, `${productId}|deliveries|${webhookId}`, page, (afterId, limit) =>
    listDeliveryRows(deps.sql, webhookId, afterId, limit),
  );
}

export async function getDeliveryOrThrow(
  deps: Pick<DeliveryDeps, "sql">,
  productId: string,
  webhookId: string,
  id: string,
): Promise<Delivery & { attemptLog: Attempt[] }> {
  const delivery = await findDelivery(deps.sql, productId, webhookId, id);
  if (!delivery) throw deliveryNotFound(id);
  return { ...delivery, attemptLog: await attemptsOf(deps.sql, id) };
}

/** One more attempt now, with the same webhook-id, whatever the delivery's status (contract 9b). */
export async function retryDelivery(deps: DeliveryDeps, productId: string, webhookId: string, id: string) {
  await getDeliveryOrThrow(deps, productId, webhookId, id);
  await requeueDelivery(deps.sql, id, deps.clock());
  return getDeliveryOrThrow(deps, productId, webhookId, id);
}

/** Every failed delivery of the endpoint created in [since, until) is attempted again (contract 9b). */
export async function recoverDeliveries(
  deps: DeliveryDeps,
  productId: string,
  webhookId: string,
  window: { since: Date; until?: Date },
): Promise<number> {
  const now = deps.clock();
  // The endpoint first (the lock order, store/endpoints.ts): a delete of it waits, or is waited for.
  return deps.sql.begin(async (tx) => {
    if (!(await lockEndpoint(tx, webhookId, "change", productId))) throw webhookNotFound(webhookId);
    return requeueFailed(tx, webhookId, window.since, window.until ?? now, now);
  });
}
