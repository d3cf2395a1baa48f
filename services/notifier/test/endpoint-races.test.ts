/**
 * Endpoint changes racing the delivery worker (issue 22 item 3). DELETE /api/v1/webhooks/:id
 * while the endpoint's test delivery was being attempted answered 500, "deadlock detected": the
 * worker's finish held its delivery's row and then wrote the endpoint's, while the delete held the
 * endpoint's row and then (the foreign key's cascade) the delivery's. The lock order is written in
 * src/store/endpoints.ts.
 *
 * Here deletes, updates (url, events, enabled), rotations, tests, retries and recovers race the
 * worker against a slow receiver, with the clock moving a day at a time so retries fall due and
 * the 5-day `failing` disable happens too. Every call answers, or says NOT_FOUND once the delete
 * was sent: nothing that would reach a merchant as >= 500 (INTERNAL, UNKNOWN: a deadlock, a
 * foreign key violated). Postgres counts no deadlock in the test database, nothing is logged with
 * an error, no worker run fails, and every delivery left agrees with its attempts.
 */
import { metricsRegistry, newId } from "@affiliate/platform";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturingLogger, type Harness, type LogLine, Sink, startHarness } from "./harness.js";

let h: Harness;
let sink: Sink;
let logLines: LogLine[];
const productId = newId("prd");

