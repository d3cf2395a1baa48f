import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  connectNats,
  createLogger,
  createSql,
  type DurableConsumer,
  ensureStream,
  errorMapping,
  type Logger,
  migrate,
  type NatsConnection,
  PageTokens,
  type Sql,
  streamName,
  wireSubject,
} from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { type Commission, CommissionSchema, CommissionStatus } from "@affiliate/proto/ledger";
import { NotifierService } from "@affiliate/proto/notifier";
import { type Partnership, PartnershipSchema, PartnershipStatus } from "@affiliate/proto/partners";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { create, type DescMessage, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import type { Mailer } from "../src/domain/send-email.js";
import { durableFor, startConsumers } from "../src/events/consumers.js";
import { type Listeners, startListenerIndex } from "../src/events/listeners.js";
import type { Owners } from "../src/events/owners.js";
import { subscriptions } from "../src/events/payloads.js";
import { migrationsDirectory, routes, schema } from "../src/server.js";
import { startWorkers, type Workers } from "../src/workers.js";

export const silentLogger = createLogger("notifier-test", "silent");

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** The services' own logger (its fields, its redaction) writing its lines into memory. */
export function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger("notifier-test", "info", {
    write: (line: string) => void lines.push(JSON.parse(line) as LogLine),
  });
  return { logger, lines };
}

/** The owners' data (ledger commissions, partners' partnerships) in memory. */
export class FakeOwners implements Owners {
  readonly commissions = new Map<string, Commission>();
  readonly partnerships = new Map<string, Partnership>();
  /** Sign-ins by id, each with the codes issued for it (the last one is live), or spent. */
  readonly logins = new Map<string, { affiliate: { email: string; name: string }; codes: string[]; spent: boolean }>();
  /** How many times the owners were asked: an event nobody listens to asks nothing. */
  calls = 0;

  async loginCode(_productId: string, loginId: string) {
    this.calls += 1;
    const login = this.logins.get(loginId);
    if (!login || login.spent) return undefined;
    const code = `code-${loginId}-${login.codes.length + 1}`;
    login.codes.push(code);
    return { code, expiresAt: new Date(Date.now() + 900_000), affiliate: login.affiliate, programName: "Acme" };
  }

  addPartnership(productId: string, id: string, affiliate: { email: string; name: string }): Partnership {
    const partnership = create(PartnershipSchema, {
      id,
      productId,
      status: PartnershipStatus.ACTIVE,
      referralCode: `CODE${id.slice(-4)}`,
      createdAt: timestampFromDate(new Date("2026-01-01T00:00:00Z")),
      affiliate: { id: `aff_${id}`, email: affiliate.email, name: affiliate.name },
    });
    this.partnerships.set(id, partnership);
    return partnership;
  }

  addCommission(
    productId: string,
    id: string,
    partnershipId: string,
    fields: Omit<MessageInitShape<typeof CommissionSchema>, "$typeName"> = {},
  ): Commission {
    const commission = create(CommissionSchema, {
      id,
      productId,
      partnershipId,
      amountCents: 2000n,
      status: CommissionStatus.APPROVED,
      level: 1,
      holdUntil: timestampFromDate(new Date("2026-01-01T00:00:00Z")),
      createdAt: timestampFromDate(new Date("2026-01-01T00:00:00Z")),
      referralCode: "CODE",
      customerEmail: "customer@example.com",
      paymentAmountCents: 10_000n,
      ...fields,
    });
    this.commissions.set(id, commission);
    return commission;
  }

  async commission(_productId: string, id: string) {
    this.calls += 1;
    const found = this.commissions.get(id);
    if (!found) throw new Error(`no commission ${id}`);
    return found;
  }
  async partnership(_productId: string, id: string) {
    this.calls += 1;
    const found = this.partnerships.get(id);
    if (!found) throw new Error(`no partnership ${id}`);
    return found;
  }
  async partnershipStats() {
    return { clicks: 0, conversions: 0, earned_cents: 0n };
  }
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A receiver: records every request; answers each path's programmed statuses in turn, then 200,
 * after `answerAfterMs` (a slow receiver keeps attempts in flight).
 */
export class Sink {
  readonly received: Received[] = [];
  /** Called with the path of each answer as it is sent. */
  private readonly answerWatchers = new Set<(path: string) => void>();
  constructor(private readonly answerAfterMs: () => number = () => 0) {}
  private readonly plans = new Map<string, (number | { status: number; headers: Record<string, string> })[]>();
  private server!: Server;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        const path = req.url ?? "/";
        this.received.push({ path, headers: req.headers, body });
        const next = this.plans.get(path)?.shift() ?? 200;
        const answer = typeof next === "number" ? { status: next, headers: {} } : next;
        const delayMs = this.answerAfterMs();
        const respond = () => {
          res.writeHead(answer.status, answer.headers).end("ok");
          for (const watcher of this.answerWatchers) watcher(path);
        };
        if (delayMs > 0) setTimeout(respond, delayMs);
        else respond();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  program(path: string, statuses: (number | { status: number; headers: Record<string, string> })[]): void {
    this.plans.set(path, [...statuses]);
  }

