// The contract guard: what in an OpenAPI document `after` breaks a client written against
// `before`. Clients send requests and read answers, so the two directions differ:
//   requests (parameters, bodies): a field or parameter removed (strict input refuses it), a
//     type narrowed (a type dropped, null no longer accepted, an enum where any value was), an
//     enum value removed, a bound tightened, a field or parameter or body newly required;
//   answers (2xx bodies, webhook bodies): a field removed or no longer always present, a type
//     widened (a value of a type the client never expected, null included), an enum value
//     removed (generated types stop compiling against it), int64 changed (bigint vs number);
//   and a route, a success answer or a webhook event removed, an operation id changed.
// Additions that old clients never see (a new route, an optional request field, a new answer
// field) are not breaking.

const methods = ["get", "put", "post", "patch", "delete"];

function resolve(document, schema) {
  if (!schema?.$ref) return schema;
  const path = schema.$ref.replace(/^#\//, "").split("/");
  return path.reduce((node, key) => node?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], document);
}

const branchesOf = (schema) => [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];

/** The JSON types a schema admits ("integer" and "number" kept apart), unions included. */
function typesOf(document, schema, seen = new Set()) {
  schema = resolve(document, schema);
  if (!schema || seen.has(schema)) return new Set();
  seen.add(schema);
  const types = new Set();
  if (Array.isArray(schema.type)) for (const type of schema.type) types.add(type);
  else if (schema.type) types.add(schema.type);
  if ("const" in schema) types.add(schema.const === null ? "null" : jsonType(schema.const));
  for (const value of schema.enum ?? []) types.add(value === null ? "null" : jsonType(value));
  for (const branch of [...branchesOf(schema), ...(schema.allOf ?? [])]) {
    for (const type of typesOf(document, branch, seen)) types.add(type);
  }
  return types;
}

function jsonType(value) {
  if (Array.isArray(value)) return "array";
  if (Number.isInteger(value)) return "integer";
  return typeof value;
}

/** Whether a value of JSON type `type` fits a schema admitting `types` (an integer is a number). */
const admits = (types, type) => types.size === 0 || types.has(type) || (type === "integer" && types.has("number"));

/** The enum or const values a schema restricts to (unions merged); undefined when any value goes. */
function valuesOf(document, schema) {
  schema = resolve(document, schema);
  if (!schema) return undefined;
  if ("const" in schema) return [schema.const];
  if (schema.enum) return schema.enum;
  const branches = branchesOf(schema);
  if (branches.length === 0) return undefined;
  const values = [];
  for (const branch of branches) {
    const resolved = resolve(document, branch);
    if (resolved?.type === "null") continue;
    const own = valuesOf(document, branch);
    if (own === undefined) return undefined;
    values.push(...own);
  }
  return values;
}

/** The one schema of a union that is not `null` (how zod-openapi writes a nullable field), else the schema. */
function withoutNull(document, schema) {
  const resolved = resolve(document, schema);
  const branches = branchesOf(resolved ?? {}).filter((branch) => resolve(document, branch)?.type !== "null");
  return branches.length === 1 && !resolved.properties ? withoutNull(document, branches[0]) : resolved;
}

const show = (value) => JSON.stringify(value);

