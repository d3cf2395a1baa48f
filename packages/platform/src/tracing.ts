import type { Interceptor } from "@connectrpc/connect";
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { type MsgHdrs, headers as natsHeaders } from "nats";

const tracer = trace.getTracer("@affiliate/platform");

/**
 * Connect client interceptor: a client span per call, its context injected into the request
 * headers. OpenTelemetry's http instrumentation does not cover node:http2, which Connect uses.
 */
export const clientTracing: Interceptor = (next) => async (req) => {
  const name = `${req.service.typeName}/${req.method.name}`;
  const options = { kind: SpanKind.CLIENT, attributes: { "rpc.system": "connect_rpc", "rpc.method": name } };
  return withSpanIn(context.active(), name, options, () => {
    propagation.inject(context.active(), req.header, {
      set: (carrier, key, value) => carrier.set(key, value),
    });
    return next(req);
  });
};

/** Connect server interceptor: continues the caller's trace in a server span. */
export const serverTracing: Interceptor = (next) => async (req) => {
  const parent = propagation.extract(context.active(), req.header, {
    get: (carrier, key) => carrier.get(key) ?? undefined,
    keys: (carrier) => [...carrier.keys()],
  });
  const name = `${req.service.typeName}/${req.method.name}`;
  const options = { kind: SpanKind.SERVER, attributes: { "rpc.system": "connect_rpc", "rpc.method": name } };
  return withSpanIn(parent, name, options, () => next(req));
};

/** The active trace context as plain headers (traceparent, tracestate), for an outbox row. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** The trace context stored as plain headers (an outbox row, a job row); a fresh root if none. */
export function contextFromHeaders(headers: Record<string, string>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/**
 * Runs `fn` in a trace context stored earlier with currentTraceHeaders(): work done later on
 * behalf of a request (a webhook attempt) continues that request's trace, and outgoing HTTP
 * instrumented by the SDK propagates it instead of starting a trace of its own.
 */
export function withStoredTrace<T>(values: Record<string, string>, fn: () => T): T {
  return context.with(contextFromHeaders(values), fn);
}

/** The producer's trace context from a NATS message's headers. */
export function contextFromNatsHeaders(hdrs: MsgHdrs | undefined): Context {
  if (!hdrs) return context.active();
  return propagation.extract(context.active(), hdrs, {
    get: (carrier, key) => (carrier.has(key) ? carrier.get(key) : undefined),
    keys: (carrier) => carrier.keys(),
  });
}

/**
 * Runs `fn` in a span of the trace `parent` carries (a stored or received context, not the
 * caller's), ending it when `fn` settles: an error marks it failed and is rethrown. The kind
 * defaults to internal.
 */
export function withSpanIn<T>(
  parent: Context,
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, options, parent, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Publishes an outbox row in a producer span continuing the trace stored with it (the
 * transaction that wrote the event): the message headers carry that span, so the consumer's
 * span is its child.
 */
export function withPublishSpan<T>(
  wireSubject: string,
  eventId: string,
  stored: Record<string, string>,
  publish: (headers: MsgHdrs) => Promise<T>,
): Promise<T> {
  const attributes = {
    "messaging.system": "nats",
    "messaging.operation.type": "send",
    "messaging.destination.name": wireSubject,
    "messaging.message.id": eventId,
  };
  return withSpanIn(contextFromHeaders(stored), `send ${wireSubject}`, { kind: SpanKind.PRODUCER, attributes }, () =>
    publish(toNatsHeaders(currentTraceHeaders())),
  );
}

/** NATS message headers carrying a trace context. */
export function toNatsHeaders(values: Record<string, string>): MsgHdrs {
  const result = natsHeaders();
  for (const [key, value] of Object.entries(values)) result.set(key, value);
  return result;
}

/** Runs `fn` in a consumer span that continues the producer's trace. */
export function withConsumerSpan<T>(
  name: string,
  parent: Context,
  fn: () => Promise<T>,
  attributes: Attributes = {},
): Promise<T> {
  return withSpanIn(parent, name, { kind: SpanKind.CONSUMER, attributes }, fn);
}
