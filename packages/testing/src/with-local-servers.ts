/**
 * `npm test`'s wrapper: `node packages/testing/dist/with-local-servers.js <command…>` runs the
 * command with a Postgres and a NATS to test against. When the environment names neither, no
 * Docker engine answers (vitest's global setup would start containers) and nothing answers on
 * a default address, it starts the same local servers as `npm start` (@affiliate/local-servers,
 * data in the repository's .local-servers), hands their URLs to the command and stops them after
 * it. Otherwise it only runs the command.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureLocalServers, type LocalServers, LocalServersError } from "@affiliate/local-servers";
import { dockerAnswers } from "./infrastructure.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write("usage: with-local-servers <command> [arguments…]\n");
  process.exit(2);
}
const env = process.env;
const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url));

let local: LocalServers | undefined;
if (!(env.DATABASE_URL === undefined && env.NATS_URL === undefined && (await dockerAnswers()))) {
  try {
    local = await ensureLocalServers({
      databaseUrl: env.DATABASE_URL,
      natsUrl: env.NATS_URL,
      directory: env.LOCAL_SERVERS_DIR ?? join(repositoryRoot, ".local-servers"),
      postgresPort: Number(env.LOCAL_POSTGRES_PORT ?? 5432),
      natsPort: Number(env.LOCAL_NATS_PORT ?? 4222),
      natsServerBinary: env.NATS_SERVER_BIN,
      log: (line) => process.stderr.write(`tests: ${line}\n`),
    });
  } catch (error) {
    process.stderr.write(`tests: ${error instanceof LocalServersError ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
const started = local !== undefined && (local.started.postgres || local.started.nats);
const child = spawn(command, args, {
  stdio: "inherit",
  env: started && local ? { ...env, DATABASE_URL: local.databaseUrl, NATS_URL: local.natsUrl } : env,
});
// A terminal's Ctrl-C reaches the command's process group itself: let the command end, then stop
// the servers. A signal sent to this process alone is passed on.
process.on("SIGINT", () => {});
for (const signal of ["SIGTERM", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => {
  child.once("error", (error) => {
    process.stderr.write(`tests: could not run ${command}: ${error.message}\n`);
    resolve(1);
  });
  child.once("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
});
await local?.stop();
process.exit(code);
