import {
  affiliateTokenErrors,
  authenticatedErrors,
  bodyErrors,
  clickAuthErrors,
  errorResponses,
  trackingAuthErrors,
  type ValidationErrorBody,
} from "@affiliate/rest-shapes/schemas/common";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { ZodOpenApiResponseObject } from "zod-openapi";
import { HttpError, type PathResource, parseOrThrow, pathParamsOrThrow } from "../errors.js";
import { unknownNameIssues } from "./strict-input.js";

/**
 * Who may call a route, which decides the errors its key check can answer: the management API
 * takes live keys (401, 403), tracking live and test keys (401), the affiliate API affiliate
 * tokens (401), and the public routes (probes, the document, the affiliate sign-in) none.
 */
export type RouteAccess = "management" | "tracking" | "click" | "affiliate" | "public";

export type RouteMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * One answer of a route as the document shows it. Without a schema it has no body (a 204), or,
 * for a status every route of its kind answers (400, 404, 401, ...), the shared body, described
 * for this route.
 */
export interface RouteAnswer {
  description: string;
  schema?: z.ZodType;
  headers?: z.ZodObject;
  /** The media type of `schema`'s body; application/json unless said (a payout file's text/csv). */
  contentType?: string;
}

type PathParams = z.ZodType<Record<string, string>>;

/** What a handler receives: the request's input, already validated. */
export interface RouteInput<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  request: FastifyRequest;
  reply: FastifyReply;
}

/**
 * Everything about one route, written once (style, "Gateway"): from this object the route is
 * registered, its input validated into the spec's envelopes and its OpenAPI operation written.
 * The errors every route of its kind can answer (the key's, a body's 413/415, a path id's 404,
 * the validation 400) are added to `answers` from `access`, `body` and `params`; a route lists
 * its own and may restate a shared one to describe it better.
 */
export interface RouteDeclaration<
  Params extends PathParams,
  Query extends z.ZodType,
  Body extends z.ZodType,
  ParsedQuery = z.output<Query>,
  ParsedBody = z.output<Body>,
> {
  method: RouteMethod;
  /** Fastify's form, under the plugin's prefix: `/commissions/:id`. */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: [string];
  access: RouteAccess;
  params?: Params;
  /** For each path id, the resource it names: bad text there is that resource's 404. */
  pathResources?: Partial<Record<keyof z.output<Params>, PathResource>>;
  query?: Query;
  /** How the query is read when its schema alone does not say it (the stats period's own 400). */
  parseQuery?: (query: unknown) => ParsedQuery;
  /** The body's schema: validated, documented, and the names a strict body may carry. */
  body?: Body;
  /** Whether a request must carry the body (default: yes, when there is one). */
  bodyRequired?: boolean;
  /** The body's media type; application/json unless said (a payout result file's text/csv). */
  bodyContentType?: string;
  /** The body as documented, when its items are checked one by one by the handler (batches). */
  documentedBody?: z.ZodType;
  /** How the body is read when its rules reach beyond its schema (the refund's key header). */
  parseBody?: (body: unknown, request: FastifyRequest) => ParsedBody;
  /** Request headers the route reads, for the document. */
  headers?: z.ZodObject;
  answers: Record<number, RouteAnswer>;
  /**
   * Unknown body fields and query parameters are refused (contract section 11) unless this is
   * false: for a route that takes someone else's payloads as they come (a provider's webhook).
   */
  strict?: boolean;
  handler: (input: RouteInput<z.output<Params>, ParsedQuery, ParsedBody>) => Promise<unknown>;
}

/** A declaration as the catalog keeps it, its types erased. */
export type AnyRouteDeclaration = RouteDeclaration<PathParams, z.ZodType, z.ZodType, unknown, unknown>;

/** Fastify route config key under which a declared route carries its declaration. */
export const declarationKey = "routeDeclaration";

/** A route that takes no query parameters, so that every one it is sent is unknown. */
const noQuery = z.object({});
/** A route that takes no body: an empty object (or none) is all it may be sent. */
const noBody = z.object({});

const isValidation = (error: HttpError): error is HttpError & { body: ValidationErrorBody } =>
  "details" in error.body && error.body.error === "Validation failed";

