import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    globalSetup: [fileURLToPath(import.meta.resolve("@affiliate/testing/global-setup"))],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Two cores: one file at a time; the end-to-end file starts a whole mesh.
    fileParallelism: false,
  },
});
