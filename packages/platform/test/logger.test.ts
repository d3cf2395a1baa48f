import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.js";

/** A logger writing to memory: the lines exactly as they would reach stdout. */
function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger("redaction-test", "info", destination), lines };
}

describe("createLogger's redaction", () => {
  it("censors keys, webhook secrets and emails at the top level and one level down", () => {
    const { logger, lines } = capturedLogger();
    logger.info(
      {
        apiKey: "sk_live_top",
        webhookSecret: "whsec_top",
        email: "top@example.com",
        body: { webhook_secret: "whsec_body", api_key: "rk_live_body", secret_key: "sk_live_body" },
        input: { webhookSecret: "whsec_input", apiKey: "rk_live_input", email: "input@example.com" },
        productId: "prd_kept",
      },
      "connecting",
    );
    const line = lines.join("");
    expect(line).not.toMatch(/whsec_|sk_live_|rk_live_|@example\.com/);
    expect(JSON.parse(line)).toMatchObject({
      apiKey: "[redacted]",
      webhookSecret: "[redacted]",
      email: "[redacted]",
      body: { webhook_secret: "[redacted]", api_key: "[redacted]", secret_key: "[redacted]" },
      input: { webhookSecret: "[redacted]", apiKey: "[redacted]", email: "[redacted]" },
      productId: "prd_kept",
    });
  });
});
