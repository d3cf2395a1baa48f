import type { Interceptor } from "@connectrpc/connect";
import { type Context, context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { type MsgHdrs, headers as natsHeaders } from "nats";

const tracer = trace.getTracer("@affiliate/platform");

/**
 * Connect client interceptor: a client span per call, its context injected into the request
 * headers. OpenTelemetry's http instrumentation does not cover node:http2, which Connect uses.
 */
export const clientTracing: Interceptor = (next) => async (req) => {
  const name = `${req.service.typeName}/${req.method.name}`;
  return tracer.startActiveSpan(
    name,
    { kind: SpanKind.CLIENT, attributes: { "rpc.system": "connect_rpc", "rpc.method": name } },
    async (span) => {
      propagation.inject(context.active(), req.header, {
        set: (carrier, key, value) => carrier.set(key, value),
      });
      try {
        return await next(req);
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
};

/** Connect server interceptor: continues the caller's trace in a server span. */
export const serverTracing: Interceptor = (next) => async (req) => {
  const parent = propagation.extract(context.active(), req.header, {
    get: (carrier, key) => carrier.get(key) ?? undefined,
    keys: (carrier) => [...carrier.keys()],
  });
  const name = `${req.service.typeName}/${req.method.name}`;
  return tracer.startActiveSpan(
    name,
    { kind: SpanKind.SERVER, attributes: { "rpc.system": "connect_rpc", "rpc.method": name } },
    parent,
    async (span) => {
      try {
        return await next(req);
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
};

/** The active trace context as plain headers (traceparent, tracestate), for an outbox row. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * Runs `fn` in a trace context stored earlier with currentTraceHeaders(): work done later on
 * behalf of a request (a webhook attempt) continues that request's trace, and outgoing HTTP
 * instrumented by the SDK propagates it instead of starting a trace of its own.
 */
export function withStoredTrace<T>(values: Record<string, string>, fn: () => T): T {
  return context.with(propagation.extract(ROOT_CONTEXT, values), fn);
}

/** NATS message headers carrying a stored trace context. */
export function toNatsHeaders(values: Record<string, string>): MsgHdrs {
  const result = natsHeaders();
  for (const [key, value] of Object.entries(values)) result.set(key, value);
  return result;
}

/** The producer's trace context from a NATS message's headers. */
export function contextFromNatsHeaders(hdrs: MsgHdrs | undefined): Context {
  if (!hdrs) return context.active();
  return propagation.extract(context.active(), hdrs, {
    get: (carrier, key) => (carrier.has(key) ? carrier.get(key) : undefined),
    keys: (carrier) => carrier.keys(),
  });
}

/** Runs `fn` in a consumer span that continues the producer's trace. */
export function withConsumerSpan<T>(name: string, parent: Context, fn: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.CONSUMER }, parent, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}
