/**
 * The OpenTelemetry bootstrap, loaded before the service itself:
 * `node --import @affiliate/platform/instrumentation dist/main.js`.
 *
 * Configured by the standard OTEL_* variables. With no OTLP endpoint set, spans are still
 * created (so trace ids reach logs and cross process boundaries) but nothing is exported.
 * Application code uses only @opentelemetry/api.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace";

/**
 * The service a process runs is the workspace of its entry script (`services/ledger/dist/main.js`
 * -> `@affiliate/ledger` -> `ledger`), so every service names itself on its spans even when
 * started by hand; OTEL_SERVICE_NAME (the launcher and the manifests set it) still wins.
 */
function workspaceOfEntry(): string | undefined {
  const entry = process.argv[1];
  if (!entry) return undefined;
  for (let directory = dirname(resolve(entry)); ; directory = dirname(directory)) {
    const manifest = join(directory, "package.json");
    if (existsSync(manifest)) {
      const { name } = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string };
      return name?.replace(/^@[^/]+\//, "") || undefined;
    }
    if (dirname(directory) === directory) return undefined;
  }
}

if (!process.env.OTEL_SERVICE_NAME) {
  const service = workspaceOfEntry();
  if (service) process.env.OTEL_SERVICE_NAME = service;
}
// The SDK defaults metrics and logs to OTLP exporters, which retry on shutdown for ~9 s.
process.env.OTEL_METRICS_EXPORTER ??= "none";
process.env.OTEL_LOGS_EXPORTER ??= "none";

const exporting = Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
const probePaths = new Set(["/healthz", "/readyz"]);

const sdk = new NodeSDK({
  // Without an endpoint: a processor that drops spans, so ids exist but nothing is sent.
  // With one: undefined lets the SDK build exporters from OTEL_TRACES_EXPORTER and friends.
  ...(exporting ? {} : { spanProcessors: [new NoopSpanProcessor()] }),
  instrumentations: [
    new HttpInstrumentation({
      // Health probes are not traced: they would drown real traffic.
      ignoreIncomingRequestHook: (req) => probePaths.has((req.url ?? "").split("?")[0] ?? ""),
    }),
    new UndiciInstrumentation(),
  ],
});
sdk.start();

// A process that ends by itself flushes its spans; onShutdown() flushes before process.exit.
process.once("beforeExit", () => {
  void sdk.shutdown();
});
