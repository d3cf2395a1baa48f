import {
  type DurableConsumer,
  decodeEvent,
  ensureStream,
  type JetStreamClient,
  type Logger,
  type Sql,
  startDurableConsumer,
  UndecodableEvent,
} from "@affiliate/platform";
import { payoutsEvents } from "@affiliate/proto/events";
import type { Payout } from "@affiliate/proto/payouts";
import type { JetStreamManager } from "nats";
import { settleCommissions, unlinkCommissionsIn } from "../domain/payout-claims.js";

/**
 * The ledger follows the payouts it links commissions to (architecture: settlement):
 * payout.completed marks its commissions paid, payout.rejected unlinks them. Each event is
 * applied exactly once (the consumer records its id in the effect's transaction), so a
 * redelivery or a ledger restart mid-way converges without doing anything twice.
 */
export async function consumePayoutEvents(options: {
  sql: Sql;
  js: JetStreamClient;
  jsm: JetStreamManager;
  namespace: string;
  logger: Logger;
}): Promise<DurableConsumer[]> {
  // Either side may start first; the stream's definition is shared (platform ensureStream).
  const stream = await ensureStream(options.jsm, {
    service: payoutsEvents.payoutCompleted.service,
    namespace: options.namespace,
  });
  const common = { ...options, stream };
  return Promise.all([
    startDurableConsumer({
      ...common,
      durable: "ledger_payout_completed",
      subject: payoutsEvents.payoutCompleted.subject,
      async handle(tx, message) {
        const payout = payoutOf(decodeEvent(payoutsEvents.payoutCompleted, message.data));
        await settleCommissions(tx, payout.productId, payout.id);
      },
    }),
    startDurableConsumer({
      ...common,
      durable: "ledger_payout_rejected",
      subject: payoutsEvents.payoutRejected.subject,
      async handle(tx, message) {
        const payout = payoutOf(decodeEvent(payoutsEvents.payoutRejected, message.data));
        await unlinkCommissionsIn(tx, payout.productId, [payout.id]);
      },
    }),
  ]);
}

function payoutOf(event: { payout?: Payout }): Payout {
  if (!event.payout) throw new UndecodableEvent("payout event without a payout");
  return event.payout;
}
