// Lints the OpenAPI 3.1 document the gateway serves with Redocly's linter (its recommended
// rules, see redocly.yaml), run by the root `npm run lint`. The document is written from the
// route declarations of the built gateway (dist/), without a server or a service.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeApi } from "../dist/describe-api.js";

const gateway = dirname(dirname(fileURLToPath(import.meta.url)));
const redocly = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");
const directory = mkdtempSync(join(tmpdir(), "gateway-openapi-"));
const file = join(directory, "openapi.json");
try {
  writeFileSync(file, JSON.stringify(await describeApi(), null, 2));
  const lint = spawnSync(
    process.execPath,
    [redocly, "lint", file, "--config", join(gateway, "redocly.yaml"), "--format", "stylish"],
    { stdio: "inherit", env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
  );
  process.exitCode = lint.status ?? 1;
} finally {
  rmSync(directory, { recursive: true, force: true });
}
