import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { erasureOwnerService, type PageTokens, type SealingKey, type Sql } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import type { ConnectRouter } from "@connectrpc/connect";
import { payoutSealingKey } from "./config.js";
import { partnersErasureOwner } from "./domain/scrub-profile.js";
import { createAdminService } from "./rpc/admin-service.js";
import { createPartnersService } from "./rpc/partners-service.js";

/** The schema this service owns; it touches no other. */
export const schema = "partners";
export const migrationsDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/**
 * Registers the service's RPCs on a router (its own, and the erasure-owner contract the privacy
 * service calls for ScrubProfile); used by main.ts and by tests' in-memory transports.
 */
export function routes(deps: {
  sql: Sql;
  pageTokens: PageTokens;
  /** Seals payout details (main.ts: from PAYOUT_DETAILS_ENCRYPTION_KEY); tests: the development key. */
  payoutSealing?: SealingKey;
  loginAnswerFloorMs?: number;
}) {
  const payoutSealing = deps.payoutSealing ?? payoutSealingKey();
  return (router: ConnectRouter) => {
    router.service(PartnersService, createPartnersService({ ...deps, payoutSealing }));
    router.service(PartnersAdminService, createAdminService(deps));
    router.service(ErasureOwnerService, erasureOwnerService(deps.sql, partnersErasureOwner(deps.sql)));
  };
}
