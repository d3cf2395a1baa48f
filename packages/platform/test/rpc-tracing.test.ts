import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { clientTracing, serverTracing } from "../src/tracing.js";

/** The Connect interceptors' spans, exported by a real SDK: a client span, and the server's as its child. */
let sdk: NodeSDK;
const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });

/** The spans ended so far: the processor exports once the SDK's resource is detected. */
async function finishedSpans() {
  await processor.forceFlush();
  return exporter.getFinishedSpans();
}

beforeAll(() => {
  sdk = new NodeSDK({ spanProcessors: [processor] });
  sdk.start();
});

afterAll(async () => {
  await sdk?.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

beforeEach(() => exporter.reset());

function healthClient(fails: boolean) {
  const transport = createRouterTransport(
    (router) =>
      router.service(Health, {
        async check() {
          if (fails) throw new ConnectError("down", Code.Unavailable);
          return { status: HealthCheckResponse_ServingStatus.SERVING };
        },
      }),
    { router: { interceptors: [serverTracing] }, transport: { interceptors: [clientTracing] } },
  );
  return createClient(Health, transport);
}

describe("RPC tracing", () => {
  it("a call is a client span, and the server continues its trace in a child span", async () => {
    await healthClient(false).check({});
    const spans = await finishedSpans();
    const client = spans.find((span) => span.kind === SpanKind.CLIENT);
    const server = spans.find((span) => span.kind === SpanKind.SERVER);
    expect([client?.name, server?.name]).toEqual(["grpc.health.v1.Health/Check", "grpc.health.v1.Health/Check"]);
    expect(server?.spanContext().traceId).toBe(client?.spanContext().traceId);
    expect(server?.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
    expect(spans.map((span) => span.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET]);
  });

  it("a failed call ends both spans marked failed, and the error reaches the caller", async () => {
    await expect(healthClient(true).check({})).rejects.toThrow("down");
    const spans = await finishedSpans();
    expect(spans.map((span) => [span.kind, span.status.code])).toEqual([
      [SpanKind.SERVER, SpanStatusCode.ERROR],
      [SpanKind.CLIENT, SpanStatusCode.ERROR],
    ]);
  });
});
