// `npm run lint`'s contract guard: compares the OpenAPI document the gateway serves now (from the
// built gateway's route declarations) with the committed snapshot, packages/client/openapi.snapshot.json.
// A breaking change fails, unless the snapshot was updated in the same change: that is the
// deliberate step (`npm run snapshot -w @affiliate/client`, with the reason in the commit message),
// and the client's own tests then tell what it has to follow. Additions only pass, with a note.
import { isDeepStrictEqual } from "node:util";
import { breakingChanges } from "./contract-guard.mjs";
import { committedSnapshot, servedDocument } from "./document.mjs";

const snapshot = committedSnapshot();
const served = await servedDocument();
const breaking = breakingChanges(snapshot, served);
if (breaking.length > 0) {
  console.error(`contract: ${breaking.length} breaking change(s) against packages/client/openapi.snapshot.json:`);
  for (const line of breaking) console.error(`  - ${line}`);
  console.error(
    "If the break is intended, run `npm run snapshot -w @affiliate/client` and say why in the commit message;\n" +
      "otherwise keep the contract: services and clients deploy independently.",
  );
  process.exitCode = 1;
} else if (!isDeepStrictEqual(snapshot, served)) {
  console.log(
    "contract: no breaking change; the snapshot is behind the gateway's additions: run `npm run snapshot -w @affiliate/client`.",
  );
} else {
  console.log("contract: the served document matches the snapshot");
}
