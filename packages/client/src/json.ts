import { isLosslessNumber, parse, stringify } from "lossless-json";

/**
 * Where a JSON value carries int64 integers, as the generated operation table writes it: `true`
 * for the value itself, else by property name, `[]` for the items of an array and `*` for the
 * values of a record.
 */
export type Int64Fields = true | { readonly [key: string]: Int64Fields };

/**
 * Parses `text` without losing a digit: every number is read as written, then the ones `fields`
 * marks `format: int64` become bigint (a sum past 2^53 stays exact), every other one a number.
 * A field's type therefore never depends on its size.
 */
export function parseExact(text: string, fields: Int64Fields | undefined): unknown {
  return revive(parse(text), fields);
}

function revive(value: unknown, fields: Int64Fields | undefined): unknown {
  if (isLosslessNumber(value)) return fields === true ? BigInt(value.value) : Number(value.value);
  if (Array.isArray(value)) {
    const items = fields === true ? undefined : field(fields, "[]");
    return value.map((item) => revive(item, items));
  }
  if (value !== null && typeof value === "object") {
    const shape = fields === true ? undefined : fields;
    // fromEntries defines each key as data, so a "__proto__" key in the text stays a plain field.
    return Object.fromEntries(
      Object.entries(value).map(([key, member]) => [key, revive(member, field(shape, key) ?? field(shape, "*"))]),
    );
  }
  return value;
}

/** The fields under `key` (own keys only: a field named "constructor" is no method). */
function field(fields: Exclude<Int64Fields, true> | undefined, key: string): Int64Fields | undefined {
  return fields !== undefined && Object.hasOwn(fields, key) ? fields[key] : undefined;
}

/** JSON text of `value`, bigints written as integers digit for digit. */
export function stringifyExact(value: unknown): string {
  const text = stringify(value);
  if (text === undefined) throw new TypeError("The request body is not JSON");
  return text;
}
