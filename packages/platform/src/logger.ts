import { trace } from "@opentelemetry/api";
import { type DestinationStream, type Logger, type LoggerOptions, pino } from "pino";

export type { Logger };

/**
 * JSON logs on stdout, one line per event, with the active trace and span ids so a log line
 * leads to its trace. Secrets are redacted by path as a second line of defence: the first is
 * never putting keys, emails, names or IPs into log fields at all. `destination` (default stdout)
 * lets a test read the lines exactly as they would be written.
 */
export function createLogger(
  service: string,
  level = process.env.LOG_LEVEL ?? "info",
  destination?: DestinationStream,
): Logger {
  const options: LoggerOptions = {
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin() {
      const span = trace.getActiveSpan()?.spanContext();
      return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
    },
    redact: {
      // Each secret field by the names it has on the wire and in code, at the top level and one
      // level down (a logged request body or input object).
      paths: [
        "apiKey",
        "api_key",
        "secret_key",
        "test_secret_key",
        "webhookSecret",
        "webhook_secret",
        "*.apiKey",
        "*.api_key",
        "*.secret_key",
        "*.test_secret_key",
        "*.webhookSecret",
        "*.webhook_secret",
        "email",
        "*.email",
        'headers["x-api-key"]',
        'req.headers["x-api-key"]',
        "req.headers.authorization",
      ],
      censor: "[redacted]",
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
