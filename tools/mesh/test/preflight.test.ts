import { spawn } from "node:child_process";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { autovacuumOffWarning, preflight, preflightWarnings } from "../src/preflight.js";
import { eventually, freePort } from "./helpers.js";

/**
 * `npm start`'s first check, against the real servers: each problem is told as what is wrong
 * and how to fix it for the address given, so the hint never names another port, host or
 * database than the one configured.
 */
let database: TestDatabase;
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database?.drop();
});

/** The test database's URL with one part changed. */
function databaseUrlWith(change: (url: URL) => void): string {
  const url = new URL(database.url);
  change(url);
  return url.toString();
}

describe("preflight", () => {
  it("passes when Postgres and NATS with JetStream answer", async () => {
    expect(await preflight(database.url, natsUrl)).toBeUndefined();
  });

  it("tells a database that does not exist from a server that cannot be reached, and says how to create it", async () => {
    const url = databaseUrlWith((u) => {
      u.pathname = "/no_such_database_here";
    });
    const { hostname, port, username } = new URL(url);
    const problem = await preflight(url, natsUrl);
    expect(problem).toBe(
      `Postgres at ${url} answers but has no database "no_such_database_here" (3D000); create it (createdb -h ${hostname} -p ${port} -U ${username} no_such_database_here) or name an existing database in DATABASE_URL`,
    );
  });

  it("says the login was refused for a role the server does not know", async () => {
    const url = databaseUrlWith((u) => {
      u.username = "no_such_role";
    });
    expect(await preflight(url, natsUrl)).toMatch(
      /^Postgres at \S+ refused the login of "no_such_role" \(28000: role "no_such_role" does not exist\); fix the user or password in DATABASE_URL$/,
    );
  });

  it("names the address where nothing listens for Postgres", async () => {
    const port = await freePort();
    const url = databaseUrlWith((u) => {
      u.port = String(port);
    });
    expect(await preflight(url, natsUrl, { waitMs: 0 })).toBe(
      `cannot reach Postgres at ${url} (ECONNREFUSED): nothing accepts connections on ${new URL(url).hostname}:${port}; start Postgres 15 or later there, or set DATABASE_URL to a server that runs`,
    );
  });

  it("names a host that does not resolve", async () => {
    const url = databaseUrlWith((u) => {
      u.hostname = "no-such-host.invalid";
    });
    expect(await preflight(url, natsUrl)).toMatch(
      /^cannot reach Postgres at \S+ \(\w+\): the host name no-such-host\.invalid does not resolve;/,
    );
  });

  it("hints at starting NATS on the port of the URL given, not the default one", async () => {
    const port = await freePort();
    expect(await preflight(database.url, `nats://127.0.0.1:${port}`, { waitMs: 0 })).toBe(
      `cannot reach NATS at nats://127.0.0.1:${port} (CONNECTION_REFUSED): nothing accepts connections on 127.0.0.1:${port}; start nats-server with JetStream there (nats-server -a 127.0.0.1 -p ${port} -js), or set NATS_URL to a server that runs`,
    );
  });

  it("reads a NATS address without a scheme as nats.js does", async () => {
    const port = await freePort();
    expect(await preflight(database.url, `127.0.0.1:${port}`, { waitMs: 0 })).toContain(
      `(nats-server -a 127.0.0.1 -p ${port} -js)`,
    );
  });

  it("waits a few seconds for a NATS that is not up yet, saying so, and passes once it answers", async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    let server: ReturnType<typeof spawn> | undefined;
    const waits: string[] = [];
    try {
      const problem = await preflight(database.url, url, {
        waitMs: 30_000,
        report: (line) => {
          waits.push(line);
          // Started once the first attempt was refused: it comes up late.
          server ??= spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js"], { stdio: "ignore" });
        },
      });
      expect(problem).toBeUndefined();
      expect(waits[0]).toMatch(/^cannot reach NATS at \S+ \(CONNECTION_REFUSED\): .*; trying again in 250 ms$/);
    } finally {
      server?.kill();
    }
  });

  it("tells a NATS without JetStream from one that cannot be reached", async () => {
    const port = await freePort();
    // The machine's nats-server (as .ci/run starts it), without -js.
    const server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    try {
      const url = `nats://127.0.0.1:${port}`;
      await eventually(async () =>
        expect(await preflight(database.url, url, { waitMs: 0 })).not.toMatch(/^cannot reach/),
      );
      expect(await preflight(database.url, url, { waitMs: 0 })).toBe(
        `NATS at ${url} answers but JetStream is not enabled; restart it with JetStream (nats-server -a 127.0.0.1 -p ${port} -js)`,
      );
    } finally {
      server.kill();
    }
  });
});

describe("preflight warnings", () => {
  it("warn in one line exactly when the server runs with autovacuum off, saying what happens without it", async () => {
    // This machine's setting is the server's to decide (never changed by a test): whichever it
    // is, the warning follows it.
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const [row] = await sql<{ autovacuum: string }[]>`show autovacuum`;
    await sql.end();
    const warnings = await preflightWarnings(database.url);
    expect(warnings).toEqual(row?.autovacuum === "off" ? [autovacuumOffWarning(database.url)] : []);
  });

  it("the autovacuum warning is one line naming the hot tables, the consequence and the fix", () => {
    const line = autovacuumOffWarning("postgres://app:secret@db.example:5432/app");
    expect(line).not.toContain("\n");
    expect(line).not.toContain("secret");
    expect(line).toContain("autovacuum = off");
    expect(line).toMatch(/outboxes.*deliveries.*job tables/);
    expect(line).toContain("bloat");
    expect(line).toContain("ALTER SYSTEM SET autovacuum = on");
  });
});
