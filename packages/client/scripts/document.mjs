// The OpenAPI document the client follows: the committed snapshot, and the document the gateway
// serves now. Shared by the snapshot script, the lint's contract guard and the drift tests.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const clientDirectory = dirname(dirname(fileURLToPath(import.meta.url)));
/** The committed copy of the document the client was generated from. */
export const snapshotPath = join(clientDirectory, "openapi.snapshot.json");

/** The document as the snapshot file holds it. */
export const snapshotText = (document) => `${JSON.stringify(document, null, 2)}\n`;

export const committedSnapshot = () => JSON.parse(readFileSync(snapshotPath, "utf8"));

/**
 * The document the gateway serves now, written from its route declarations (the built gateway,
 * services/gateway/dist), as plain JSON: exactly what `GET /api/v1/openapi.json` answers.
 */
export async function servedDocument() {
  const { describeApi } = await import("@affiliate/gateway/dist/describe-api.js");
  return JSON.parse(JSON.stringify(await describeApi()));
}
