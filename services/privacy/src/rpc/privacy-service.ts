import { DomainError, type Logger, type Sql, withoutDeadline } from "@affiliate/platform";
import type { PrivacyService } from "@affiliate/proto/privacy";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { EmailKeys } from "../domain/email-keys.js";
import { type ErasureDeps, getErasureOrThrow, requestErasure, runErasure } from "../domain/erase-customer.js";
import { listErasures } from "../domain/list-erasures.js";
import type { Erasure } from "../domain/types.js";
import { erasureToProto } from "./mappers.js";

export interface PrivacyServiceDeps extends ErasureDeps {
  sql: Sql;
  keys: EmailKeys;
  logger: Logger;
  /** How long EraseCustomer waits for the saga when the caller set no deadline. */
  defaultWaitMs?: number;
}

/** What is kept of the caller's deadline to answer in time (the gateway must hear back before it). */
const answerMarginMs = 250;

/** Resolves with the saga's receipt, or undefined when it failed or the wait ran out. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}

/** Thin handlers: decode, call one use case, encode. Errors are mapped by the server's interceptor. */
export function createPrivacyService(deps: PrivacyServiceDeps): ServiceImpl<typeof PrivacyService> {
  const { sql, keys, logger } = deps;
  return {
    /**
     * The saga runs on after the answer when it does not finish within the caller's deadline (or
     * an owner is down): the request is recorded, and the resume job completes it.
     */
    async eraseCustomer(req, context: HandlerContext) {
      const erasureId = await requestErasure(deps, { productId: req.productId, email: req.email });
      // The saga outlives this call on purpose: it is not bound by the caller's deadline.
      const saga = withoutDeadline(() => runErasure(deps, erasureId));
      saga.catch((error: unknown) =>
        logger.warn({ err: error, erasureId }, "erasure not finished; the resume job will complete it"),
      );
      const waitMs = Math.max(0, (context.timeoutMs() ?? deps.defaultWaitMs ?? 10_000) - answerMarginMs);
      const erasure: Erasure | undefined = await within(saga, waitMs);
      if (erasure?.status !== "completed") {
        throw DomainError.withInfo(
          "unavailable",
          "The erasure is recorded and still running; it completes in the background",
          { reason: "erasure_running", details: { erasure_id: erasureId } },
        );
      }
      return { erasure: erasureToProto(erasure) };
    },

    async getErasure(req) {
      return { erasure: erasureToProto(await getErasureOrThrow(sql, req.productId, req.erasureId)) };
    },

    async listErasures(req) {
      const erasures = await listErasures(sql, keys, { productId: req.productId, email: req.email });
      return { erasures: erasures.map(erasureToProto) };
    },
  };
}
