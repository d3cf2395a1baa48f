/**
 * Endpoint changes racing the delivery worker (issue 22 item 3): deletes, updates (url, events,
 * enabled), rotations, tests, retries and recovers of endpoints while their deliveries are being
 * attempted against a slow receiver, with the clock moving a day at a time so retries fall due
 * and the 5-day `failing` disable happens too. Every call answers or says NOT_FOUND (the endpoint
 * was deleted): no INTERNAL or UNKNOWN (a deadlock, a foreign key violated), and no worker run
 * fails; every delivery left is consistent with its attempts.
 */
import { metricsRegistry, newId } from "@affiliate/platform";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, Sink, startHarness } from "./harness.js";

let h: Harness;
let sink: Sink;
const productId = newId("prd");

beforeAll(async () => {
  h = await startHarness({ rpcAllowsPrivate: true });
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

describe("endpoint changes racing the delivery worker", () => {
  it("answer no INTERNAL or UNKNOWN, fail no worker run, and leave every delivery consistent", async () => {
    const failedBefore = await failedRuns();
    const unexpected: string[] = [];
    let notFound = 0;
    let answered = 0;
    /** An RPC of the race: NOT_FOUND is a true answer once the endpoint is deleted. */
    const call = async <T>(name: string, rpc: () => Promise<T>): Promise<T | undefined> => {
      try {
        const answer = await rpc();
        answered += 1;
        return answer;
      } catch (error) {
        const code = ConnectError.from(error).code;
        if (code === Code.NotFound) notFound += 1;
        else unexpected.push(`${name}: ${Code[code]} ${ConnectError.from(error).rawMessage}`);
        return undefined;
      }
    };

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
              await call("delete", () => h.notifier.deleteWebhook({ productId, webhookId }));
              deleted = true;
            });
      const until = Date.now() + 800;
      while (!deleted && Date.now() < until) {
        await Promise.all([pick(changes)(), pick(changes)()]);
        await sleep(Math.floor(Math.random() * 30));
      }
      await deleting;
      // Once deleted, it is gone for every call.
      if (deleted) await call("rotate after delete", () => h.notifier.rotateWebhookSecret({ productId, webhookId }));
    };

    await Promise.all(Array.from({ length: 24 }, (_, n) => race(n)));
    racing = false;
    await days;
    await h.workers.deliveries.drain();

    expect(unexpected).toEqual([]);
    expect(await failedRuns()).toBe(failedBefore);
    // The race did race: calls answered, deleted endpoints answered NOT_FOUND, attempts were made.
    expect(answered).toBeGreaterThan(100);
    expect(notFound).toBeGreaterThanOrEqual(18);
    expect(sink.received.length).toBeGreaterThan(24);

    // Every delivery left: its count and last status are its attempts', its state one of the
    // three, no lease left behind, and only deliveries of endpoints that exist.
    const inconsistent = await h.sql`
      select d.id, d.status, d.attempts, d.last_status_code, d.next_attempt_at, d.leased_until,
             (select count(*)::int from delivery_attempts a where a.delivery_id = d.id) as logged,
             (select a.status_code from delivery_attempts a where a.delivery_id = d.id
              order by a.attempted_at desc limit 1) as last_logged
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
