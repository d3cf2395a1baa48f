import { DomainError, type Sql } from "@affiliate/platform";
import { getProgramOrThrow } from "../store/programs.js";
import { type RegistrationOptions, registerInTransaction } from "./register-affiliate.js";
import { assertValidRegistration } from "./rules.js";
import type { Registration, RegistrationOutcome } from "./types.js";

export type BulkEntryResult =
  | { email: string; outcome: RegistrationOutcome; partnershipId: string }
  | { email: string; error: string };

export const bulkLimit = 100;

/**
 * Registers up to 100 affiliates (spec 4.2). Each entry runs in its own savepoint: a failed
 * entry is reported and rolled back alone, the others go on. All entries share one transaction,
 * so the batch costs one commit; if that commit fails, none of it happened and the caller gets
 * an error, never a report of registrations that do not exist.
 */
export async function bulkRegisterAffiliates(
  sql: Sql,
  productId: string,
  registrations: Registration[],
  options: RegistrationOptions,
): Promise<BulkEntryResult[]> {
  if (registrations.length < 1 || registrations.length > bulkLimit) {
    throw new DomainError("invalid_argument", "Validation failed", {
      affiliates: [`Between 1 and ${bulkLimit} affiliates per request`],
    });
  }
  return sql.begin(async (tx) => {
    const program = await getProgramOrThrow(tx, productId);
    const results: BulkEntryResult[] = [];
    for (const registration of registrations) {
      try {
        assertValidRegistration(registration);
        const { outcome, partnership } = await tx.savepoint((entry) =>
          registerInTransaction(entry, program, registration, options),
        );
        results.push({ email: registration.email, outcome, partnershipId: partnership.id });
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        results.push({ email: registration.email, error: describe(error) });
      }
    }
    return results;
  });
}

/** One sentence for a failed entry: the field messages when there are any. */
function describe(error: DomainError): string {
  const fields = Object.entries(error.fieldErrors).map(([field, messages]) => `${field}: ${messages.join(", ")}`);
  return fields.length > 0 ? fields.join("; ") : error.message;
}
