// Renders the manifest of every RPC service (deploy/k8s/base/<name>.yaml) from the one list of
// services, deploy/services.json: the six differ only in their names, ports, image, what they
// say about themselves (each entry's `manifest` prose) and who may call them, which is computed
// from the other services' `calls`. The output is committed, so a reader and kustomize see plain
// YAML; `--check` (run by `npm run lint`) fails when a committed file differs from what the list
// renders, naming the command that brings it back.
//
//   node deploy/render-manifests.mjs           write the manifests
//   node deploy/render-manifests.mjs --check   exit 1 if one is stale
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { callersOf, loadServiceList } from "./lib/service-list.mjs";

const root = dirname(fileURLToPath(import.meta.url));
const list = loadServiceList();

/** Comment lines of at most 100 characters, each starting with `indent` and "# ". */
function comment(text, indent = "") {
  const width = 100 - indent.length - 2;
  const lines = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines.map((l) => `${indent}# ${l}`).join("\n");
}

/** "a", "a and b", "a, b and c". */
const listed = (items) => (items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`);

function manifest(service) {
  const { name, port, metricsPort, image, schema, manifest: prose } = service;
  const callers = callersOf(list, name);
  const admitted = callers.map((caller) =>
    caller === list.operatorCli.podLabel ? `${caller} (the operator CLI)` : caller,
  );
  return `${comment(`${name}: ${prose.about}`)}
${comment(`Owns the Postgres schema \`${schema}\`; serves Connect/gRPC over HTTP/2 cleartext (h2c) on ${port}. ${prose.works}`)}
# Rendered by deploy/render-manifests.mjs from deploy/services.json: edit those, not this file.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
# The service never calls the Kubernetes API.
automountServiceAccountToken: false
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
    app.kubernetes.io/component: rpc
spec:
  replicas: 2
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # A new pod must migrate and become ready before an old one is stopped.
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      # Prometheus' kubernetes_sd pod role finds the pod's metrics through these (see
      # deploy/README.md, "Metrics"); the metrics port is not the public or RPC port.
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "${metricsPort}"
        prometheus.io/path: /metrics
      labels:
        app.kubernetes.io/name: ${name}
        app.kubernetes.io/component: rpc
    spec:
      serviceAccountName: ${name}
      automountServiceAccountToken: false
${comment(`Shutdown on SIGTERM: 5 s preStop pause, then at most 20 s (the service's own deadline) to stop accepting, finish in-flight calls, ${prose.drain}`, "      ")}
      terminationGracePeriodSeconds: 30
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        seccompProfile:
          type: RuntimeDefault
      # Replicas spread over zones, then over nodes, so a zone or node failure takes at most
      # one share of them. ScheduleAnyway: a small cluster still schedules every replica (the
      # production overlay makes the node spread a hard rule). matchLabelKeys counts only the
      # pods of the same rollout, so a rolling update does not skew the spread.
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              app.kubernetes.io/name: ${name}
          matchLabelKeys: ["pod-template-hash"]
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              app.kubernetes.io/name: ${name}
          matchLabelKeys: ["pod-template-hash"]
      # Migrations run before the new version serves: every new pod applies them in this init
      # container, with the same image, before its server container starts (and so before it
      # can be ready and receive traffic). \`node dist/migrate.js\` is idempotent (applied files
      # are recorded with their checksum and skipped) and takes a Postgres advisory lock per
      # schema inside one transaction, so pods starting together simply queue and the later
      # ones find nothing to do. A failing migration rolls back entirely, the pod stays in
      # Init, and the rolling update stops with the old replicas still serving. Old pods keep
      # running against the migrated schema meanwhile, so migrations must stay compatible with
      # the previous release (expand first, contract in a later release).
      initContainers:
        - name: migrate
          image: ${image}
          command: ["node", "dist/migrate.js"]
          envFrom:
            - configMapRef:
                name: affiliate-config
            - secretRef:
                name: affiliate-secrets
          resources:
            requests:
              cpu: 50m
              memory: 64Mi
            limits:
              cpu: 500m
              memory: 256Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
      containers:
        - name: ${name}
          image: ${image}
          # The image's entrypoint: node --import @affiliate/platform/instrumentation dist/main.js
          ports:
            - name: grpc
              containerPort: ${port}
              protocol: TCP
            - name: metrics
              containerPort: ${metricsPort}
              protocol: TCP
          env:
            - name: RPC_HOST
              value: "0.0.0.0"
            - name: RPC_PORT
              value: "${port}"
            - name: METRICS_PORT
              value: "${metricsPort}"
            - name: OTEL_SERVICE_NAME
              value: ${name}
            - name: K8S_POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: K8S_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            - name: OTEL_RESOURCE_ATTRIBUTES
              value: k8s.pod.name=$(K8S_POD_NAME),k8s.namespace.name=$(K8S_NAMESPACE)
${prose.tuning ? `${comment(`Optional tuning, defaults shown (see ${service.directory}/src/config.ts): ${prose.tuning}`, "            ")}\n` : ""}          envFrom:
            - configMapRef:
                name: affiliate-config
            - secretRef:
                name: affiliate-secrets
          # The kubelet's gRPC probes call grpc.health.v1.Health/Check (service "") over h2c:
          # the RPC port answers only HTTP/2, so an httpGet probe (HTTP/1.1) cannot reach it.
          # SERVING means the database and NATS answer and the server is not shutting down.
          readinessProbe:
            grpc:
              port: ${port}
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          # The health service reports one status for every service name, so liveness sees the
          # same dependency checks as readiness. A generous threshold (60 s) keeps a short
          # database or NATS outage from restarting every replica at once.
          livenessProbe:
            grpc:
              port: ${port}
            initialDelaySeconds: 10
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 6
          lifecycle:
            # Lets endpoint removal reach kube-proxy and callers before the server sends GOAWAY.
            preStop:
              exec:
                command: ["sleep", "5"]
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
            limits:
              cpu: 500m
              memory: 256Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
---
apiVersion: v1
kind: Service
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
spec:
  # Headless: DNS answers with every ready pod's address, and callers balance each call over
  # them (the platform's RPC client, see deploy/README.md "Load balancing of RPC traffic"). A
  # ClusterIP would balance connections, and one HTTP/2 connection carries all of a caller's
  # calls. Changing an existing Service to headless needs a delete and re-create (clusterIP is
  # immutable).
  clusterIP: None
  selector:
    app.kubernetes.io/name: ${name}
  ports:
    - name: grpc
      port: ${port}
      targetPort: grpc
      protocol: TCP
      # HTTP/2 without TLS (Connect and gRPC), for proxies and meshes that read appProtocol.
      appProtocol: kubernetes.io/h2c
---
${comment(`Only the services that call ${name} (their \`calls\` in deploy/services.json) may open its RPC port, all in this namespace: ${listed(admitted)}.${prose.policy ? ` ${prose.policy}` : ""} Kubelet probes come from the node, which common CNIs (Calico, Cilium) admit regardless.`)}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  policyTypes: ["Ingress"]
  ingress:
    - from:
        - podSelector:
            matchExpressions:
              - key: app.kubernetes.io/name
                operator: In
                values: [${callers.map((caller) => `"${caller}"`).join(", ")}]
      ports:
        - protocol: TCP
          port: ${port}
    # Prometheus scrapes the metrics port from the namespace labelled for monitoring (adjust
    # to where your Prometheus runs); nothing else reaches it.
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: monitoring
      ports:
        - protocol: TCP
          port: ${metricsPort}
---
# At most one replica is evicted at a time by voluntary disruptions (node drains, cluster
# upgrades); with maxUnavailable rather than minAvailable, a single-replica development
# deployment can still be drained.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
`;
}

const check = process.argv.includes("--check");
const stale = [];
for (const service of list.services.filter((s) => s.protocol === "rpc")) {
  const path = join(root, "k8s", "base", `${service.name}.yaml`);
  const rendered = manifest(service);
  let committed = "";
  try {
    committed = readFileSync(path, "utf8");
  } catch {
    // a new service: not written yet
  }
  if (committed === rendered) continue;
  if (check) stale.push(relative(join(root, ".."), path));
  else writeFileSync(path, rendered);
}
if (stale.length > 0) {
  console.error(
    `deploy: ${stale.join(", ")} differ from what deploy/services.json renders; run node deploy/render-manifests.mjs and commit the result`,
  );
  process.exit(1);
}
console.log(check ? "deploy: rendered manifests up to date" : "deploy: manifests rendered");
