import {
  type DurableConsumer,
  ensureStream,
  type JetStreamClient,
  type Logger,
  type Sql,
  startDurableConsumer,
  UndecodableEvent,
} from "@affiliate/platform";
import { PayoutCompletedSchema, PayoutRejectedSchema } from "@affiliate/proto/payouts";
import { fromBinary } from "@bufbuild/protobuf";
import type { JetStreamManager } from "nats";
import { releaseCommissions, settleCommissions } from "../domain/payout-claims.js";

/**
 * The ledger follows the payouts it links commissions to (architecture: settlement):
 * payout.completed marks its commissions paid, payout.rejected releases them. Each event is
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
  const stream = await ensureStream(options.jsm, { service: "payouts", namespace: options.namespace });
  const common = { ...options, stream };
  return Promise.all([
    startDurableConsumer({
      ...common,
      durable: "ledger_payout_completed",
      subject: "payouts.payout.completed",
      async handle(tx, message) {
        const payout = decode(() => fromBinary(PayoutCompletedSchema, message.data).payout);
        await settleCommissions(tx, payout.productId, payout.id);
      },
    }),
    startDurableConsumer({
      ...common,
      durable: "ledger_payout_rejected",
      subject: "payouts.payout.rejected",
      async handle(tx, message) {
        const payout = decode(() => fromBinary(PayoutRejectedSchema, message.data).payout);
        await releaseCommissions(tx, payout.productId, [payout.id]);
      },
    }),
  ]);
}

function decode<T>(read: () => T | undefined): T {
  let value: T | undefined;
  try {
    value = read();
  } catch (error) {
    throw new UndecodableEvent(`cannot decode payout event: ${String(error)}`);
  }
  if (!value) throw new UndecodableEvent("payout event without a payout");
  return value;
}
