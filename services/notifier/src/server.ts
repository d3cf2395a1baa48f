import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { erasureOwnerService } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { NotifierService } from "@affiliate/proto/notifier";
import type { ConnectRouter } from "@connectrpc/connect";
import { notifierErasureOwner } from "./domain/erase-customer.js";
import { createNotifierService, type NotifierServiceDeps } from "./rpc/notifier-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "notifier";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Registers the service's RPCs on a router; used by main.ts and by tests' in-memory transports. */
export function routes(deps: NotifierServiceDeps) {
  return (router: ConnectRouter) => {
    router.service(NotifierService, createNotifierService(deps));
    router.service(ErasureOwnerService, erasureOwnerService(deps.sql, notifierErasureOwner(deps.sql)));
  };
}
