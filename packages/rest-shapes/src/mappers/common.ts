import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import type { z } from "zod";
import type { paginationSchema } from "../schemas/common.js";

/** A value a service should never send: a bug on one side of the contract, answered as 500. */
export class ContractViolation extends Error {
  override readonly name = "ContractViolation";
}

/**
 * The public name of each proto enum value, derived from the one table of public names to proto
 * values, so the two directions cannot drift; UNSPECIFIED (in no table) has no name.
 */
export function namesOf<Name extends string, Value extends number>(
  values: Record<Name, Value>,
): Partial<Record<Value, Name>> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [value, name])) as Partial<
    Record<Value, Name>
  >;
}

/** A field the service always sets: its absence breaks the contract. */
export function required<T>(value: T | undefined, what: string, service = "partners"): T {
  if (value === undefined) throw new ContractViolation(`${what} missing from the ${service} response`);
  return value;
}

/** A timestamp the service always sets, as ISO 8601 UTC with milliseconds. */
export function isoTime(value: Timestamp | undefined, what: string, service: string): string {
  return timestampDate(required(value, what, service)).toISOString();
}

/** A timestamp that may be unset, as ISO 8601 UTC with milliseconds, or null. */
export function isoTimeOrNull(value: Timestamp | undefined): string | null {
  return value === undefined ? null : timestampDate(value).toISOString();
}

/**
 * One page of a list (spec section 8): its items and the cursor of the next page, from the
 * service's page token ("" on the last page).
 */
export function toPage<T>(
  data: T[],
  nextPageToken: string,
): { data: T[]; pagination: z.output<typeof paginationSchema> } {
  return { data, pagination: { next_cursor: nextPageToken || null, has_more: nextPageToken !== "" } };
}