  /**
   * Resolves when the next answer to one of `paths` is sent: the worker is about to record that
   * attempt (within `timeoutMs`; false when none was sent by then).
   */
  nextAnswer(paths: string[], timeoutMs = 2000): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (answered: boolean) => {
        clearTimeout(timer);
        this.answerWatchers.delete(watcher);
        resolve(answered);
      };
      const watcher = (path: string) => {
        if (paths.includes(path)) done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      this.answerWatchers.add(watcher);
    });
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A clock tests move; the workers compare due times with it. */
export class TestClock {
  constructor(public now = new Date()) {}
  read = () => this.now;
  advance(ms: number): void {
    this.now = new Date(this.now.getTime() + ms);
  }
}

export interface Harness {
  sql: Sql;
  /** The test's own database (for refuseWrites). */
  databaseUrl: string;
  nats: NatsConnection;
  namespace: string;
  notifier: Client<typeof NotifierService>;
  erasure: Client<typeof ErasureOwnerService>;
  owners: FakeOwners;
  clock: TestClock;
  workers: Workers;
  listeners: Listeners;
  publish<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    message: MessageShape<Desc> & { id: string },
  ): Promise<void>;
  /**
   * Resolves once the notifier has handled every event published on `subject` so far, whether it
   * recorded it or skipped it without a transaction: its consumer has nothing pending or unacked.
   */
  handled(subject: string): Promise<void>;
  close(): Promise<void>;
}

/** The notifier on a fresh database and NATS namespace, with its consumers and workers running. */
export async function startHarness(
  options: {
    mailer?: Mailer;
    attemptTimeoutMs?: number;
    /** PORTAL_URL: what emails link to. */
    portalUrl?: string;
    /** Where the index of listeners follows endpoint changes (default: the test database). */
    endpointFeedUrl?: string;
    /** Whether the RPCs accept private URLs (default false). */
    rpcAllowsPrivate?: boolean;
    /** Whether the workers reach private addresses (default true: the receivers are local). */
    workersAllowPrivate?: boolean;
    /** The logger of the consumers, workers and RPC edge (default silent). */
    logger?: Logger;
  } = {},
): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase();
  const logger = options.logger ?? silentLogger;
  const ns: TestNamespace = createTestNamespace();
  const sql = createSql(database.url, { schema, max: 8, applicationName: "notifier-test" });
  await migrate(sql, schema, migrationsDirectory);
  const nats = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "notifier-test");
  const jsm = await nats.jetstreamManager();
  for (const service of new Set(subscriptions.map((subscription) => subscription.stream))) {
    await ensureStream(jsm, { service, namespace: ns.namespace });
  }
  const owners = new FakeOwners();
  const clock = new TestClock();
  const listeners = startListenerIndex({
    url: options.endpointFeedUrl ?? database.url,
    schema,
    sql,
    logger,
    fenceTimeoutMs: 1000,
    retryMs: 100,
  });
  const consumers: DurableConsumer[] = await startConsumers({
    sql,
    listeners,
    js: nats.jetstream(),
    jsm,
    namespace: ns.namespace,
    logger,
    owners,
    clock: clock.read,
    emailSettings: { portalUrl: options.portalUrl },
  });
  const workers = startWorkers({
    sql,
    logger,
    clock: clock.read,
    allowPrivate: options.workersAllowPrivate ?? true,
    mailer: options.mailer,
    concurrency: 8,
    pollMs: 50,
    ...(options.attemptTimeoutMs ? { attemptTimeoutMs: options.attemptTimeoutMs } : {}),
  });
  const transport = createRouterTransport(
    routes({
      sql,
      clock: clock.read,
      allowPrivate: options.rpcAllowsPrivate ?? false,
      pageTokens: new PageTokens("test-page-token-secret"),
    }),
    { router: { interceptors: [errorMapping(logger)] } },
  );
  const js = nats.jetstream();
  return {
    sql,
    databaseUrl: database.url,
    nats,
    namespace: ns.namespace,
    notifier: createClient(NotifierService, transport),
    erasure: createClient(ErasureOwnerService, transport),
    owners,
    clock,
    workers,
    listeners,
    async publish(subject, messageSchema, message) {
      await js.publish(wireSubject(ns.namespace, subject), toBinary(messageSchema, message), { msgID: message.id });
    },
    async handled(subject) {
      const subscription = subscriptions.find((candidate) => candidate.subject === subject);
      if (!subscription) throw new Error(`the notifier does not consume ${subject}`);
      const stream = streamName({ service: subscription.stream, namespace: ns.namespace });
      await eventually(async () => {
        const info = await jsm.consumers.info(stream, durableFor(subject));
        if (info.num_pending + info.num_ack_pending > 0) throw new Error(`${subject}: events still to handle`);
      });
    },
    async close() {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await listeners.stop();
      await workers.stop();
      await nats.close();
      await sql.end();
      await ns.cleanup();
      await database.drop();
    },
  };
}

/** Polls `check` until it stops throwing (at most 10 s). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
