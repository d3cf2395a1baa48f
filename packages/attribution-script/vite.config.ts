import { defineConfig } from "vite";

/**
 * One classic script, dist/affiliate.js: an IIFE with nothing to import and nothing exported
 * into the page's globals but window.affiliate (which the script sets itself), minified.
 */
export default defineConfig({
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2019",
    sourcemap: false,
    lib: {
      entry: "src/affiliate.ts",
      formats: ["iife"],
      name: "affiliateAttribution",
      fileName: () => "affiliate.js",
    },
  },
});
