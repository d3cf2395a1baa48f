/**
 * The benchmark suite: starts the whole mesh as `npm start` does, in a database and NATS
 * namespace of its own, runs the selected sections, prints a table per section and writes the
 * figures to bench/results/latest.json. It prints; it asserts nothing. Sizes come from BENCH_*
 * variables (see README.md).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Mesh, services, startMesh } from "@affiliate/mesh";
import { createTestDatabase, createTestNamespace, defaultNatsUrl } from "@affiliate/testing";
import postgres from "postgres";
import { loadConfig, type SectionName } from "./lib/config.js";
import { type BenchContext, databaseProbe, processSet, productFactory } from "./lib/context.js";
import { HttpClient } from "./lib/http.js";
import { freePort } from "./lib/ports.js";
import { type Provenance, readProvenance } from "./lib/provenance.js";
import { SmtpSink } from "./lib/smtp-sink.js";
import { authenticatedRead } from "./sections/authenticated-read.js";
import { bulkRegistration } from "./sections/bulk-registration.js";
import { erasure } from "./sections/erasure.js";
import { listLatency } from "./sections/list-latency.js";
import { type RssSample, reportMemory, sampleIdleMemory } from "./sections/memory.js";
import { payoutGeneration } from "./sections/payout-generation.js";
import { readsVsInsert } from "./sections/reads-vs-insert.js";
import { refunds } from "./sections/refunds.js";
import { soak } from "./sections/soak.js";
import { statsLatency } from "./sections/stats-latency.js";
import { stripeIngestion } from "./sections/stripe-ingestion.js";
import { trackingThroughput } from "./sections/tracking-throughput.js";
import { webhookDelivery } from "./sections/webhook-delivery.js";

const resultsFile = join(dirname(fileURLToPath(import.meta.url)), "..", "results", "latest.json");
// Limits high enough never to answer 429: the bench measures the work, not the limiter's refusals.
const unlimited = "100000000";

const config = loadConfig();
const results: Record<string, unknown> = {};
const startedAt = new Date();
let provenance: Provenance | undefined;

/**
 * With BENCH_CPU_PROF_DIR set, every service writes a V8 CPU profile of its whole life there
 * when it stops (`--cpu-prof`, `<dir>/CPU.<date>.<pid>.….cpuprofile`; the mesh's pids are
 * printed at start-up). Only the mesh's processes: the bench itself is not profiled.
 */
function cpuProfileEnv(): Record<string, string> {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  if (!dir) return {};
  const options = [process.env.NODE_OPTIONS, "--cpu-prof", `--cpu-prof-dir=${dir}`].filter(Boolean);
  return { NODE_OPTIONS: options.join(" ") };
}

