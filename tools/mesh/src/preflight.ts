import { userInfo } from "node:os";
import { connect as natsConnect } from "nats";
import postgres from "postgres";

/** The URL without its password, fit for a message. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}

/** How long each server has to answer. */
const connectTimeoutS = 4;

/**
 * Checks that Postgres and NATS answer before anything starts, so a missing server is one clear
 * line within seconds, not a stack trace from a service: what is wrong, and how to fix it for
 * the address given (never another port or one distribution's paths).
 */
export async function preflight(
  databaseUrl: string,
  natsUrl: string,
  options: PreflightOptions = {},
): Promise<string | undefined> {
  const giveUpAt = Date.now() + (options.waitMs ?? defaultWaitMs);
  return (
    (await untilAnswering(() => postgresProblem(databaseUrl), giveUpAt, options.report)) ??
    (await untilAnswering(() => natsProblem(natsUrl), giveUpAt, options.report))
  );
}

export interface PreflightOptions {
  /**
   * How long a server that is not up yet (refusing connections, starting up, JetStream not yet
   * answering) is waited for, trying again with back-off, before its problem is the answer.
   */
  waitMs?: number;
  /** Told each time a server is waited for (not printed by `npm start`: its failure is one line). */
  report?: (line: string) => void;
}

/**
 * Servers started together with the mesh (a container, a service manager) may come up a few
 * seconds late: they are waited for this long, and `npm start` still fails within the contract's
 * 10 s when one never comes (section 1).
 */
const defaultWaitMs = 7000;

/** A problem of a server that is starting, not a wrong address or setting: worth another try. */
const notUpYet = /^cannot reach \S+ at \S+ \((ECONNREFUSED|CONNECTION_REFUSED)\)|\(57P03|JetStream is not enabled/;

async function untilAnswering(
  check: () => Promise<string | undefined>,
  giveUpAt: number,
  report: ((line: string) => void) | undefined,
): Promise<string | undefined> {
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 2000)) {
    const problem = await check();
    if (problem === undefined || !notUpYet.test(problem) || Date.now() + delayMs > giveUpAt) return problem;
    report?.(`${problem}; trying again in ${delayMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

/**
 * Settings of a server that answers which work but hurt, one line each for the launcher to print:
 * today, Postgres running without autovacuum (as some development machines do). Production runs
 * it, the hot tables' settings ship in the migrations, and without it they bloat under load.
 */
export async function preflightWarnings(databaseUrl: string): Promise<string[]> {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: connectTimeoutS, onnotice: () => {} });
  try {
    const [row] = await sql<{ autovacuum: string }[]>`select current_setting('autovacuum') as autovacuum`;
    return row?.autovacuum === "off" ? [autovacuumOffWarning(databaseUrl)] : [];
  } catch {
    // The preflight has just reached it; a failure here is not worth a second report.
    return [];
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

export function autovacuumOffWarning(databaseUrl: string): string {
  return `warning: Postgres at ${redactUrl(databaseUrl)} runs with autovacuum = off: the dead rows of the hot tables (outboxes, webhook deliveries and emails, job tables) are never reclaimed, so under steady load they bloat and commits, the relay and the notifier slow down until requests time out (docs/performance.md); turn it on (autovacuum = on in postgresql.conf, or ALTER SYSTEM SET autovacuum = on and SELECT pg_reload_conf()), as production runs it`;
}

/** Where a Postgres URL points, as the server will be asked (postgres.js's defaults). */
function postgresTarget(url: string) {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  const user = decodeURIComponent(parsed?.username ?? "") || process.env.PGUSER || userInfo().username;
  return {
    host: parsed?.hostname.replace(/^\[|\]$/g, "") || "localhost",
    port: Number(parsed?.port || 5432),
    user,
    database: decodeURIComponent(parsed?.pathname.slice(1) ?? "") || user,
  };
}

async function postgresProblem(databaseUrl: string): Promise<string | undefined> {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: connectTimeoutS, onnotice: () => {} });
  try {
    await sql`select 1`;
    return undefined;
  } catch (error) {
    const at = redactUrl(databaseUrl);
    const target = postgresTarget(databaseUrl);
    const code = codeOf(error);
    const unreachable = networkProblem(code, target.host, target.port);
    if (unreachable) {
      return `cannot reach Postgres at ${at} (${code}): ${unreachable}; start Postgres 15 or later there, or set DATABASE_URL to a server that runs`;
    }
    if (code === "3D000") {
      return `Postgres at ${at} answers but has no database "${target.database}" (3D000); create it (createdb -h ${target.host} -p ${target.port} -U ${target.user} ${target.database}) or name an existing database in DATABASE_URL`;
    }
    if (code.startsWith("28")) {
      return `Postgres at ${at} refused the login of "${target.user}" (${code}: ${messageOf(error)}); fix the user or password in DATABASE_URL`;
    }
    return `Postgres at ${at} answered with an error (${code}: ${messageOf(error)})`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

/** Where a NATS URL points: its first server, as nats.js reads it (no scheme means nats://). */
function natsTarget(url: string) {
  const first = url.split(",")[0]?.trim() ?? "";
  const withScheme = first.includes("://") ? first : `nats://${first}`;
  const parsed = URL.canParse(withScheme) ? new URL(withScheme) : undefined;
  return { host: parsed?.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1", port: Number(parsed?.port || 4222) };
}

async function natsProblem(natsUrl: string): Promise<string | undefined> {
  const at = redactUrl(natsUrl);
  const { host, port } = natsTarget(natsUrl);
  const start = `nats-server -a ${host} -p ${port} -js`;
  let nc: Awaited<ReturnType<typeof natsConnect>>;
  try {
    nc = await natsConnect({ servers: natsUrl, timeout: connectTimeoutS * 1000, reconnect: false });
  } catch (error) {
    const code = codeOf(error);
    const unreachable = networkProblem(code, host, port);
    if (unreachable) {
      return `cannot reach NATS at ${at} (${code}): ${unreachable}; start nats-server with JetStream there (${start}), or set NATS_URL to a server that runs`;
    }
    if (code.includes("AUTHORIZATION")) {
      return `NATS at ${at} refused the connection (${code}); put its credentials in NATS_URL (nats://user:password@${host}:${port})`;
    }
    return `NATS at ${at} refused the connection (${code}: ${messageOf(error)})`;
  }
  try {
    await (await nc.jetstreamManager()).getAccountInfo();
    return undefined;
  } catch {
    return `NATS at ${at} answers but JetStream is not enabled; restart it with JetStream (${start})`;
  } finally {
    await nc.close();
  }
}

/**
 * What a failure to connect says about the address, in words; undefined when the server
 * answered (the failure is its answer, not the network's).
 */
function networkProblem(code: string, host: string, port: number): string | undefined {
  switch (code) {
    case "ECONNREFUSED":
    case "CONNECTION_REFUSED":
      return `nothing accepts connections on ${host}:${port}`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host name ${host} does not resolve`;
    case "CONNECT_TIMEOUT":
    case "ETIMEDOUT":
    case "TIMEOUT":
      return `no answer from ${host}:${port} within ${connectTimeoutS} s (a wrong address, or a firewall)`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `no route to ${host}`;
    default:
      return undefined;
  }
}

const codeOf = (error: unknown) => String((error as { code?: unknown }).code ?? "no code");

const messageOf = (error: unknown) => (error instanceof Error ? error.message.split("\n")[0] : String(error));
