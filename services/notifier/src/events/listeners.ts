import type { Logger, Sql } from "@affiliate/platform";
import postgres from "postgres";
import { wantsEvent } from "../domain/record-event.js";
import { endpointSubscriptions } from "../store/endpoints.js";

/**
 * Which products have endpoints for which event types, in memory, so that an event nobody
 * listens to is acked without a query (most events of a busy product: bench E's payments made
 * one query per commission before). Endpoints in any state count: a disabled one still gets
 * its deliveries (failed, for `recover`), so the answer is the one `wantsEvent` reads.
 *
 * Kept exact the way docs/performance.md designs it, and trusted only while it follows its
 * feed (as the platform's followWhileConnected caches are):
 *
 * - **The feed.** A connection of its own LISTENs on `<schema>_endpoints`, where a trigger
 *   announces every endpoint made, deleted or given other event types, with its product (migration
 *   0004); each announcement reloads that product. A new connection LISTENs first and then loads
 *   every product, so nothing committed in between is missed; a closed connection makes the
 *   index untrusted at once, before anything can arrive on its successor.
 * - **The fence.** Saying "nobody listens" must not miss an endpoint committed just before the
 *   event arrived. So that answer waits for a heartbeat: a NOTIFY on the same channel sent after
 *   the question was asked. Postgres delivers a listener's notifications in commit order, so
 *   when the heartbeat comes back every endpoint change committed before it has been applied
 *   (reloads are applied in the order announced, the heartbeat after them). One heartbeat
 *   answers every question asked while the previous one travelled. "Somebody listens" needs no
 *   fence: the handler reads the endpoints again in its transaction, which decides.
 * - **Falling back.** Until the feed is up and loaded, or when a heartbeat is not back within
 *   `fenceTimeoutMs` (the connection is then replaced), the question is asked of the database.
 */
export interface Listeners {
  /** Whether an event of `type` in `productId` may have a subscribed endpoint, as of now. */
  listens(productId: string, type: string): Promise<boolean>;
  /**
   * How the answers were reached so far: a listener known in memory, none after a heartbeat,
   * or asked of the database (the feed was not trusted).
   */
  readonly decided: Readonly<Record<"index" | "fenced" | "queried", number>>;
  stop(): Promise<void>;
}

export interface ListenerIndexOptions {
  /** The database of the endpoints; the feed opens its own connection there. */
  url: string;
  schema: string;
  /** The service's pool: loads, and the heartbeats (a NOTIFY is sent by any connection). */
  sql: Sql;
  logger: Logger;
  /** A heartbeat not back by then means the feed is lost (default 2 s). */
  fenceTimeoutMs?: number;
  /** Delay before the feed is opened again after it was lost (default 1 s). */
  retryMs?: number;
}

const everyType = "*";
const heartbeatPrefix = "heartbeat ";

