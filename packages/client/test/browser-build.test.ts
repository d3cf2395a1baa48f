/**
 * The client runs in browsers (contract section 15): bundled for the browser platform from its
 * sources, nothing it imports (its dependencies included) may need a Node built-in. esbuild
 * refuses to resolve `node:*` and Node's bare built-in names for that platform, so the build
 * itself is the check; the metafile then shows no built-in was marked external instead.
 */
import { builtinModules } from "node:module";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

describe("the browser bundle", () => {
  it("builds for the browser with no Node built-in anywhere in its graph", async () => {
    const result = await build({
      entryPoints: [fileURLToPath(new URL("../src/index.ts", import.meta.url))],
      bundle: true,
      platform: "browser",
      format: "esm",
      target: "es2022",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    expect(result.errors).toEqual([]);
    const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((entry) => entry.path));
    const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
    expect(imports.filter((path) => builtins.has(path) || path.startsWith("node:"))).toEqual([]);
    const [bundle] = result.outputFiles;
    expect(bundle?.text).toContain("idempotency-key");
    // Its dependencies came along: lossless-json and standardwebhooks are in the bundle.
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((path) => path.includes("node_modules/lossless-json/"))).toBe(true);
    expect(inputs.some((path) => path.includes("node_modules/standardwebhooks/"))).toBe(true);
  });
});
