#!/usr/bin/env node
/**
 * The operator CLI (contract section 2): products and keys, over the partners admin RPC.
 * Prints exactly one JSON line on stdout; errors go to stderr with exit code 1.
 *
 *   npm run --silent admin -- products create --name "Acme"
 *   npm run --silent admin -- products list
 *   npm run --silent admin -- keys rotate --product <product_id>
 *
 * PARTNERS_URL (default http://127.0.0.1:7101) says where the partners service listens.
 */
import { parseArgs } from "node:util";
import { runCommand, UsageError } from "./commands.js";

try {
  const { positionals, values } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: { name: { type: "string" }, product: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const output = await runCommand(positionals, values, process.env.PARTNERS_URL ?? "http://127.0.0.1:7101");
  process.stdout.write(`${JSON.stringify(output)}\n`);
} catch (error) {
  process.stderr.write(
    `admin: ${error instanceof UsageError || error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