/** Clean-up steps, run last-registered first, once, whether the run succeeds, fails or is interrupted. */
const teardownSteps: (() => Promise<void>)[] = [];
let tornDown: Promise<void> | undefined;
function teardown(): Promise<void> {
  tornDown ??= (async () => {
    for (const step of teardownSteps.reverse()) {
      try {
        await step();
      } catch (error) {
        console.error(`teardown step failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();
  return tornDown;
}
/** Aborts a mesh start-up in progress; startMesh then stops what it had started. */
const interrupted = new AbortController();
let meshStarting: Promise<unknown> | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the mesh and dropping the run's database…`);
    interrupted.abort();
    void (async () => {
      await meshStarting?.catch(() => {});
      await teardown();
      process.exit(130);
    })();
  });
}

/** Runs one section if selected; a failing section is reported and the others still run. */
async function section<T>(name: SectionName, run: () => Promise<T>): Promise<void> {
  if (!config.sections.has(name)) return;
  const started = performance.now();
  try {
    results[name] = { ...(await run()), seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`\n${name}. failed: ${message}`);
    results[name] = { failed: message };
  }
}

async function main(): Promise<void> {
  console.log(
    `bench: sections ${[...config.sections].join(",")}; partnerships ${config.partnerships}, events ${config.events}/${config.smallEvents}, ${config.connections} connections x ${config.durationS} s, ${config.samples} sequential samples, refund payments ${config.refundPayments}, payouts ${config.payoutPartnerships}/${config.payoutCommissions}, erasure ${config.erasureEvents}, webhook deliveries ${config.webhookDeliveries} and ${config.webhookRate} events/s, stripe ${config.stripeRate} events/s, soak ${config.soakMinutes} min at ${config.soakRate} requests/s`,
  );
  const database = await createTestDatabase();
  teardownSteps.push(() => database.drop());
  const probe = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    provenance = await readProvenance(probe);
  } finally {
    await probe.end({ timeout: 5 });
  }
  console.log(`bench: ${provenance.label}`);
  const namespace = createTestNamespace();
  teardownSteps.push(() => namespace.cleanup());

  // A free port for every internal service, so a mesh already running on the defaults is no obstacle.
  const servicePorts: Record<string, number> = {};
  for (const service of services.filter((s) => s.protocol === "rpc")) servicePorts[service.name] = await freePort();
  const metricsPorts: Record<string, number> = {};
  for (const service of services) metricsPorts[service.name] = await freePort();
  // The soak has the notifier mail a local SMTP server; it is the notifier's SMTP_URL for the whole run.
  let smtp: SmtpSink | undefined;
  if (config.sections.has("S")) {
    const sink = await new SmtpSink().start();
    teardownSteps.push(() => sink.close());
    smtp = sink;
  }
  let recentOutput = (): string[] => [];
  meshStarting = startMesh({
    databaseUrl: database.url,
    natsUrl: process.env.NATS_URL ?? defaultNatsUrl,
    host: "127.0.0.1",
    port: await freePort(),
    servicePorts,
    metricsPorts,
    output: "pipe",
    env: {
      EVENTS_NAMESPACE: namespace.namespace,
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: unlimited,
      TRACKING_RATE_LIMIT_PER_MINUTE: unlimited,
      ...(smtp ? { SMTP_URL: smtp.url } : {}),
      ...cpuProfileEnv(),
    },
    signal: interrupted.signal,
    // A service that dies mid-run is restarted, but the figures around it are not to be trusted.
    report: (line) => console.error(`\n${line}; last output:\n${recentOutput().slice(-20).join("\n")}`),
  });
  const mesh = (await meshStarting) as Mesh;
  recentOutput = mesh.recentOutput;
  teardownSteps.push(() => mesh.stop());
  console.log(`mesh up: gateway ${mesh.gatewayUrl}, pids ${JSON.stringify(mesh.pids)}`);

  const sql = postgres(database.url, { max: 4, onnotice: () => {} });
  teardownSteps.push(() => sql.end({ timeout: 5 }));
  const gateway = new HttpClient(mesh.gatewayUrl);
  teardownSteps.push(async () => gateway.close());

  const ctx: BenchContext = {
    config,
    mesh,
    sql,
    databaseUrl: database.url,
    gateway,
    createProduct: productFactory(mesh.urls.partners ?? ""),
    processes: processSet(mesh, sql),
    database: databaseProbe(sql),
    onTeardown: (step) => teardownSteps.push(step),
  };

  let idle: RssSample | undefined;
  if (config.sections.has("D")) idle = await sampleIdleMemory(ctx);
  // First, on a mesh no other section has filled: the soak measures how figures drift over time.
  await section("S", () => soak(ctx, smtp));
  await section("A", () => listLatency(ctx));
  await section("B", () => authenticatedRead(ctx));
  await section("C", () => bulkRegistration(ctx));
  await section("E", () => trackingThroughput(ctx));
  await section("F", () => statsLatency(ctx));
  await section("R", () => readsVsInsert(ctx));
  await section("G", () => refunds(ctx));
  await section("H", () => payoutGeneration(ctx));
  await section("I", () => erasure(ctx));
  await section("J", () => webhookDelivery(ctx));
  await section("K", () => stripeIngestion(ctx));
  if (idle) {
    const idleSample = idle;
    await section("D", () => reportMemory(ctx, idleSample));
  }
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  console.error(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  exitCode = 1;
} finally {
  await teardown();
}
await mkdir(dirname(resultsFile), { recursive: true });
await writeFile(
  resultsFile,
  `${JSON.stringify(
    {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      node: process.version,
      provenance,
      config: { ...config, sections: [...config.sections] },
      sections: results,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nfigures written to ${resultsFile}`);
// Again at the end, beside the last table: the figures above are this tree's and this server's.
if (provenance) console.log(`figures of: ${provenance.label}`);
// Idle HTTP/2 sessions of the admin client would keep the process alive for minutes.
process.exit(exitCode);