beforeAll(async () => {
  const captured = capturingLogger();
  logLines = captured.lines;
  h = await startHarness({ rpcAllowsPrivate: true, logger: captured.logger });
  // Slow enough that attempts are in flight when the changes arrive, and end while they run.
  sink = await new Sink(() => 20 + Math.floor(Math.random() * 120)).start();
});
afterAll(async () => {
  await h.close();
  await sink.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** Mostly failures (each writes the endpoint's failing mark), some successes, a rare 410. */
function statuses(count: number): number[] {
  return Array.from({ length: count }, () => {
    const roll = Math.random();
    return roll < 0.03 ? 410 : roll < 0.7 ? 500 : 200;
  });
}

async function failedRuns(): Promise<number> {
  const runs = await metricsRegistry.getSingleMetric("jobs_runs_total")?.get();
  return (runs?.values ?? [])
    .filter((value) => value.labels.table === "deliveries" && value.labels.outcome === "failed")
    .reduce((sum, value) => sum + value.value, 0);
}

/** Deadlocks Postgres detected in the test database (every backend's, once its counters are flushed). */
async function deadlocks(): Promise<number> {
  const [row] = await h.sql<{ deadlocks: number }[]>`
    select deadlocks::int as deadlocks from pg_stat_database where datname = current_database()`;
  return row?.deadlocks ?? 0;
}

describe("endpoint changes racing the delivery worker", () => {
  it("answer nothing >= 500, meet no deadlock, fail no worker run, and leave every delivery consistent", async () => {
    const failedBefore = await failedRuns();
    const deadlocksBefore = await deadlocks();
    const unexpected: string[] = [];
    let answered = 0;
    let notFound = 0;
    /** Deletes sent while one of the endpoint's attempts was in flight: the case of the issue. */
    let deletesDuringAttempts = 0;

    let racing = true;
    // A day a time: retries fall due at once, and an endpoint failing for 5 days is disabled.
    const days = (async () => {
      while (racing) {
        await sleep(150);
        h.clock.advance(24 * 3600_000);
      }
    })();

    const race = async (n: number) => {
      const paths = [`/race/${n}/a`, `/race/${n}/b`];
      for (const path of paths) sink.program(path, statuses(200));
      let deleteSent = false;
      /** An RPC of the race: NOT_FOUND is the true answer once the delete was sent, and only then. */
      const call = async <T>(name: string, rpc: () => Promise<T>): Promise<T | undefined> => {
        const afterDelete = deleteSent;
        try {
          const answer = await rpc();
          answered += 1;
          return answer;
        } catch (error) {
          const { code, rawMessage } = ConnectError.from(error);
          if (code === Code.NotFound && (afterDelete || deleteSent)) notFound += 1;
          else unexpected.push(`${name}: ${Code[code]} ${rawMessage}`);
          return undefined;
        }
      };

      const created = await call("create", () =>
        h.notifier.createWebhook({ productId, url: sink.url(paths[0] as string), events: [] }),
      );
      const webhookId = created?.webhook?.id;
      if (!webhookId) return;
      const deliveryIds: string[] = [];
      const test = async () => {
        const tested = await call("test", () => h.notifier.testWebhook({ productId, webhookId }));
        if (tested?.delivery) deliveryIds.push(tested.delivery.id);
      };
      for (let i = 0; i < 6; i++) await test();

      const changes: (() => Promise<unknown>)[] = [
        () => call("update url", () => h.notifier.updateWebhook({ productId, webhookId, url: sink.url(pick(paths)) })),
        () =>
          call("update events", () =>
            h.notifier.updateWebhook({
              productId,
              webhookId,
              eventsSet: true,
              events: pick([[], ["commission.created"], ["payout.created", "commission.refunded"]]),
            }),
          ),
        () => call("disable", () => h.notifier.updateWebhook({ productId, webhookId, enabled: false })),
        () => call("enable", () => h.notifier.updateWebhook({ productId, webhookId, enabled: true })),
        () => call("rotate", () => h.notifier.rotateWebhookSecret({ productId, webhookId })),
        test,
        () => call("retry", () => h.notifier.retryDelivery({ productId, webhookId, deliveryId: pick(deliveryIds) })),
        () =>
          call("recover", () =>
            h.notifier.recoverDeliveries({ productId, webhookId, since: timestampFromDate(new Date(0)) }),
          ),
      ];
      // Three endpoints in four are deleted mid-race; the others are checked afterwards too.
      const deleteAfterMs = n % 4 === 0 ? undefined : Math.floor(Math.random() * 700);
      let deleted = false;
      const deleting =
        deleteAfterMs === undefined
          ? Promise.resolve()
          : sleep(deleteAfterMs).then(async () => {
              // The delete arrives as the receiver answers one of the endpoint's attempts, when the
              // worker records it: the moment of the 500.
              if (await sink.nextAnswer(paths)) deletesDuringAttempts += 1;
              deleteSent = true;
              await call("delete", () => h.notifier.deleteWebhook({ productId, webhookId }));
              deleted = true;
            });
      const until = Date.now() + 800;
      while (!deleted && Date.now() < until) {
        await Promise.all([pick(changes)(), pick(changes)()]);
        await sleep(Math.floor(Math.random() * 30));
      }
      await deleting;
      if (!deleted) return;
      // Once deleted, it is gone for every call.
      const rotated = await h.notifier.rotateWebhookSecret({ productId, webhookId }).then(
        () => "answered",
        (error: unknown) => Code[ConnectError.from(error).code],
      );
      if (rotated === "NotFound") notFound += 1;
      else unexpected.push(`rotate after delete: ${rotated}`);
    };

    await Promise.all(Array.from({ length: 24 }, (_, n) => race(n)));
    racing = false;
    await days;
    await h.workers.deliveries.drain();

    expect(unexpected).toEqual([]);
    expect(logLines.filter((line) => line.err !== undefined)).toEqual([]);
    expect(await failedRuns()).toBe(failedBefore);
    // A backend's counters reach pg_stat_database once it is idle, within a second (Postgres 15's
    // shared statistics); the pool is idle now. A late flush could only hide a deadlock, never
    // invent one, and every deadlock would also have failed a call or a run above.
    await sleep(1500);
    expect((await deadlocks()) - deadlocksBefore).toBe(0);

    // The race did race: calls answered, 18 endpoints deleted (most as one of their attempts was
    // answered) and NOT_FOUND afterwards, attempts made.
    expect(answered).toBeGreaterThan(100);
    expect(notFound).toBeGreaterThanOrEqual(18);
    expect(deletesDuringAttempts).toBeGreaterThanOrEqual(9);
    expect(sink.received.length).toBeGreaterThan(24);

    // Every delivery left: its count and last status are its attempts', its state one of the
    // three, no lease left behind, and only deliveries of endpoints that exist.
    const inconsistent = await h.sql`
      select d.id, d.status, d.attempts, d.last_status_code, d.next_attempt_at, d.leased_until
      from deliveries d left join endpoints e on e.id = d.endpoint_id
      where e.id is null
         or d.leased_until is not null or d.lease_token is not null
         or d.attempts <> (select count(*) from delivery_attempts a where a.delivery_id = d.id)
         or d.last_status_code is distinct from (select a.status_code from delivery_attempts a
              where a.delivery_id = d.id order by a.attempted_at desc limit 1)
         or (d.status = 'pending') <> (d.next_attempt_at is not null)`;
    expect(inconsistent).toEqual([]);
    const [left] = await h.sql<{ endpoints: number; deliveries: number }[]>`
      select (select count(*)::int from endpoints) as endpoints, (select count(*)::int from deliveries) as deliveries`;
    expect(left?.endpoints).toBe(6);
    expect(left?.deliveries).toBeGreaterThan(0);
  });
});
