import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { erasureOwnerService } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { IntegrationsService } from "@affiliate/proto/integrations";
import type { ConnectRouter } from "@connectrpc/connect";
import { integrationsErasureOwner } from "./domain/erase-customer.js";
import { createIntegrationsService, type IntegrationsServiceDeps } from "./rpc/integrations-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "integrations";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/**
 * Registers the service's RPCs on a router (its own, and the erasure-owner contract the privacy
 * service calls); used by main.ts and by tests' in-memory transports.
 */
export function routes(deps: IntegrationsServiceDeps) {
  return (router: ConnectRouter) => {
    router.service(IntegrationsService, createIntegrationsService(deps));
    router.service(ErasureOwnerService, erasureOwnerService(deps.sql, integrationsErasureOwner(deps.sql)));
  };
}

export { applyStoredEvent } from "./domain/apply-event.js";
export { startApplyWorker } from "./worker.js";
