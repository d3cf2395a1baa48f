import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { erasureOwnerService } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { LedgerService } from "@affiliate/proto/ledger";
import type { ConnectRouter } from "@connectrpc/connect";
import { ledgerErasureOwner } from "./domain/erase-customer.js";
import { createLedgerService, type LedgerServiceDeps } from "./rpc/ledger-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "ledger";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/**
 * Registers the service's RPCs on a router (its own, and the erasure-owner contract the privacy
 * service calls); used by main.ts and by tests' in-memory transports.
 */
export function routes(deps: LedgerServiceDeps) {
  return (router: ConnectRouter) => {
    router.service(LedgerService, createLedgerService(deps));
    router.service(ErasureOwnerService, erasureOwnerService(deps.sql, ledgerErasureOwner(deps.sql)));
  };
}
