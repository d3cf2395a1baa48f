export * from "./clusters.js";
export * from "./database.js";
export * from "./fault-proxy.js";
export * from "./front-balancer.js";
export * from "./infrastructure.js";
export * from "./locks.js";
export * from "./metrics.js";
export * from "./nats.js";
