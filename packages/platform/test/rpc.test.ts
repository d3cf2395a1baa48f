import http2 from "node:http2";
import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { PartnersService } from "@affiliate/proto/partners";
import { Code, ConnectError, type ConnectRouter, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { DomainError, fieldErrorsOf } from "../src/errors.js";
import { createRpcTransport } from "../src/rpc-client.js";
import { type RpcServer, startRpcServer } from "../src/rpc-server.js";
import { capturingLogger, eventually, silentLogger } from "./helpers.js";

const { SERVING, NOT_SERVING } = HealthCheckResponse_ServingStatus;

const servers: RpcServer[] = [];
const sessions: http2.ClientHttp2Session[] = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) session.destroy();
  for (const server of servers.splice(0)) await server.close();
});

async function serve(
  readiness: () => Promise<boolean> = async () => true,
  routes: (router: ConnectRouter) => void = () => {},
  logger = silentLogger,
) {
  const server = await startRpcServer({ routes, port: 0, host: "127.0.0.1", logger, readiness });
  servers.push(server);
  return server;
}

const baseUrl = (server: RpcServer) => `http://127.0.0.1:${server.port}`;

function connectSession(server: RpcServer): http2.ClientHttp2Session {
  const session = http2.connect(baseUrl(server));
  session.on("error", () => {});
  sessions.push(session);
  return session;
}

/** A GET over HTTP/2 cleartext, as `curl --http2-prior-knowledge` does. */
function get(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const request = session.request({ ":method": "GET", ":path": path });
    let status = 0;
    let body = "";
    request.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => resolve({ status, body: JSON.parse(body) }));
    request.on("error", reject);
    request.end();
  });
}

const health = (server: RpcServer) => createClient(Health, createRpcTransport(baseUrl(server)));

