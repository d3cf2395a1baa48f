import type { Queryable } from "@affiliate/platform";

/** A connection row with its secrets still sealed. */
export interface ConnectionRow {
  id: string;
  productId: string;
  webhookSecret: Buffer;
  previousWebhookSecret: Buffer | null;
  previousSecretUntil: Date | null;
  apiKey: Buffer | null;
  connectedAt: Date;
}

const columns = (sql: Queryable) =>
  sql`id, product_id, webhook_secret, previous_webhook_secret, previous_secret_until, api_key, connected_at`;

export async function connectionOfProduct(sql: Queryable, productId: string): Promise<ConnectionRow | undefined> {
  const [row] = await sql<ConnectionRow[]>`
    select ${columns(sql)} from stripe_connections where product_id = ${productId}`;
  return row;
}

export async function connectionById(sql: Queryable, id: string): Promise<ConnectionRow | undefined> {
  const [row] = await sql<ConnectionRow[]>`select ${columns(sql)} from stripe_connections where id = ${id}`;
  return row;
}

/** The product's connection, locked: a replacement of its secrets reads and writes it at once. */
export async function lockConnectionOfProduct(sql: Queryable, productId: string): Promise<ConnectionRow | undefined> {
  const [row] = await sql<ConnectionRow[]>`
    select ${columns(sql)} from stripe_connections where product_id = ${productId} for update`;
  return row;
}

export async function insertConnection(
  sql: Queryable,
  row: { id: string; productId: string; webhookSecret: Buffer; apiKey: Buffer | null; now: Date },
): Promise<ConnectionRow | undefined> {
  const [inserted] = await sql<ConnectionRow[]>`
    insert into stripe_connections (id, product_id, webhook_secret, api_key, connected_at, updated_at)
    values (${row.id}, ${row.productId}, ${row.webhookSecret}, ${row.apiKey}, ${row.now}, ${row.now})
    on conflict (product_id) do nothing
    returning ${columns(sql)}`;
  return inserted;
}

export async function replaceSecrets(
  sql: Queryable,
  id: string,
  secrets: {
    webhookSecret: Buffer;
    previousWebhookSecret: Buffer | null;
    previousSecretUntil: Date | null;
    apiKey: Buffer | null;
    now: Date;
  },
): Promise<ConnectionRow> {
  const [row] = await sql<ConnectionRow[]>`
    update stripe_connections
    set webhook_secret = ${secrets.webhookSecret}, previous_webhook_secret = ${secrets.previousWebhookSecret},
        previous_secret_until = ${secrets.previousSecretUntil}, api_key = ${secrets.apiKey}, updated_at = ${secrets.now}
    where id = ${id}
    returning ${columns(sql)}`;
  return row as ConnectionRow;
}

export async function deleteConnection(sql: Queryable, productId: string): Promise<boolean> {
  const deleted = await sql`delete from stripe_connections where product_id = ${productId}`;
  return deleted.count > 0;
}

/** The connections reconciliation visits every hour: those with an API key. */
export async function connectionsWithApiKey(sql: Queryable): Promise<{ productId: string }[]> {
  return sql<{ productId: string }[]>`select product_id from stripe_connections where api_key is not null order by id`;
}

/** When the connection's last event arrived, and how many arrived (since it was connected). */
export async function connectionActivity(
  sql: Queryable,
  connection: { id: string },
): Promise<{ lastEventAt: Date | null; eventsReceived: number }> {
  const [row] = await sql<{ lastEventAt: Date | null; eventsReceived: number }[]>`
    select max(received_at) as last_event_at, count(*)::int as events_received
    from stripe_events where connection_id = ${connection.id}`;
  return { lastEventAt: row?.lastEventAt ?? null, eventsReceived: row?.eventsReceived ?? 0 };
}
