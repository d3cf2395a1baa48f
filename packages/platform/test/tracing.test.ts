import { randomBytes } from "node:crypto";
import http from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { context, propagation, trace } from "@opentelemetry/api";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withStoredTrace } from "../src/tracing.js";

/**
 * A job that runs later on behalf of a request (the notifier's webhook attempt) sends the trace
 * context it stored. When the SDK's HTTP instrumentation covers the outgoing request, it injects
 * the active context's traceparent over the one the job set: withStoredTrace makes that active
 * context the stored one.
 */
let sdk: NodeSDK;
let server: http.Server;
let url: string;
const seen: string[] = [];

beforeAll(async () => {
  // Without these the SDK would retry OTLP metric and log exports for seconds on shutdown.
  process.env.OTEL_METRICS_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  sdk = new NodeSDK({ spanProcessors: [new NoopSpanProcessor()], instrumentations: [new HttpInstrumentation()] });
  sdk.start();
  // The instrumentation patches `http` when CommonJS code requires it (as a CommonJS dependency
  // of a service may); the patched module is the one every ESM import shares.
  createRequire(import.meta.url)("node:http");
  server = http.createServer((req, res) => {
    seen.push(String(req.headers.traceparent));
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await sdk.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

/** A POST with the stored traceparent set by hand, as the notifier sends an attempt; answers what the server saw. */
function post(traceparent: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: "POST", headers: { traceparent }, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(seen.at(-1) ?? ""));
    });
    request.on("error", reject);
    request.end("{}");
  });
}

const traceIdOf = (traceparent: string) => traceparent.split("-")[1];

describe("withStoredTrace", () => {
  it("an instrumented request in the stored context carries the stored trace; outside it, a trace of its own", async () => {
    expect((http.request as { __wrapped?: boolean }).__wrapped).toBe(true);
    const traceId = randomBytes(16).toString("hex");
    const stored = `00-${traceId}-${randomBytes(8).toString("hex")}-01`;

    expect(traceIdOf(await withStoredTrace({ traceparent: stored }, () => post(stored)))).toBe(traceId);
    // Without it the instrumentation replaces the header: what withStoredTrace prevents.
    expect(traceIdOf(await post(stored))).not.toBe(traceId);
  });
});