describe("startRpcServer probes", () => {
  it("answers /healthz with 200", async () => {
    const server = await serve(async () => false);
    expect(await get(connectSession(server), "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    expect(await get(connectSession(server), "/healthz?verbose=1")).toEqual({ status: 200, body: { status: "ok" } });
  });

  it("answers /readyz with 200 when ready, 503 when not ready or when the check fails", async () => {
    let readiness: () => Promise<boolean> = async () => true;
    const server = await serve(() => readiness());
    const session = connectSession(server);

    expect(await get(session, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    readiness = async () => false;
    expect(await get(session, "/readyz")).toEqual({ status: 503, body: { status: "not ready" } });
    readiness = async () => {
      throw new Error("database unreachable");
    };
    expect(await get(session, "/readyz")).toEqual({ status: 503, body: { status: "not ready" } });
  });

  it("answers other paths with 404", async () => {
    const server = await serve();
    expect(await get(connectSession(server), "/nope")).toEqual({ status: 404, body: { error: "Not found" } });
  });

  it("reports grpc.health.v1 SERVING when ready and NOT_SERVING when not", async () => {
    let ready = true;
    const server = await serve(async () => ready);
    const client = health(server);

    expect((await client.check({})).status).toBe(SERVING);
    ready = false;
    expect((await client.check({})).status).toBe(NOT_SERVING);
    ready = true;
    expect((await client.list({})).statuses[""]?.status).toBe(SERVING);
  });

  it("reports NOT_SERVING once close() has begun", async () => {
    const server = await serve();
    const statuses: HealthCheckResponse_ServingStatus[] = [];
    let closed: Promise<void> | undefined;
    // Breaking out of the loop alone does not cancel the HTTP/2 stream; aborting does.
    const watching = new AbortController();
    for await (const response of health(server).watch({}, { timeoutMs: 20_000, signal: watching.signal })) {
      statuses.push(response.status);
      if (statuses.length === 1) closed = server.close();
      else {
        watching.abort();
        break;
      }
    }
    expect(statuses).toEqual([SERVING, NOT_SERVING]);
    await closed;
  });
});

describe("startRpcServer close()", () => {
  it("resolves while clients keep their HTTP/2 sessions open", async () => {
    const server = await serve();
    const raw = connectSession(server);
    expect((await get(raw, "/healthz")).status).toBe(200);
    const rawClosed = new Promise<void>((resolve) => raw.once("close", () => resolve()));
    // The Connect transport keeps its session too, and pings it.
    expect((await health(server).check({})).status).toBe(SERVING);
    expect(raw.closed || raw.destroyed).toBe(false);

    await server.close();

    await rawClosed;
    await expect(get(connectSession(server), "/healthz")).rejects.toThrow();
  });

  it("lets a call in flight finish before the server is closed", async () => {
    let started: () => void = () => {};
    const callStarted = new Promise<void>((resolve) => (started = resolve));
    let finish: () => void = () => {};
    const server = await serve(undefined, (router) =>
      router.service(PartnersService, {
        getProgram: async (req) => {
          started();
          await new Promise<void>((resolve) => (finish = resolve));
          return { program: { productId: req.productId } };
        },
      }),
    );
    const client = createClient(PartnersService, createRpcTransport(baseUrl(server)));
    const call = client.getProgram({ productId: "prd_slow" });
    await callStarted;

    let serverClosed = false;
    const closing = server.close().then(() => (serverClosed = true));
    // The server waits for the stream: still open while the handler runs.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(serverClosed).toBe(false);
    finish();

    expect((await call).program?.productId).toBe("prd_slow");
    await closing;
    expect(serverClosed).toBe(true);
  });
});

describe("errorMapping in startRpcServer", () => {
  const routes = (router: ConnectRouter) =>
    router.service(PartnersService, {
      getProgram: async () => {
        throw new DomainError("not_found", "Program of product prd_1 not found");
      },
      registerAffiliate: async () => {
        throw new DomainError("invalid_argument", "Validation failed", { email: ["Invalid email"] }, ["Too many"]);
      },
      getPartnership: async () => {
        throw new Error("relation partnerships does not exist; password=hunter2");
      },
      updateProgram: async () => {
        throw Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:5432"), { code: "ECONNREFUSED" });
      },
    });

  async function callError(call: () => Promise<unknown>): Promise<ConnectError> {
    try {
      await call();
    } catch (error) {
      return ConnectError.from(error);
    }
    throw new Error("expected the call to fail");
  }

  it("passes a DomainError through with its code, message and field errors", async () => {
    const server = await serve(undefined, routes);
    const client = createClient(PartnersService, createRpcTransport(baseUrl(server)));

    const notFound = await callError(() => client.getProgram({ productId: "prd_1" }));
    expect(notFound.code).toBe(Code.NotFound);
    expect(notFound.rawMessage).toBe("Program of product prd_1 not found");

    const invalid = await callError(() => client.registerAffiliate({}));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(invalid.rawMessage).toBe("Validation failed");
    expect(fieldErrorsOf(invalid)).toEqual({ fieldErrors: { email: ["Invalid email"] }, formErrors: ["Too many"] });
  });

  it("answers any other error as a generic INTERNAL and logs the cause", async () => {
    const { logger, lines } = capturingLogger();
    const server = await serve(undefined, routes, logger);
    const client = createClient(PartnersService, createRpcTransport(baseUrl(server)));

    const internal = await callError(() => client.getPartnership({}));
    expect(internal.code).toBe(Code.Internal);
    expect(internal.rawMessage).toBe("Internal error");
    expect(JSON.stringify(internal)).not.toContain("hunter2");
    expect(internal.metadata.get("grpc-message") ?? "").not.toContain("hunter2");
    expect(fieldErrorsOf(internal)).toBeUndefined();
    const logged = await eventually("the cause logged", () =>
      lines.find((line) => line.msg === "unhandled error in RPC handler"),
    );
    expect(logged).toMatchObject({ level: "error", method: "GetPartnership" });
    expect(JSON.stringify(logged.err)).toContain("hunter2");
  });

  it("answers a lost dependency connection as UNAVAILABLE", async () => {
    const server = await serve(undefined, routes);
    const client = createClient(PartnersService, createRpcTransport(baseUrl(server)));

    const unavailable = await callError(() => client.updateProgram({}));
    expect(unavailable.code).toBe(Code.Unavailable);
    expect(unavailable.rawMessage).toBe("A dependency of the service is unavailable");
  });

  it("registers the platform's health service alongside the service's routes", async () => {
    const server = await serve(undefined, routes);
    expect((await health(server).check({})).status).toBe(SERVING);
  });
});

describe("createRpcTransport", () => {
  it("asks for answers uncompressed, where connect-node's default gzips anything over 1 KB", async () => {
    const partnerships = Array.from({ length: 100 }, (_, i) => ({ id: `ptn_${String(i).padStart(32, "0")}` }));
    const server = await serve(undefined, (router) =>
      router.service(PartnersService, { batchGetPartnerships: async () => ({ partnerships }) }),
    );
    const encodingOf = async (transport: Transport) => {
      let encoding: string | null = null;
      const { partnerships: answered } = await createClient(PartnersService, transport).batchGetPartnerships(
        {},
        { onHeader: (headers) => (encoding = headers.get("content-encoding")) },
      );
      expect(answered).toHaveLength(100);
      return encoding;
    };

    expect(await encodingOf(createRpcTransport(baseUrl(server)))).toBeNull();
    // The same call with connect-node's defaults, to show the server would compress it.
    const defaults = createConnectTransport({ baseUrl: baseUrl(server), httpVersion: "2", useBinaryFormat: true });
    expect(await encodingOf(defaults)).toBe("gzip");
  });
});
