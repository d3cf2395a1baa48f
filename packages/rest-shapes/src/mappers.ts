// The proto -> public JSON mappers, one file per resource under mappers/ as the schemas are
// under schemas/. This module keeps the package's `@affiliate/rest-shapes/mappers` entry point.
export * from "./mappers/affiliate-api.js";
export * from "./mappers/affiliates.js";
export * from "./mappers/commissions.js";
export { ContractViolation, toPage } from "./mappers/common.js";
export * from "./mappers/customers.js";
export * from "./mappers/integrations.js";
export * from "./mappers/payout-methods.js";
export * from "./mappers/payouts.js";
export * from "./mappers/program.js";
export * from "./mappers/refunds.js";
export * from "./mappers/stats.js";
export * from "./mappers/tracking.js";
