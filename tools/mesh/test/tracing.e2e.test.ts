import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mesh, startMesh } from "../src/mesh.js";
import { eventually, freePort, freeServicePorts, runTool } from "./helpers.js";

/**
 * One trace across processes: the mesh exports spans over OTLP/HTTP (JSON) to a collector this
 * test runs, and a request carrying a known W3C traceparent must show up in spans of the gateway
 * and of partners (Connect RPC headers), and in the gateway's log line for that request.
 */
interface CollectedSpan {
  service: string;
  traceId: string;
  name: string;
}

let collector: Server;
const spans: CollectedSpan[] = [];
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;

const hexOf = (id: string) => (/^[0-9a-f]{32}$/.test(id) ? id : Buffer.from(id, "base64").toString("hex"));

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as {
        resourceSpans?: {
          resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
          scopeSpans?: { spans?: { traceId: string; name: string }[] }[];
        }[];
      };
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service =
          resourceSpans.resource?.attributes?.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) spans.push({ service, traceId: hexOf(span.traceId), name: span.name });
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  const collectorPort = (collector.address() as AddressInfo).port;

  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startMesh({
    databaseUrl: database.url,
    natsUrl: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
    host: "127.0.0.1",
    port: await freePort(),
    servicePorts: await freeServicePorts(),
    output: "pipe",
    env: {
      EVENTS_NAMESPACE: namespace.namespace,
      LOG_LEVEL: "info",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    },
  });
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
  collector?.close();
});

describe("distributed tracing", () => {
  it("one trace id spans the gateway and partners, and the request's log line names it", async () => {
    const created = await runTool("admin", ["products", "create", "--name", "Traced"], {
      PARTNERS_URL: mesh.urls.partners,
    });
    const { secret_key: key } = JSON.parse(created.stdout) as { secret_key: string };
    const traceId = randomBytes(16).toString("hex");
    const requestId = `trace-test-${randomBytes(4).toString("hex")}`;
    const res = await fetch(`${mesh.gatewayUrl}/api/v1/program`, {
      headers: {
        "x-api-key": key,
        traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
        "x-request-id": requestId,
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe(requestId);

    await eventually(async () => {
      const services = new Set(spans.filter((s) => s.traceId === traceId).map((s) => s.service));
      expect(services).toEqual(new Set(["gateway", "partners"]));
    }, 15_000);
    const partnersSpans = spans.filter((s) => s.traceId === traceId && s.service === "partners").map((s) => s.name);
    expect(partnersSpans).toContain("affiliate.partners.v1.PartnersService/Authenticate");
    expect(partnersSpans).toContain("affiliate.partners.v1.PartnersService/GetProgram");

    // The request id leads to the trace: the gateway logs both on one line.
    const line = mesh.recentOutput().find((l) => l.includes(requestId));
    expect(JSON.parse(line ?? "{}")).toMatchObject({ service: "gateway", trace_id: traceId });
    // Keys never reach the logs.
    expect(mesh.recentOutput().some((l) => l.includes(key))).toBe(false);
  });
});
