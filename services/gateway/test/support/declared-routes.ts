import type { z } from "zod";
import type { DeclaredRoute } from "../../src/http/route-catalog.js";
import { fieldSchemasOf } from "../../src/http/strict-input.js";
import { createGateway } from "./harness.js";

/**
 * The routes the gateway declares, read from a gateway built as the tests build it (nothing
 * listens): the one list the document, the fuzz and the input matrices take their routes from.
 */
export async function declaredRoutes(): Promise<DeclaredRoute[]> {
  const { app } = createGateway();
  await app.ready();
  const routes = app.routeCatalog.declared();
  await app.close();
  return routes;
}

/** The route's path with each `:param` given by `idFor`. */
export function pathOf(route: DeclaredRoute, idFor: (param: string) => string): string {
  return route.url.replace(/:([A-Za-z0-9_]+)/g, (_match, param: string) => idFor(param));
}

type Def = { type: string; innerType?: z.ZodType; in?: z.ZodType };

/** Whether a field reads text: a string (of a format or not) or a word of an enum, however wrapped. */
export function readsText(schema: z.ZodType): boolean {
  const def = schema._zod.def as unknown as Def;
  if (def.type === "string" || def.type === "enum") return true;
  const inner = def.innerType ?? (def.type === "pipe" ? def.in : undefined);
  return inner !== undefined && readsText(inner);
}

/** The text fields of a route's body or query schema, by name. */
export function textFieldsOf(schema: z.ZodType | undefined): string[] {
  return Object.entries(fieldSchemasOf(schema))
    .filter(([, field]) => readsText(field))
    .map(([name]) => name);
}

/** The same name in the other casing a client might type: external_id <-> externalId, email -> EMAIL. */
export function misspelled(name: string): string {
  if (name.includes("_")) return name.replace(/_([a-z0-9])/g, (_match, next: string) => next.toUpperCase());
  if (/[A-Z]/.test(name)) return name.replace(/[A-Z]/g, (upper) => `_${upper.toLowerCase()}`);
  return name.toUpperCase();
}
