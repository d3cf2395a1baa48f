import { z } from "zod";

/** Settings every service reads. Service-specific settings extend this shape. */
export const baseConfigShape = {
  DATABASE_URL: z.string().url().default("postgres://postgres@127.0.0.1:5432/postgres"),
  NATS_URL: z.string().default("nats://127.0.0.1:4222"),
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

/** Signs page tokens (PageTokens); must be equal on every replica. */
export const pageTokenSecret = z.string().min(16).default("local-development-page-token-secret");

/**
 * Parses `env` once into a typed, frozen object. A missing or bad value stops the process with
 * one line naming the variable, never a stack trace.
 */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): Readonly<z.infer<z.ZodObject<S>>> {
  const parsed = z.object(shape).safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    process.stderr.write(`configuration error: ${problems}\n`);
    process.exit(1);
  }
  return Object.freeze(parsed.data);
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
