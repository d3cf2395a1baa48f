// Kept as the package's `@affiliate/rest-shapes/webhook-mappers` entry point.
export * from "./mappers/webhooks.js";
