import { z } from "zod";

/** The values of `target_session_attrs` the pool (postgres.js) understands. */
const sessionAttributes = ["read-write", "primary", "read-only", "standby", "prefer-standby"];

/**
 * A Postgres URL naming one server or several, comma-separated in the host part as libpq takes
 * them. With several, `target_session_attrs=primary` (or `read-write`) makes every connection
 * keep only the server that accepts writes: after a failover the pool finds the promoted standby
 * by itself. Without it, a connection could stay on a standby and every write would fail.
 */
function databaseUrl() {
  return z.string().superRefine((value, context) => {
    const match = /^(postgres(?:ql)?:\/\/(?:[^@/?#]*@)?)([^/?#]+)(.*)$/.exec(value);
    const hosts = match?.[2]?.split(",") ?? [];
    const first = match ? `${match[1]}${hosts[0]}${match[3]}` : "";
    if (!match || !URL.canParse(first) || hosts.some((host) => !/^(\[[^\]]+\]|[^:[\]]+)(:\d{1,5})?$/.test(host))) {
      context.addIssue({
        code: "custom",
        message: "must be a postgres:// URL, with one host or several separated by commas (host1:5432,host2:5432)",
      });
      return;
    }
    const attributes = new URL(first).searchParams.get("target_session_attrs");
    if (attributes !== null && !sessionAttributes.includes(attributes)) {
      context.addIssue({
        code: "custom",
        message: `target_session_attrs must be one of ${sessionAttributes.join(", ")}`,
      });
    } else if (hosts.length > 1 && attributes !== "primary" && attributes !== "read-write") {
      context.addIssue({
        code: "custom",
        message: "names several hosts: add ?target_session_attrs=primary so that only the primary is used",
      });
    }
  });
}

/** One NATS URL, or several of one cluster separated by commas. */
function natsUrls() {
  return z.string().refine(
    (value) =>
      value.split(",").every((entry) => {
        const server = entry.trim();
        return URL.canParse(server.includes("://") ? server : `nats://${server}`);
      }),
    { message: "must be a NATS URL (nats://host:4222), or several separated by commas" },
  );
}

/** Settings every service reads. Service-specific settings extend this shape. */
export const baseConfigShape = {
  /**
   * One Postgres server, or several (`postgres://u@pg-1:5432,pg-2:5432/db?target_session_attrs=primary`):
   * see databaseUrl.
   */
  DATABASE_URL: databaseUrl().default("postgres://postgres@127.0.0.1:5432/postgres"),
  /** One NATS server, or several of one cluster separated by commas (nats.js fails over between them). */
  NATS_URL: natsUrls().default("nats://127.0.0.1:4222"),
  /**
   * Replicas of every JetStream stream the service creates: 1 on a single server, 3 on a
   * clustered NATS so that a lost node loses no event. A stream that exists with fewer is kept as
   * it is and the service warns at start (raising it is an operator's `nats stream edit`).
   */
  EVENTS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * Prefix for JetStream stream names and subjects. Empty in production; tests and benches set
   * a unique one so that runs sharing one NATS server never see each other's events.
   */
  EVENTS_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9_]*$/, "lowercase letters, digits and underscores only")
    .default(""),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
};

/**
 * What every RPC service reads (beyond baseConfigShape): where it listens, where its metrics are
 * served and its pool size. Each service gives its own default ports (71xx and 91xx locally).
 */
export function rpcServiceConfigShape(defaults: { rpcPort: number; metricsPort: number }) {
  return {
    ...baseConfigShape,
    RPC_PORT: port(defaults.rpcPort),
    RPC_HOST: z.string().default("127.0.0.1"),
    /** Prometheus metrics (GET /metrics), on RPC_HOST; never the RPC port. */
    METRICS_PORT: port(defaults.metricsPort),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  };
}

/** The settings startServiceProcess reads, as rpcServiceConfigShape parses them. */
export type RpcServiceConfig = Readonly<z.infer<z.ZodObject<ReturnType<typeof rpcServiceConfigShape>>>>;

