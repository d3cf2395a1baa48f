import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PayoutsService } from "@affiliate/proto/payouts";
import type { ConnectRouter } from "@connectrpc/connect";
import { createPayoutsService, type PayoutsServiceDeps } from "./rpc/payouts-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "payouts";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Registers the service's RPCs on a router; used by main.ts and by tests' in-memory transports. */
export function routes(deps: PayoutsServiceDeps) {
  return (router: ConnectRouter) => {
    router.service(PayoutsService, createPayoutsService(deps));
  };
}
