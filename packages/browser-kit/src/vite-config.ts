/**
 * The Vite settings of an app the gateway serves under `base` ("/portal/"): static files with
 * hashed assets, no inline script or style (the Content-Security-Policy allows only 'self'), and
 * no request to another origin. The app's vite.config.ts hands them to defineConfig.
 */
export function browserAppConfig(base: `/${string}/`) {
  return {
    base,
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
  };
}
