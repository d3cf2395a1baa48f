import { request } from "node:http";

export const defaultDatabaseUrl = "postgres://postgres@127.0.0.1:5432/postgres";
export const defaultNatsUrl = "nats://127.0.0.1:4222";

export interface Infrastructure {
  databaseUrl: string;
  natsUrl: string;
  /** Stops what this process started (containers); a no-op for servers it only used. */
  stop(): Promise<void>;
}

/** Whether a Docker engine answers on its socket within half a second. */
export async function dockerAnswers(): Promise<boolean> {
  const socketPath = process.env.DOCKER_HOST?.startsWith("unix://")
    ? process.env.DOCKER_HOST.slice("unix://".length)
    : "/var/run/docker.sock";
  return new Promise((resolve) => {
    const req = request({ socketPath, path: "/_ping", timeout: 500 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

/**
 * Where the tests' Postgres and NATS are. DATABASE_URL and NATS_URL win when set. Otherwise,
 * when a Docker engine answers, both are started as containers (testcontainers is imported only
 * then, so machines without Docker never load it); otherwise the local servers are used, and
 * this says so.
 */
export async function resolveInfrastructure(log: (line: string) => void = console.log): Promise<Infrastructure> {
  if (process.env.DATABASE_URL || process.env.NATS_URL) {
    return {
      databaseUrl: process.env.DATABASE_URL ?? defaultDatabaseUrl,
      natsUrl: process.env.NATS_URL ?? defaultNatsUrl,
      stop: async () => {},
    };
  }
  if (await dockerAnswers()) {
    const { GenericContainer, Wait } = await import("testcontainers");
    const postgres = await new GenericContainer("postgres:15")
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start();
    const nats = await new GenericContainer("nats:2.10")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    log("tests: using Postgres and NATS containers (Docker engine found)");
    return {
      databaseUrl: `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`,
      natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
      stop: async () => {
        await Promise.all([postgres.stop(), nats.stop()]);
      },
    };
  }
  log(`tests: no Docker engine; using the local Postgres (${defaultDatabaseUrl}) and NATS (${defaultNatsUrl})`);
  return { databaseUrl: defaultDatabaseUrl, natsUrl: defaultNatsUrl, stop: async () => {} };
}