function compare(context, before, after, where, direction) {
  const { old, now, problems, seen } = context;
  const pair = `${before?.$ref ?? ""}|${after?.$ref ?? ""}|${direction}`;
  if (before?.$ref && after?.$ref) {
    if (seen.has(pair)) return;
    seen.add(pair);
    // A shared schema is reported under its own name, once, whichever route reached it first.
    if (before.$ref === after.$ref) where = `schema ${before.$ref.split("/").pop()}`;
  }
  const a = resolve(old, before);
  const b = resolve(now, after);
  if (!a || !b) return;

  const typesBefore = typesOf(old, a);
  const typesAfter = typesOf(now, b);
  if (direction === "request") {
    const dropped = [...typesBefore].filter((type) => !admits(typesAfter, type));
    if (dropped.length > 0) problems.push(`${where}: narrowed type, no longer accepts ${dropped.join(", ")}`);
  } else {
    const added = [...typesAfter].filter((type) => !admits(typesBefore, type));
    if (added.length > 0) problems.push(`${where}: widened type, may now be ${added.join(", ")}`);
  }
  if ((a.format === "int64") !== (b.format === "int64")) {
    problems.push(`${where}: format ${a.format ?? "none"} became ${b.format ?? "none"} (bigint vs number in clients)`);
  }

  const valuesBefore = valuesOf(old, a);
  const valuesAfter = valuesOf(now, b);
  if (valuesAfter !== undefined) {
    if (valuesBefore === undefined) {
      if (direction === "request") problems.push(`${where}: narrowed to the values ${show(valuesAfter)}`);
    } else {
      for (const value of valuesBefore) {
        if (!valuesAfter.some((other) => show(other) === show(value))) {
          problems.push(`${where}: removed enum value ${show(value)}`);
        }
      }
    }
  }

  if (direction === "request") {
    for (const bound of ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"]) {
      if (b[bound] !== undefined && (a[bound] === undefined || b[bound] < a[bound])) {
        problems.push(`${where}: narrowed ${bound} ${a[bound] ?? "none"} -> ${b[bound]}`);
      }
    }
    for (const bound of ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"]) {
      if (b[bound] !== undefined && (a[bound] === undefined || b[bound] > a[bound])) {
        problems.push(`${where}: narrowed ${bound} ${a[bound] ?? "none"} -> ${b[bound]}`);
      }
    }
    if (b.pattern !== undefined && b.pattern !== a.pattern) problems.push(`${where}: pattern changed to ${b.pattern}`);
  }

  const objectBefore = withoutNull(old, a);
  const objectAfter = withoutNull(now, b);
  const propertiesBefore = objectBefore?.properties ?? {};
  const propertiesAfter = objectAfter?.properties ?? {};
  const requiredBefore = new Set(objectBefore?.required ?? []);
  const requiredAfter = new Set(objectAfter?.required ?? []);
  for (const [name, schema] of Object.entries(propertiesBefore)) {
    if (!(name in propertiesAfter)) {
      problems.push(`${where}.${name}: removed field`);
      continue;
    }
    if (direction === "response" && requiredBefore.has(name) && !requiredAfter.has(name)) {
      problems.push(`${where}.${name}: no longer always present`);
    }
    compare(context, schema, propertiesAfter[name], `${where}.${name}`, direction);
  }
  if (direction === "request") {
    for (const name of requiredAfter) {
      if (!requiredBefore.has(name)) problems.push(`${where}.${name}: newly required`);
    }
  }
  if (objectBefore?.items && objectAfter?.items) {
    compare(context, objectBefore.items, objectAfter.items, `${where}[]`, direction);
  }
  const recordBefore = objectBefore?.additionalProperties;
  const recordAfter = objectAfter?.additionalProperties;
  if (typeof recordBefore === "object" && typeof recordAfter === "object") {
    compare(context, recordBefore, recordAfter, `${where}{}`, direction);
  }
  // Unions of several shapes (not just nullable): compared branch by branch when they line up.
  const unionBefore = branchesOf(objectBefore ?? {});
  const unionAfter = branchesOf(objectAfter ?? {});
  if (unionBefore.length > 1 && unionBefore.length === unionAfter.length) {
    for (const [index, branch] of unionBefore.entries()) {
      compare(context, branch, unionAfter[index], `${where}|${index}`, direction);
    }
  }
}

const jsonSchemaOf = (document, holder) => resolve(document, holder)?.content?.["application/json"]?.schema;

/** Every breaking change from `old` to `now`, as lines a reader acts on; empty when none. */
export function breakingChanges(old, now) {
  const context = { old, now, problems: [], seen: new Set() };
  const { problems } = context;
  for (const [path, item] of Object.entries(old.paths ?? {})) {
    for (const method of methods) {
      const before = item[method];
      if (!before) continue;
      const route = `${method.toUpperCase()} ${path}`;
      const after = now.paths?.[path]?.[method];
      if (!after) {
        problems.push(`${route}: removed route (${before.operationId})`);
        continue;
      }
      if (before.operationId !== after.operationId) {
        problems.push(`${route}: operation id ${before.operationId} became ${after.operationId}`);
      }
      const parametersBefore = (before.parameters ?? []).map((parameter) => resolve(old, parameter));
      const parametersAfter = (after.parameters ?? []).map((parameter) => resolve(now, parameter));
      for (const parameter of parametersBefore) {
        const where = `${route} ${parameter.in} parameter ${parameter.name}`;
        const match = parametersAfter.find((other) => other.in === parameter.in && other.name === parameter.name);
        if (!match) {
          problems.push(`${where}: removed`);
          continue;
        }
        if (!parameter.required && match.required) problems.push(`${where}: newly required`);
        compare(context, parameter.schema, match.schema, where, "request");
      }
      for (const parameter of parametersAfter) {
        const known = parametersBefore.some((other) => other.in === parameter.in && other.name === parameter.name);
        if (!known && parameter.required)
          problems.push(`${route} ${parameter.in} parameter ${parameter.name}: newly required`);
      }
      const bodyBefore = resolve(old, before.requestBody);
      const bodyAfter = resolve(now, after.requestBody);
      if (bodyBefore && !bodyAfter) problems.push(`${route} body: no longer taken`);
      if (bodyAfter?.required && !bodyBefore?.required) problems.push(`${route} body: newly required`);
      if (bodyBefore && bodyAfter) {
        compare(context, jsonSchemaOf(old, bodyBefore), jsonSchemaOf(now, bodyAfter), `${route} body`, "request");
      }
      for (const [status, answer] of Object.entries(before.responses ?? {})) {
        if (!status.startsWith("2")) continue;
        const match = after.responses?.[status];
        if (!match) {
          problems.push(`${route} ${status}: removed answer`);
          continue;
        }
        compare(context, jsonSchemaOf(old, answer), jsonSchemaOf(now, match), `${route} ${status}`, "response");
      }
    }
  }
  for (const [type, item] of Object.entries(old.webhooks ?? {})) {
    const match = now.webhooks?.[type];
    if (!match) {
      problems.push(`webhook ${type}: removed event`);
      continue;
    }
    compare(
      context,
      jsonSchemaOf(old, item.post?.requestBody),
      jsonSchemaOf(now, match.post?.requestBody),
      `webhook ${type}`,
      "response",
    );
  }
  return [...new Set(problems)];
}
