// The one list of services, deploy/services.json, read and checked against its JSON schema
// (services.schema.json), and what is computed from it rather than written twice.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The list, or exit 1 naming each way it breaks its schema. */
export function loadServiceList() {
  const list = JSON.parse(readFileSync(join(root, "services.json"), "utf8"));
  const schema = JSON.parse(readFileSync(join(root, "services.schema.json"), "utf8"));
  const validate = new Ajv2020({ allErrors: true }).compile(schema);
  if (!validate(list)) {
    for (const error of validate.errors ?? []) {
      console.error(`deploy/services.json${error.instancePath || ""}: ${error.message}`);
    }
    process.exit(1);
  }
  return list;
}

/**
 * Who may call `name`: every service whose `calls` name it, in the list's order, then the
 * operator CLI's pod when it calls it. Its NetworkPolicy admits exactly these.
 */
export function callersOf(list, name) {
  const callers = list.services.filter((service) => service.calls.includes(name)).map((service) => service.name);
  if (list.operatorCli.calls.includes(name)) callers.push(list.operatorCli.podLabel);
  return callers;
}
