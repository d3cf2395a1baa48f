import { defineConfig } from "vite";

/**
 * Static files for the gateway to serve under /console: hashed assets, no inline script or style
 * (the Content-Security-Policy allows only 'self'), and no request to another origin.
 */
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    // Vite inlines small assets as data: URLs, which the policy's img-src 'self' refuses.
    assetsInlineLimit: 0,
    // The module-preload polyfill is an inline script in some setups; every supported browser has it.
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
