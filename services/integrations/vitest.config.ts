import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    globalSetup: [fileURLToPath(import.meta.resolve("@affiliate/testing/global-setup"))],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: files run one at a time, each against its own database.
    fileParallelism: false,
  },
});
