import type { operations } from "./generated/openapi.js";
import { operationTable } from "./generated/operations.js";

export { operationTable };

/** The id of an operation of the API (`listAffiliates`, `createRefund`…). */
export type OperationId = keyof typeof operationTable & keyof operations;

export type Method = "GET" | "PUT" | "POST" | "PATCH" | "DELETE";

type Operation<Id extends OperationId> = operations[Id];

/**
 * What the client accepts where the API takes a number: a number or a bigint (amounts may be held
 * as bigints by callers that add them up exactly); bigints are written as JSON integers.
 */
export type Lenient<T> = T extends bigint | number
  ? number | bigint
  : T extends readonly (infer Item)[]
    ? Lenient<Item>[]
    : T extends object
      ? { [K in keyof T]: Lenient<T[K]> }
      : T;

/** The path parameters of an operation (`{ id }`), never when it has none. */
export type PathParamsOf<Id extends OperationId> = Operation<Id>["parameters"] extends { path: infer Params }
  ? Params
  : never;

/** The query of an operation, never when it takes none. */
export type QueryOf<Id extends OperationId> = NonNullable<Operation<Id>["parameters"]["query"]>;

/** The JSON body of an operation, never when it takes none. */
export type BodyOf<Id extends OperationId> =
  NonNullable<Operation<Id>["requestBody"]> extends { content: { "application/json": infer Body } }
    ? Body
    : NonNullable<Operation<Id>["requestBody"]> extends { content: { "text/csv": infer Text } }
      ? Text
      : never;

type SuccessStatus = 200 | 201 | 202 | 204;
type Responses<Id extends OperationId> = Operation<Id>["responses"];

/** What an operation answers on success (each 2xx's body; undefined for a 204). */
export type ResultOf<Id extends OperationId> = {
  [Status in keyof Responses<Id> & SuccessStatus]: Responses<Id>[Status] extends {
    content: { "application/json": infer Body };
  }
    ? Body
    : Responses<Id>[Status] extends { content: { "text/csv": infer Text } }
      ? Text
      : undefined;
}[keyof Responses<Id> & SuccessStatus];

/** Whether the operation takes an Idempotency-Key header (as the document declares it). */
type TakesIdempotencyKey<Id extends OperationId> = "Idempotency-Key" extends keyof NonNullable<
  Operation<Id>["parameters"]["header"]
>
  ? true
  : false;

/** Options of one call, whatever the operation. */
export interface CallOptions {
  /** Aborts the call, retries included. */
  signal?: AbortSignal;
  /** Per attempt; the client's `timeoutMs` when not given. */
  timeoutMs?: number;
  /** Attempts in all for this call; the client's retry setting when not given. */
  maxAttempts?: number;
}

/** The key option, offered where the operation takes one (a generated key is sent otherwise). */
export type IdempotencyOptions<Id extends OperationId> =
  TakesIdempotencyKey<Id> extends true
    ? {
        /** Sent as Idempotency-Key; a repeat with it answers the first request's outcome. Generated when not given. */
        idempotencyKey?: string;
      }
    : { idempotencyKey?: never };

type Part<Name extends string, T, Required extends boolean> = [T] extends [never]
  ? { [K in Name]?: never }
  : Required extends true
    ? { [K in Name]: T }
    : { [K in Name]?: T };

/** Everything one call of `Id` takes: its path parameters, query, body and options. */
export type RequestOf<Id extends OperationId> = Part<"params", PathParamsOf<Id>, true> &
  Part<"query", Lenient<QueryOf<Id>>, false> &
  Part<"body", Lenient<BodyOf<Id>>, undefined extends Operation<Id>["requestBody"] ? false : true> &
  IdempotencyOptions<Id> &
  CallOptions;