/** How long a secret must be: 32 characters, e.g. `openssl rand -base64 32` gives 44. */
export const secretMinLength = 32;

/** The development value of each secret schema made by `secret`, which loadConfig refuses in production. */
const developmentValues = new WeakMap<z.ZodType, string>();

/**
 * A secret setting (an HMAC or encryption key). Outside production it defaults to a public
 * development value, so `npm start` and the tests need nothing; with `NODE_ENV=production`
 * (the images set it) loadConfig refuses it missing, shorter than 32 characters or equal to that
 * development value, and the process stops at start with one line naming the variable: a Secret
 * missing a key never runs production on a known key. A new secret is this one declaration in
 * its service's config shape, plus its key in deploy/services.json.
 */
export function secret(developmentValue: string) {
  if (developmentValue.length < secretMinLength) {
    throw new Error(`a secret's development value must itself be ${secretMinLength}+ characters`);
  }
  const schema = z.string().min(secretMinLength).default(developmentValue);
  developmentValues.set(schema, developmentValue);
  return schema;
}

/** The rule a secret follows in production: set, long enough, and not its development value. */
function productionSecret(developmentValue: string) {
  return z
    .string({ error: `must be set when NODE_ENV=production (${secretMinLength}+ random characters)` })
    .min(secretMinLength, `must be at least ${secretMinLength} characters when NODE_ENV=production`)
    .refine((value) => value !== developmentValue, {
      message: "is the public development value: set one of your own when NODE_ENV=production",
    });
}

/** The names of the secrets (made by `secret`) in a config shape. */
export function secretsOf(shape: z.ZodRawShape): string[] {
  return Object.keys(shape).filter((key) => developmentValues.has(shape[key] as z.ZodType));
}

/** `shape` with each secret replaced by its production rule. */
function forProduction<S extends z.ZodRawShape>(shape: S): z.ZodRawShape {
  return Object.fromEntries(
    Object.entries(shape).map(([key, schema]) => {
      const developmentValue = developmentValues.get(schema as z.ZodType);
      return [key, developmentValue === undefined ? schema : productionSecret(developmentValue)];
    }),
  );
}

/** Signs page tokens (PageTokens); must be equal on every replica. */
export const pageTokenSecret = secret("local-development-page-token-secret");

/**
 * Parses `env` once into a typed, frozen object. A missing or bad value stops the process with
 * one line naming the variable, never a stack trace. With `NODE_ENV=production`, secrets follow
 * their production rule (see `secret`).
 */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.infer<z.ZodObject<S>>> {
  const parsed = parseConfig(shape, env);
  if (!parsed.success) {
    process.stderr.write(`configuration error: ${parsed.problems}\n`);
    process.exit(1);
  }
  return Object.freeze(parsed.data);
}

/** What loadConfig does short of exiting: the parsed settings, or the one line naming every problem. */
export function parseConfig<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv,
): { success: true; data: z.infer<z.ZodObject<S>> } | { success: false; problems: string } {
  const rules = env.NODE_ENV === "production" ? forProduction(shape) : shape;
  // forProduction keeps every key and each value's type (a secret is a string either way).
  const parsed = (z.object(rules) as unknown as z.ZodObject<S>).safeParse(env);
  if (parsed.success) return { success: true, data: parsed.data };
  return {
    success: false,
    problems: parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; "),
  };
}

/** A TCP port from the environment. */
export const port = (fallback: number) =>
  z
    .string()
    .regex(/^\d{1,5}$/, "must be a port number")
    .transform(Number)
    .pipe(z.number().max(65535))
    .default(fallback);

/**
 * Where an internal service is reached (`<NAME>_URL`): one URL whose name resolves to every
 * replica (a headless Service), or several URLs separated by commas (replicas at fixed
 * addresses). createRpcTransport balances calls over all of them.
 */
export const serviceUrls = z.string().refine(
  (value) => {
    const entries = value.split(",").map((entry) => entry.trim());
    return entries.every((entry) => /^https?:\/\//.test(entry) && URL.canParse(entry));
  },
  { message: "must be an http(s) URL, or several separated by commas" },
);
