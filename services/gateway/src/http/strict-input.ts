import { z } from "zod";

/**
 * Strict input (contract section 11, style "Input is strict"): a field the schema does not know,
 * at any depth of a body, or a query parameter the route does not take, is refused with a
 * message that names it and the known field it most resembles. A typo must not be silence:
 * `externalId` for `external_id` would otherwise store a payment without its dedupe key.
 *
 * The walk follows the schema alongside the value, so the known names at each level are the
 * schema's own. An object schema that decides for itself what to do with other keys (a
 * `z.strictObject` with its own message, a `z.looseObject` that takes anything) is left to it.
 */

/** What a request's unknown name is called in the message. */
export type InputPart = "field" | "query parameter";

interface UnknownName {
  path: readonly (string | number)[];
  known: readonly string[];
}

// The parts of zod's definitions the walk reads; every other schema type holds no object keys.
type Def = { type: string } & Record<string, unknown>;
const defOf = (schema: z.ZodType): Def => schema._zod.def as unknown as Def;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The option of a discriminated union whose literal discriminator `value` carries, if any. */
function optionNamedBy(def: Def, value: unknown): z.ZodType | undefined {
  const discriminator = def.discriminator;
  if (typeof discriminator !== "string" || !isRecord(value) || !Object.hasOwn(value, discriminator)) return undefined;
  return (def.options as z.ZodType[]).find((option) => {
    const field = fieldSchemasOf(option)[discriminator];
    const values = field ? defOf(field).values : undefined;
    return Array.isArray(values) && values.includes(value[discriminator]);
  });
}

function unknownNames(schema: z.ZodType, value: unknown, path: (string | number)[]): UnknownName[] {
  const def = defOf(schema);
  switch (def.type) {
    case "object": {
      if (!isRecord(value)) return [];
      const shape = def.shape as Record<string, z.ZodType>;
      const known = Object.keys(shape);
      const found: UnknownName[] = [];
      for (const [name, field] of Object.entries(value)) {
        const fieldSchema = Object.hasOwn(shape, name) ? shape[name] : undefined;
        if (fieldSchema) found.push(...unknownNames(fieldSchema, field, [...path, name]));
        else if (def.catchall === undefined) found.push({ path: [...path, name], known });
      }
      return found;
    }
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "nonoptional":
    case "readonly":
    case "catch":
      return unknownNames(def.innerType as z.ZodType, value, path);
    case "pipe":
      // What the client sends is the pipe's input.
      return unknownNames(def.in as z.ZodType, value, path);
    case "lazy":
      return unknownNames((def.getter as () => z.ZodType)(), value, path);
    case "array":
      return Array.isArray(value)
        ? value.flatMap((item, index) => unknownNames(def.element as z.ZodType, item, [...path, index]))
        : [];
    case "record":
      return isRecord(value)
        ? Object.entries(value).flatMap(([key, item]) => unknownNames(def.valueType as z.ZodType, item, [...path, key]))
        : [];
    case "union": {
      // A discriminated union whose discriminator names an option: that option alone speaks, so
      // a field of another option (an `iban` beside type paypal) is unknown here.
      const chosen = optionNamedBy(def, value);
      if (chosen) return unknownNames(chosen, value, path);
      // A name is unknown when no option knows it: the option that fits best speaks.
      const byOption = (def.options as z.ZodType[]).map((option) => unknownNames(option, value, path));
      return byOption.reduce((best, names) => (names.length < best.length ? names : best));
    }
    case "intersection": {
      const left = unknownNames(def.left as z.ZodType, value, path);
      const right = unknownNames(def.right as z.ZodType, value, path);
      const key = (name: UnknownName) => name.path.join("\u0000");
      const inRight = new Set(right.map(key));
      return left.filter((name) => inRight.has(key(name)));
    }
    default:
      return [];
  }
}

/** A name reduced to what a typo of casing or separators leaves: `externalId` ~ `external_id`. */
const folded = (name: string) => name.toLowerCase().replace(/[-_\s.]/g, "");

/** Optimal string alignment distance: edits, with a swap of two neighbours counted as one. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The known name `name` most resembles, if any: equal once casing and separators are ignored,
 * or within a few edits of it (one per four characters, at least one). Ties go to the first
 * known name, in the schema's order.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const target = folded(name);
  const allowed = Math.max(1, Math.floor(target.length / 4));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(target, folded(candidate));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** `Unknown field externalId; did you mean external_id?`, nested names written as their path. */
export function unknownNameMessage(part: InputPart, path: readonly (string | number)[], known: readonly string[]) {
  const name = path.join(".");
  const last = String(path[path.length - 1]);
  const suggestion = closestName(last, known);
  return suggestion === undefined ? `Unknown ${part} ${name}` : `Unknown ${part} ${name}; did you mean ${suggestion}?`;
}

/**
 * The names in `value` that `schema` does not know, as issues of the request as a whole (so
 * z.flattenError lists them in `formErrors`, each naming its field).
 */
export function unknownNameIssues(schema: z.ZodType, value: unknown, part: InputPart = "field"): z.core.$ZodIssue[] {
  return unknownNames(schema, value, []).map(({ path, known }) => ({
    code: "custom",
    path: [],
    message: unknownNameMessage(part, path, known),
    input: value,
  }));
}

/**
 * `schema.safeParse(input)`, refusing unknown names too: they are reported first, beside every
 * other problem of the input, in one ZodError.
 */
export function safeParseStrict<S extends z.ZodType>(
  schema: S,
  input: unknown,
  part: InputPart = "field",
): z.ZodSafeParseResult<z.output<S>> {
  const parsed = schema.safeParse(input);
  const unknown = unknownNameIssues(schema, input, part);
  if (unknown.length === 0) return parsed;
  const issues = [...unknown, ...(parsed.success ? [] : parsed.error.issues)];
  return { success: false, error: new z.ZodError(issues) as z.ZodError<z.output<S>> };
}

/**
 * The fields an object schema names at its top level, through the wrappers a body schema may
 * have (optional, default, a refinement's pipe); none for a schema that is not an object.
 */
export function fieldSchemasOf(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (schema === undefined) return {};
  const def = defOf(schema);
  switch (def.type) {
    case "object":
      return def.shape as Record<string, z.ZodType>;
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
      return fieldSchemasOf(def.innerType as z.ZodType);
    case "pipe":
      return fieldSchemasOf(def.in as z.ZodType);
    default:
      return {};
  }
}