export function startListenerIndex(options: ListenerIndexOptions): Listeners {
  const { sql, logger } = options;
  const channel = `${options.schema}_endpoints`;
  const fenceTimeoutMs = options.fenceTimeoutMs ?? 2000;
  const retryMs = options.retryMs ?? 1000;

  const index = new Map<string, Set<string>>();
  const decided = { index: 0, fenced: 0, queried: 0 };
  let trusted = false;
  let stopped = false;
  // The feed's connections, one at a time; a session's notifications count only while it is current.
  let session = 0;
  let feed: postgres.Sql | undefined;
  // Loads and heartbeats are applied in the order the feed announced them.
  let applied: Promise<void> = Promise.resolve();

  const setProduct = (productId: string, rows: { events: string[] }[]) => {
    const types = new Set(rows.flatMap((row) => (row.events.length === 0 ? [everyType] : row.events)));
    if (types.size === 0) index.delete(productId);
    else index.set(productId, types);
  };
  const known = (productId: string, type: string) => {
    const types = index.get(productId);
    return types !== undefined && (types.has(everyType) || types.has(type));
  };

  // Heartbeats: questions wait for the next one sent after they were asked.
  let waiting: ((fenced: boolean) => void)[] = [];
  let travelling: { heartbeat: string; waiters: ((fenced: boolean) => void)[]; timer: NodeJS.Timeout } | undefined;
  let heartbeats = 0;

  const settle = (heartbeat: string, fenced: boolean) => {
    if (travelling?.heartbeat !== heartbeat) return;
    clearTimeout(travelling.timer);
    for (const resolve of travelling.waiters) resolve(fenced);
    travelling = undefined;
    sendHeartbeat();
  };
  const sendHeartbeat = () => {
    if (travelling || waiting.length === 0) return;
    const mine = session;
    const heartbeat = `${heartbeatPrefix}${mine}.${++heartbeats}`;
    travelling = {
      heartbeat,
      waiters: waiting,
      timer: setTimeout(() => {
        logger.warn({ channel, fenceTimeoutMs }, "endpoint feed silent; listeners asked of the database");
        settle(heartbeat, false);
        lose(mine);
      }, fenceTimeoutMs),
    };
    waiting = [];
    sql`select pg_notify(${channel}, ${heartbeat})`.catch(() => settle(heartbeat, false));
  };
  const fence = () =>
    trusted
      ? new Promise<boolean>((resolve) => {
          waiting.push(resolve);
          sendHeartbeat();
        })
      : Promise.resolve(false);

  /** Ends a session: untrusted at once, its fences answered "not fenced", a new one later. */
  const lose = (lost: number) => {
    if (lost !== session) return;
    session += 1;
    trusted = false;
    if (travelling) settle(travelling.heartbeat, false);
    for (const resolve of waiting.splice(0)) resolve(false);
    const old = feed;
    feed = undefined;
    void old?.end({ timeout: 0 }).catch(() => undefined);
    if (!stopped) setTimeout(open, retryMs).unref();
  };

  const apply = (mine: number, work: () => Promise<void>) => {
    applied = applied.then(async () => {
      if (mine !== session) return;
      try {
        await work();
      } catch (error) {
        logger.warn({ err: error, channel }, "endpoint feed could not be applied; following afresh");
        lose(mine);
      }
    });
  };

  const onNotification = (mine: number, payload: string) => {
    if (payload.startsWith(heartbeatPrefix)) {
      apply(mine, async () => settle(payload, trusted));
      return;
    }
    apply(mine, async () => setProduct(payload, await endpointSubscriptions(sql, payload)));
  };

  const open = () => {
    if (stopped) return;
    const mine = session;
    // `onnotify` is how postgres.js's own listen() hears notifications; its types leave it out.
    const hearing = { onnotify: (_channel: string, payload: string) => onNotification(mine, payload) };
    const connection = postgres(options.url, {
      max: 1,
      max_lifetime: null,
      fetch_types: false,
      connection: { application_name: `notifier endpoint feed ${process.pid}` },
      onnotice: () => {},
      onclose: () => lose(mine),
      ...hearing,
    });
    feed = connection;
    connection
      .unsafe(`listen "${channel}"`)
      .then(() =>
        apply(mine, async () => {
          const rows = await endpointSubscriptions(sql);
          const byProduct = new Map<string, { events: string[] }[]>();
          for (const row of rows) byProduct.set(row.productId, [...(byProduct.get(row.productId) ?? []), row]);
          index.clear();
          for (const [productId, endpoints] of byProduct) setProduct(productId, endpoints);
          trusted = true;
          logger.info({ channel, products: index.size }, "following endpoint changes; listeners decided in memory");
        }),
      )
      .catch((error: unknown) => {
        logger.warn(
          { reason: String(error), channel },
          "cannot follow endpoint changes yet; listeners asked of the database",
        );
        lose(mine);
      });
  };
  open();

  return {
    decided,
    async listens(productId, type) {
      if (trusted && known(productId, type)) {
        decided.index += 1;
        return true;
      }
      if (await fence()) {
        decided.fenced += 1;
        return known(productId, type);
      }
      decided.queried += 1;
      return wantsEvent(sql, productId, type);
    },
    async stop() {
      stopped = true;
      lose(session);
      await applied;
    },
  };
}
