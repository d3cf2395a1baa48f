import { createFaultProxy, createTestDatabase, createTestNamespace, type FaultProxy } from "@affiliate/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * Dependencies that come up late (issue 34): the mesh is started while Postgres refuses
 * connections and the services' NATS refuses them too, as servers started alongside it that are
 * not up yet. The launcher waits for Postgres (preflight, migrations) and each service waits for
 * NATS with back-off, instead of the mesh giving up; once both answer, the mesh serves.
 */
const database = await createTestDatabase();
const namespace = createTestNamespace();
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
let postgresProxy: FaultProxy | undefined;
let natsProxy: FaultProxy | undefined;
let mesh: Mesh | undefined;

afterAll(async () => {
  await mesh?.stop();
  await Promise.all([postgresProxy?.close(), natsProxy?.close()]);
  await namespace.cleanup();
  await database.drop();
});

describe("the mesh started before its dependencies are up", () => {
  it("waits for a Postgres and a NATS that answer late, then serves", async () => {
    postgresProxy = await createFaultProxy(database.url);
    natsProxy = await createFaultProxy(natsUrl);
    const [postgresLate, natsLate] = [postgresProxy, natsProxy];
    await postgresLate.cut();
    natsLate.refuse();
    const lines: string[] = [];
    const starting = startTestMesh({
      databaseUrl: postgresLate.url(database.url),
      // The launcher's preflight reaches NATS itself; the services' NATS refuses until restored.
      natsUrl,
      env: { NATS_URL: natsLate.url(natsUrl), EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn" },
      report: (line) => {
        lines.push(line);
        if (/^cannot reach Postgres/.test(line)) void postgresLate.restore();
      },
    });
    // Once a service has been refused, NATS comes up.
    await eventually(async () => expect(natsLate.refused).toBeGreaterThan(0), 120_000);
    await natsLate.restore();
    mesh = await starting;

    expect(lines.find((line) => line.startsWith("cannot reach Postgres"))).toMatch(/trying again in \d+ ms$/);
    expect((await createProduct(mesh, "Late start")).product_id).toMatch(/^prd_/);
    expect(mesh.recentOutput().filter((line) => line.includes("dependency not available yet")).length).toBeGreaterThan(
      0,
    );
  }, 180_000);
});
