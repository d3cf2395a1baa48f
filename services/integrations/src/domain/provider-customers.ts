import type { SealingKey, Sql } from "@affiliate/platform";
import { connectionOfProduct } from "../store/connections.js";
import type { FetchedCustomer, ProviderCustomers } from "./ports.js";

/**
 * The provider's customers through each product's own connection: its API key, opened here only
 * for the call. A connection without a key answers `no_api_key`.
 */
export function providerCustomers(deps: {
  sql: Sql;
  sealing: SealingKey;
  fetchWith(apiKey: string, customerId: string): Promise<FetchedCustomer>;
}): ProviderCustomers {
  return {
    async fetch(productId, customerId) {
      const connection = await connectionOfProduct(deps.sql, productId);
      if (!connection?.apiKey) return "no_api_key";
      return deps.fetchWith(deps.sealing.open(connection.apiKey), customerId);
    },
  };
}
