#!/usr/bin/env node
import { parseArgs } from "node:util";
/**
 * The operator CLI (contract section 2): products and keys, over the partners admin RPC.
 * Prints exactly one JSON line on stdout; errors go to stderr with exit code 1. `--help` (`-h`),
 * anywhere on the line, prints the usage on stdout and exits 0.
 *
 *   npm run --silent admin -- products create --name "Acme"
 *   npm run --silent admin -- products list
 *   npm run --silent admin -- keys rotate --product <product_id>
 *
 * It finds partners through the same variables as `npm start`: PARTNERS_URL (in a cluster, from
 * the ConfigMap affiliate-config), else PARTNERS_RPC_PORT on 127.0.0.1, else partners' port in
 * deploy/services.json.
 */
import { runCommand, UsageError, usage } from "./commands.js";
import { partnersUrl } from "./partners-url.js";

try {
  const { positionals, values } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: { name: { type: "string" }, product: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
  } else {
    const output = await runCommand(positionals, values, partnersUrl(process.env));
    process.stdout.write(`${JSON.stringify(output)}\n`);
  }
} catch (error) {
  process.stderr.write(
    `admin: ${error instanceof UsageError || error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
