import { setTimeout as sleep } from "node:timers/promises";
import { Events, type JetStreamManager, type NatsConnection } from "nats";
import { type Follow, type FollowOptions, followEvents } from "./consumer.js";
import type { Logger } from "./logger.js";

export interface FollowWhileConnectedOptions {
  /** Opens the NATS connection, which the follow then owns (and closes on stop). */
  connect: () => Promise<NatsConnection>;
  /** The producing service's stream (streamName()). */
  stream: string;
  /** Domain subject filter, e.g. "partners.product.keys_rotated". */
  subject: string;
  namespace: string;
  logger: Logger;
  /** What the logs call this feed, e.g. "key rotations". */
  purpose: string;
  handle: FollowOptions["handle"];
  /**
   * Told whether events are being followed right now. A cache that these events evict may be
   * trusted only while it is told true: otherwise an eviction could be missed.
   */
  onFollowing(following: boolean): void;
  /** Delay between attempts to connect or to follow the stream. */
  retryMs?: number;
  /**
   * How often the feed is asked to prove itself alive: the followed stream's info, which the
   * stream's leader answers through the connection's server.
   */
  heartbeatMs?: number;
  /**
   * How long the feed may go without proof of life before the cache stops trusting itself. A
   * frozen server or a partition keeps the TCP connection open and no disconnect is ever
   * reported, so without this an eviction could be missed for as long as the freeze lasts.
   */
  silentAfterMs?: number;
  /** Replaceable in tests; the platform's ordered consumer otherwise. */
  follow?: typeof followEvents;
}

/**
 * Follows a subject on every replica for as long as the process runs, for caches each replica
 * keeps (the gateway's keys, the ledger's attribution data). It retries until NATS answers and
 * the stream exists (the producer may start later), reports not-following while NATS is
 * disconnected, and after a reconnect follows afresh rather than trusting the old consumer to
 * have caught up. It also reports not-following while the stream has not answered a heartbeat
 * for `silentAfterMs`: a frozen server or a partition keeps the connection open without any
 * disconnect, and events sent meanwhile would arrive late. The heartbeat asks the stream, not
 * only the server: after a NATS node is lost, a stream it led has no leader for seconds while the
 * connection (to another node) and the consumer stay up, and nothing is published meanwhile (a
 * rotated key would keep passing for seconds after its rotation). When answers come again, it
 * reports following again (the cache starts empty: it was cleared when trust was lost).
 */
export function followWhileConnected(options: FollowWhileConnectedOptions): { stop(): Promise<void> } {
  const { logger, stream, purpose } = options;
  const retryMs = options.retryMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 250;
  const silentAfterMs = options.silentAfterMs ?? 1000;
  const follow = options.follow ?? followEvents;
  const stopping = new AbortController();
  let connection: NatsConnection | undefined;
  let following: Follow | undefined;
  let attempt = 0;

  // Trust = a follow is running and the stream answered a heartbeat within silentAfterMs.
  let heardAt = 0;
  let reported: boolean | undefined;
  const reportTrust = () => {
    const alive = Date.now() - heardAt <= silentAfterMs;
    const trusted = following !== undefined && alive && !stopping.signal.aborted;
    if (trusted === reported) return;
    if (!trusted && following !== undefined && !alive) {
      logger.warn({ stream, purpose, silentAfterMs }, "event feed silent; cache bypassed");
    } else if (trusted && reported === false) {
      logger.info({ stream, purpose }, "event feed alive again; cache enabled");
    }
    reported = trusted;
    options.onFollowing(trusted);
  };
  const distrust = () => {
    reported = false;
    options.onFollowing(false);
  };

  // One manager per connection, made without the API check (a round trip of its own).
  const managers = new WeakMap<NatsConnection, Promise<JetStreamManager>>();
  const streamAnswers = async (nc: NatsConnection) => {
    let jsm = managers.get(nc);
    if (!jsm) {
      jsm = nc.jetstreamManager({ checkAPI: false, timeout: silentAfterMs });
      managers.set(nc, jsm);
    }
    await (await jsm).streams.info(stream);
  };

  let pinging = false;
  const heartbeat = setInterval(() => {
    const nc = connection;
    if (nc && !pinging && !nc.isClosed()) {
      pinging = true;
      streamAnswers(nc)
        .then(() => {
          heardAt = Date.now();
        })
        .catch(() => undefined)
        .finally(() => {
          pinging = false;
          reportTrust();
        });
    }
    reportTrust();
  }, heartbeatMs);
  heartbeat.unref();

  const pause = () => sleep(retryMs, undefined, { signal: stopping.signal }).catch(() => undefined);

  const stopFollowing = () => {
    const current = following;
    following = undefined;
    current?.stop().catch((error: unknown) => logger.warn({ err: error, purpose }, "stopping a follow failed"));
  };

  const startFollowing = async (nc: NatsConnection) => {
    const mine = ++attempt;
    stopFollowing();
    distrust();
    for (let tries = 0; mine === attempt && !stopping.signal.aborted; tries++) {
      try {
        const started = await follow({
          js: nc.jetstream(),
          stream,
          subject: options.subject,
          namespace: options.namespace,
          logger,
          handle: options.handle,
          // The node holding the consumer was lost (the connection is with another one): events
          // would stop arriving unannounced, so trust goes now and a new consumer is made.
          onSilent: () => {
            if (following === undefined || mine !== attempt || stopping.signal.aborted) return;
            logger.warn({ stream, purpose }, "event consumer silent; cache bypassed, following afresh");
            void startFollowing(nc);
          },
        });
        if (mine !== attempt || stopping.signal.aborted) {
          await started.stop();
          return;
        }
        following = started;
        // Creating the consumer was itself a round trip the server answered.
        heardAt = Date.now();
        reportTrust();
        logger.info({ stream, purpose }, "following events; cache enabled");
        void started.ended.then(() => followEndedByItself(nc, started));
        return;
      } catch (error) {
        if (tries === 0)
          logger.warn({ reason: String(error), stream, purpose }, "cannot follow events yet; cache bypassed");
        await pause();
      }
    }
  };

  // An ordered consumer can end while NATS stays connected (deleted, or given up on): events
  // would be missed from then on, so the cache stops trusting itself and the follow starts again.
  const followEndedByItself = (nc: NatsConnection, ended: Follow) => {
    if (following !== ended || stopping.signal.aborted) return;
    following = undefined;
    distrust();
    logger.warn({ stream, purpose }, "event follow ended by itself; cache bypassed, following afresh");
    void startFollowing(nc);
  };

  const watchConnection = async (nc: NatsConnection) => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) {
        attempt++;
        stopFollowing();
        distrust();
        logger.warn({ purpose }, "nats disconnected; cache bypassed");
      } else if (status.type === Events.Reconnect) {
        void startFollowing(nc);
      }
    }
  };

  const run = async () => {
    for (let tries = 0; !stopping.signal.aborted; tries++) {
      try {
        const nc = await options.connect();
        if (stopping.signal.aborted) {
          await nc.close();
          return;
        }
        connection = nc;
        void watchConnection(nc).catch((error: unknown) =>
          logger.error({ err: error, purpose }, "nats status watch failed"),
        );
        await startFollowing(nc);
        return;
      } catch (error) {
        if (tries === 0) logger.warn({ reason: String(error), purpose }, "cannot reach nats yet; cache bypassed");
        await pause();
      }
    }
  };

  void run();

  return {
    async stop() {
      stopping.abort();
      clearInterval(heartbeat);
      attempt++;
      distrust();
      await following?.stop();
      following = undefined;
      await connection?.close();
    },
  };
}