/** Runs `parse`, keeping a refusal the gateway decided (HttpError) to answer with the others. */
function attempt<T>(parse: () => T, failures: HttpError[]): T | undefined {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    failures.push(error);
    return undefined;
  }
}

/**
 * One envelope for every problem of the query and the body: unknown names first, in
 * `formErrors`, each naming its field, then the schemas' own. A request with an unknown name
 * gets the envelope even where another problem alone would be answered otherwise (the stats
 * period, a payout's action): the name is most likely why the rest failed.
 */
function refusal(unknownNames: string[], failures: HttpError[]): HttpError | undefined {
  if (unknownNames.length === 0) return failures[0];
  const details: ValidationErrorBody["details"] = { formErrors: [...unknownNames], fieldErrors: {} };
  for (const failure of failures.filter(isValidation)) {
    details.formErrors.push(...failure.body.details.formErrors);
    for (const [field, messages] of Object.entries(failure.body.details.fieldErrors)) {
      details.fieldErrors[field] = [...(details.fieldErrors[field] ?? []), ...messages];
    }
  }
  return HttpError.validation(details);
}

/** The request's validated input, or the answer that refuses it. */
function inputOf(declaration: AnyRouteDeclaration, request: FastifyRequest) {
  // A path id names a resource or nothing: checked first, answered alone (the 404 of an unknown id).
  const params = declaration.params
    ? pathParamsOrThrow(declaration.params, request.params, declaration.pathResources ?? {})
    : {};
  const strict = declaration.strict !== false;
  const querySchema = declaration.query ?? noQuery;
  const bodySchema = declaration.body ?? noBody;
  const unknownNames = strict
    ? [
        ...unknownNameIssues(querySchema, request.query, "query parameter"),
        ...unknownNameIssues(bodySchema, request.body),
      ].map((issue) => issue.message)
    : [];
  const failures: HttpError[] = [];
  const query = attempt(
    () => (declaration.parseQuery ? declaration.parseQuery(request.query) : parseOrThrow(querySchema, request.query)),
    failures,
  );
  const body = attempt(() => {
    if (declaration.parseBody) return declaration.parseBody(request.body, request);
    return declaration.body ? parseOrThrow(declaration.body, request.body) : undefined;
  }, failures);
  const refused = refusal(unknownNames, failures);
  if (refused) throw refused;
  return { params, query, body };
}

/** The errors a route answers by its kind, before its own answers (which take precedence). */
export function sharedAnswers(declaration: AnyRouteDeclaration): Record<string, ZodOpenApiResponseObject> {
  const hasBody = declaration.body !== undefined;
  const takesInput =
    hasBody || declaration.query !== undefined || declaration.params !== undefined || declaration.strict !== false;
  return {
    ...(takesInput
      ? {
          400: hasBody
            ? errorResponses.badRequest
            : { ...errorResponses.validation, description: "Validation failed, or an unknown query parameter" },
        }
      : {}),
    ...(declaration.params !== undefined ? { 404: errorResponses[404] } : {}),
    ...(declaration.access === "management" ? authenticatedErrors : {}),
    ...(declaration.access === "tracking" ? trackingAuthErrors : {}),
    ...(declaration.access === "click" ? clickAuthErrors : {}),
    ...(declaration.access === "affiliate" ? affiliateTokenErrors : {}),
    ...(hasBody ? bodyErrors : {}),
  };
}

/**
 * Registers the route `declaration` describes on `app` (under its prefix). The declaration rides
 * along in the route's config, where the gateway's route catalog finds it to write the document.
 */
export function defineRoute<
  Params extends PathParams,
  Query extends z.ZodType,
  Body extends z.ZodType,
  ParsedQuery = z.output<Query>,
  ParsedBody = z.output<Body>,
>(app: FastifyInstance, declaration: RouteDeclaration<Params, Query, Body, ParsedQuery, ParsedBody>): void {
  const erased = declaration as unknown as AnyRouteDeclaration;
  app.route({
    method: declaration.method,
    url: declaration.url,
    config: { [declarationKey]: erased },
    handler: async (request, reply) => {
      const { params, query, body } = inputOf(erased, request);
      return declaration.handler({
        params: params as z.output<Params>,
        query: query as ParsedQuery,
        body: body as ParsedBody,
        request,
        reply,
      });
    },
  });
}
