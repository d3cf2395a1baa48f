/**
 * Reference server for section B: one Fastify route making one trivial Connect RPC
 * (grpc.health.v1 Health/Check on partners) and answering JSON. It is what an authenticated
 * gateway read costs at the very least (one HTTP request in, one RPC hop out), so the gateway's
 * GET /api/v1/program is compared against it. Run by the bench as
 * `node --import tsx --import @affiliate/platform/instrumentation src/trivial-rpc-server.ts`.
 */
import { createRpcTransport } from "@affiliate/platform";
import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { createClient } from "@connectrpc/connect";
import fastify from "fastify";

const partnersUrl = process.env.PARTNERS_URL;
if (!partnersUrl) throw new Error("PARTNERS_URL is required");

// The same transport the gateway uses: Connect binary over one HTTP/2 session, traced.
const health = createClient(Health, createRpcTransport(partnersUrl));
const app = fastify();

app.get("/healthz", async () => ({ status: "ok" }));
app.get("/rpc", async () => {
  const { status } = await health.check({ service: "" });
  return { data: { status: HealthCheckResponse_ServingStatus[status] } };
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
process.once("SIGTERM", () => {
  void app.close().then(() => process.exit(0));
});
