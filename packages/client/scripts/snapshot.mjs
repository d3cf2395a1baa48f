// `npm run snapshot -w @affiliate/client`: takes the OpenAPI document the gateway serves now
// (from its route declarations, built gateway required), commits it to openapi.snapshot.json and
// regenerates src/generated/ from it. Run it when the gateway's routes change; `npm run lint`
// refuses a breaking change that did not come with a new snapshot, and the client's tests fail
// until the snapshot and the generated files match what the gateway serves.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generatedDirectory, generatedSources } from "./codegen.mjs";
import { servedDocument, snapshotPath, snapshotText } from "./document.mjs";

const document = await servedDocument();
writeFileSync(snapshotPath, snapshotText(document));
mkdirSync(generatedDirectory, { recursive: true });
for (const [name, source] of Object.entries(await generatedSources(document))) {
  writeFileSync(join(generatedDirectory, name), source);
}
console.log(`snapshot: ${Object.keys(document.paths).length} paths; src/generated/ written`);
