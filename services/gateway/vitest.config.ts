import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Only the key-eviction integration test needs it: the real NATS, found or started once.
    globalSetup: [fileURLToPath(import.meta.resolve("@affiliate/testing/global-setup"))],
    testTimeout: 15_000,
    hookTimeout: 30_000,
    // Two shared cores: one file at a time.
    fileParallelism: false,
  },
});
