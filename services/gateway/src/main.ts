import { connectNats, createLogger, createRpcTransport, onShutdown } from "@affiliate/platform";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { authenticateWith, KeyCache } from "./auth/key-cache.js";
import { startKeyEvictions } from "./auth/key-evictions.js";
import { loadGatewayConfig } from "./config.js";
import { partnersReadiness } from "./routes/ops.js";
import { buildServer } from "./server.js";

const config = loadGatewayConfig();
const logger = createLogger("gateway", config.LOG_LEVEL);

const transport = createRpcTransport(config.PARTNERS_URL);
const partners = createClient(PartnersService, transport);
const keyCache = new KeyCache({ resolve: authenticateWith(partners), ttlMs: config.KEY_CACHE_TTL_MS });
const evictions = startKeyEvictions({
  connect: () => connectNats(config.NATS_URL, "gateway"),
  namespace: config.EVENTS_NAMESPACE,
  cache: keyCache,
  logger,
});

const app = buildServer({ partners, ready: partnersReadiness(transport), logger, config, keyCache });
await app.listen({ port: config.PORT, host: config.HOST });

onShutdown(logger, [
  ["stop accepting requests and finish in-flight ones", () => app.close()],
  ["stop following key rotations", () => evictions.stop()],
]);
