export * from "./database.js";
export * from "./infrastructure.js";
export * from "./metrics.js";
export * from "./nats.js";
