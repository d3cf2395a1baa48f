import {
  addErasedRecords,
  type ErasureOwner,
  emailInJson,
  erasedMarker,
  literalPattern,
  type Sql,
} from "@affiliate/platform";

/** The stores of this service that hold customers' personal data, as erasure receipts name them. */
export const integrationStores = ["stripe_events"] as const;

/** Events per transaction: a customer with many events is erased in short transactions. */
const batchSize = 500;

/**
 * The integrations service as an owner of personal data (contract 9a): the stored Stripe events
 * quote the customer's email (a customer's, a session's, an invoice's). Erasure replaces every
 * occurrence in the payload with `[erased]`, whatever its capitals; ids, amounts and outcomes
 * stay. Each batch commits with its count.
 */
export function integrationsErasureOwner(sql: Sql): ErasureOwner {
  const pattern = (email: string) => literalPattern(emailInJson(email));
  return {
    stores: integrationStores,
    async erase({ productId, email, erasureId }) {
      for (;;) {
        const erased = await sql.begin(async (tx) => {
          const rows = await tx`
            update stripe_events set payload = regexp_replace(payload::text, ${pattern(email)}, ${erasedMarker}, 'gi')::jsonb
            where id = any(array(
              select id from stripe_events
              where product_id = ${productId} and payload::text ~* ${pattern(email)}
              limit ${batchSize} for update))`;
          await addErasedRecords(tx, erasureId, { stripe_events: rows.count });
          return rows.count;
        });
        if (erased < batchSize) return;
      }
    },
    async find({ productId, email }) {
      const [row] = await sql<{ events: number }[]>`
        select count(*)::int as events from stripe_events
        where product_id = ${productId} and payload::text ~* ${pattern(email)}`;
      return { stripe_events: row?.events ?? 0 };
    },
  };
}
