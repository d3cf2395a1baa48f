import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PrivacyService } from "@affiliate/proto/privacy";
import type { ConnectRouter } from "@connectrpc/connect";
import { createPrivacyService, type PrivacyServiceDeps } from "./rpc/privacy-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "privacy";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Registers the service's RPCs on a router; used by main.ts and by tests' in-memory transports. */
export function routes(deps: PrivacyServiceDeps) {
  return (router: ConnectRouter) => {
    router.service(PrivacyService, createPrivacyService(deps));
  };
}

export { EmailKeys } from "./domain/email-keys.js";
export { resumeAbandonedErasures, runErasure } from "./domain/erase-customer.js";
export type { PersonalDataHolder } from "./domain/ports.js";
export { erasureOwnerOver } from "./rpc/owners.js";
