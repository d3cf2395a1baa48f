import { join } from "node:path";
import { createLogger, PageTokens, type RpcServer, startRpcServer } from "@affiliate/platform";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../src/server.js";
import { type Harness, startHarness } from "./harness.js";

/**
 * Proof that the service speaks standard gRPC, not only Connect: a stock @grpc/grpc-js client,
 * built from the .proto files alone, calls the real HTTP/2 server and its health service.
 */
const protoRoot = join(import.meta.dirname, "..", "..", "..", "proto");

type Callback<T> = (error: grpc.ServiceError | null, response: T) => void;
type UnaryMethod<Req, Res> = (request: Req, callback: Callback<Res>) => void;
interface AdminClient extends grpc.Client {
  createProduct: UnaryMethod<{ name: string }, { product: { id: string; name: string }; keys: { secretKey: string } }>;
}
interface PartnersClient extends grpc.Client {
  authenticate: UnaryMethod<{ apiKey: string }, { productId: string; mode: string }>;
  getProgram: UnaryMethod<{ productId: string }, { program: { holdDays: number; payoutMinimumCents: string } }>;
}
interface HealthClient extends grpc.Client {
  check: UnaryMethod<{ service: string }, { status: string }>;
}
type ClientConstructor<T> = new (address: string, credentials: grpc.ChannelCredentials) => T;

const call = <Req, Res>(method: UnaryMethod<Req, Res>, client: grpc.Client, request: Req) =>
  new Promise<Res>((resolve, reject) =>
    method.call(client, request, (error, response) => (error ? reject(error) : resolve(response))),
  );

let h: Harness;
let server: RpcServer;
let address: string;

beforeAll(async () => {
  h = await startHarness();
  server = await startRpcServer({
    port: 0,
    host: "127.0.0.1",
    logger: createLogger("partners-test", "silent"),
    routes: routes({ sql: h.sql, pageTokens: new PageTokens("test-page-token-secret") }),
    readiness: async () => true,
  });
  address = `127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.close();
  await h.close();
});

const loadOptions = { includeDirs: [protoRoot], longs: String, enums: String, defaults: true, keepCase: false };

describe("standard gRPC interop", () => {
  it("a grpc-js client creates a product, authenticates and reads the program", async () => {
    const definition = protoLoader.loadSync(
      ["affiliate/partners/v1/admin_service.proto", "affiliate/partners/v1/partners_service.proto"],
      loadOptions,
    );
    const v1 = (
      grpc.loadPackageDefinition(definition) as unknown as {
        affiliate: { partners: { v1: Record<string, ClientConstructor<grpc.Client>> } };
      }
    ).affiliate.partners.v1;
    const admin = new (v1.PartnersAdminService as ClientConstructor<AdminClient>)(
      address,
      grpc.credentials.createInsecure(),
    );
    const partners = new (v1.PartnersService as ClientConstructor<PartnersClient>)(
      address,
      grpc.credentials.createInsecure(),
    );
    try {
      const created = await call(admin.createProduct, admin, { name: "Interop" });
      expect(created.product.name).toBe("Interop");
      const auth = await call(partners.authenticate, partners, { apiKey: created.keys.secretKey });
      expect(auth).toEqual({ productId: created.product.id, mode: "KEY_MODE_LIVE" });
      const { program } = await call(partners.getProgram, partners, { productId: created.product.id });
      expect(program).toMatchObject({ holdDays: 30, payoutMinimumCents: "5000" });
      const denied = await call(partners.authenticate, partners, { apiKey: "sk_live_nope" }).catch(
        (e: grpc.ServiceError) => e,
      );
      expect((denied as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      admin.close();
      partners.close();
    }
  });

  it("grpc.health.v1 answers SERVING to a stock health client", async () => {
    const definition = protoLoader.loadSync(healthProtoPath, loadOptions);
    const Health = (
      grpc.loadPackageDefinition(definition) as unknown as {
        grpc: { health: { v1: { Health: ClientConstructor<HealthClient> } } };
      }
    ).grpc.health.v1.Health;
    const health = new Health(address, grpc.credentials.createInsecure());
    try {
      expect(await call(health.check, health, { service: "" })).toEqual({ status: "SERVING" });
    } finally {
      health.close();
    }
  });
});
