import { newId } from "@affiliate/platform";
import { requeueFailed } from "../store/deliveries.js";
import { claimProbe, reenableEndpoint, scheduleProbe } from "../store/endpoints.js";
import { type DeliverDeps, sendSigned } from "./deliver-webhook.js";
import { nextProbeAt } from "./schedule.js";
import { testEventType } from "./types.js";

/**
 * How long a claimed probe is its claimant's alone: well past the probe's own POST timeout (15 s).
 * The claim is a time in the database compared with `clock` (tests move it); the POST's timeout
 * is a timer on the real clock, and stays one: it bounds how long a socket is waited on, which a
 * clock that stands still or jumps hours (a test's) cannot measure. Tests shorten it with
 * `timeoutMs` instead.
 */
const probeClaimMs = 5 * 60_000;

/**
 * Probes each `failing` endpoint whose probe is due with a signed webhook.test (contract 9b):
 * the first 2xx enables it again and re-queues the deliveries that failed while it was failing;
 * otherwise the next probe is in an hour (the first day) or a day. Endpoints are claimed one at
 * a time, so two runs (two replicas) never probe one endpoint at once. Answers how many came back.
 */
export async function probeFailingEndpoints(deps: DeliverDeps): Promise<number> {
  let enabled = 0;
  for (;;) {
    const claimedAt = deps.clock();
    const endpoint = await claimProbe(deps.sql, claimedAt, new Date(claimedAt.getTime() + probeClaimMs));
    if (!endpoint) return enabled;
    const at = deps.clock();
    const eventId = newId("msg");
    const body = JSON.stringify({
      id: eventId,
      type: testEventType,
      created_at: at.toISOString(),
      data: { webhook_id: endpoint.id },
    });
    const result = await sendSigned(deps, endpoint, body, eventId, {});
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    if (!ok) {
      await scheduleProbe(deps.sql, endpoint.id, nextProbeAt(deps.clock(), endpoint.disabledAt));
      continue;
    }
    await deps.sql.begin(async (tx) => {
      const since = await reenableEndpoint(tx, endpoint.id);
      if (since) await requeueFailed(tx, endpoint.id, since, new Date(deps.clock().getTime() + 1), deps.clock());
    });
    enabled += 1;
    deps.logger.info({ webhookId: endpoint.id }, "failing webhook endpoint answered the probe; enabled again");
  }
}
