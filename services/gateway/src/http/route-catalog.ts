import type { RouteOptions } from "fastify";
import type { z } from "zod";
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject, ZodOpenApiResponseObject } from "zod-openapi";
import { type AnyRouteDeclaration, declarationKey, type RouteMethod, sharedAnswers } from "./define-route.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Every route of the gateway, as registered (set by buildServer). */
    routeCatalog: RouteCatalog;
  }
}

/** A route Fastify registered, with its declaration when it was declared with defineRoute. */
export interface RegisteredRoute {
  method: string;
  /** Fastify's form, prefix included: `/api/v1/commissions/:id`. */
  url: string;
  declaration?: AnyRouteDeclaration;
}

/** A route the API declares: what the document, the tests and the fuzz take their lists from. */
export interface DeclaredRoute extends RegisteredRoute {
  method: RouteMethod;
  declaration: AnyRouteDeclaration;
}

/** `/api/v1/commissions/:id` as OpenAPI writes it: `/api/v1/commissions/{id}`. */
export const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function operationOf(declaration: AnyRouteDeclaration): ZodOpenApiOperationObject {
  const json = (schema: z.ZodType, contentType = "application/json") => ({ content: { [contentType]: { schema } } });
  const body = declaration.documentedBody ?? declaration.body;
  const responses: Record<string, ZodOpenApiResponseObject> = sharedAnswers(declaration);
  // A route's own answer replaces the shared one of its status; without a schema of its own it
  // only words the shared answer for this route.
  for (const [status, answer] of Object.entries(declaration.answers)) {
    responses[status] = {
      ...responses[status],
      description: answer.description,
      ...(answer.headers ? { headers: answer.headers } : {}),
      ...(answer.schema ? json(answer.schema, answer.contentType) : {}),
    };
  }
  // Path, query and header schemas are zod objects; the declaration's types only say zod.
  const requestParams = {
    ...(declaration.params ? { path: declaration.params } : {}),
    ...(declaration.query ? { query: declaration.query } : {}),
    ...(declaration.headers ? { header: declaration.headers } : {}),
  } as ZodOpenApiOperationObject["requestParams"] & object;
  return {
    operationId: declaration.operationId,
    tags: declaration.tags,
    summary: declaration.summary,
    ...(declaration.description ? { description: declaration.description } : {}),
    ...(declaration.access === "public" ? { security: [] } : {}),
    ...(declaration.access === "affiliate" ? { security: [{ affiliateToken: [] }] } : {}),
    // The key, or a console session opened with it (contract section 19).
    ...(declaration.access === "management" ? { security: [{ apiKey: [] }, { consoleSession: [] }] } : {}),
    ...(Object.keys(requestParams).length > 0 ? { requestParams } : {}),
    ...(body
      ? { requestBody: { required: declaration.bodyRequired ?? true, ...json(body, declaration.bodyContentType) } }
      : {}),
    responses,
  };
}

/**
 * Every route the gateway registers, as Fastify registers it (an onRoute hook feeds it), so a
 * route cannot exist without being seen here. The routes declared with defineRoute are the API:
 * `paths()` writes their operations, so the document cannot drift from the routes it describes.
 * The others are Fastify's implicit HEAD routes and the documentation UI's pages and assets.
 */
export class RouteCatalog {
  readonly #routes: RegisteredRoute[] = [];

  /** For Fastify's onRoute hook. */
  readonly record = (options: RouteOptions): void => {
    const methods = Array.isArray(options.method) ? options.method : [options.method];
    const config = options.config as Record<string, unknown> | undefined;
    const declaration = config?.[declarationKey] as AnyRouteDeclaration | undefined;
    for (const method of methods) {
      // Fastify's implicit HEAD of a GET route carries the GET's config: the declaration is the GET's.
      const declares = declaration !== undefined && declaration.method === method;
      this.#routes.push({ method, url: options.url, ...(declares ? { declaration } : {}) });
    }
  };

  /** Every route Fastify registered, declared or not. */
  registered(): readonly RegisteredRoute[] {
    return this.#routes;
  }

  /** The routes of the API, each with its declaration. */
  declared(): DeclaredRoute[] {
    return this.#routes.filter((route): route is DeclaredRoute => route.declaration !== undefined);
  }

  /** The OpenAPI paths of the declared routes. */
  paths(): ZodOpenApiPathsObject {
    const paths: ZodOpenApiPathsObject = {};
    for (const { method, url, declaration } of this.declared()) {
      const path = openApiPath(url);
      paths[path] = { ...paths[path], [method.toLowerCase()]: operationOf(declaration) };
    }
    return paths;
  }
}
