import { DomainError } from "./errors.js";

/**
 * A domain enum's table to its proto enum (`{ active: Status.ACTIVE, … }`), the one place a
 * service spells the correspondence; decoding reads the same table backwards.
 */
export type ProtoEnumTable<D extends string, P extends number> = Record<D, P>;

/** The domain value of a proto enum value, by reverse lookup; undefined for UNSPECIFIED (0) or an unknown value. */
export function fromProtoEnum<D extends string, P extends number>(
  table: ProtoEnumTable<D, P>,
  value: P,
): D | undefined {
  return (Object.keys(table) as D[]).find((key) => table[key] === value);
}

/**
 * A list or count request's optional enum filter: UNSPECIFIED (proto3's 0) means no filter, a
 * known value its domain value, anything else INVALID_ARGUMENT on `field` (a newer client's
 * value this server does not know must not silently widen the list to everything).
 */
export function enumFilter<D extends string, P extends number>(
  table: ProtoEnumTable<D, P>,
  value: P,
  field = "status",
): D | undefined {
  if (value === 0) return undefined;
  const decoded = fromProtoEnum(table, value);
  if (decoded === undefined) throw DomainError.invalidField(field, `Unknown ${field}`);
  return decoded;
}
