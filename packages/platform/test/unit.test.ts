import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  baseConfigShape,
  loadConfig,
  pageTokenSecret,
  parseConfig,
  port,
  type RpcServiceConfig,
  rpcServiceConfigShape,
  secret,
  secretsOf,
  serviceUrls,
} from "../src/config.js";
import {
  DomainError,
  type DomainErrorKind,
  errorInfoOf,
  fieldErrorsOf,
  isOutcomeUnknown,
  toConnectError,
} from "../src/errors.js";
import { isId, newId } from "../src/ids.js";
import { PageTokens } from "../src/page-token.js";
import { sleep } from "./helpers.js";

/** Calls `decode` and returns what it threw. */
function rejectionOf(decode: () => unknown): unknown {
  try {
    decode();
  } catch (error) {
    return error;
  }
  throw new Error("expected the token to be refused");
}

function expectInvalidCursor(decode: () => unknown) {
  const error = rejectionOf(decode);
  expect(error).toBeInstanceOf(DomainError);
  expect(error).toMatchObject({
    kind: "invalid_argument",
    fieldErrors: { cursor: ["Invalid cursor: pass next_cursor from a previous page unchanged"] },
  });
}

describe("PageTokens", () => {
  const tokens = new PageTokens("test-secret");
  const scope = "prd_1|status=active";

  it("decodes what it encoded, in the same scope", () => {
    const after = "ptn_0192a1b2c3d4e5f60718293a4b5c6d7e";
    expect(tokens.decode(scope, tokens.encode(scope, after))).toBe(after);
    expect(tokens.decode("", tokens.encode("", "a.b|c\n✓"))).toBe("a.b|c\n✓");
  });

  it("refuses a token of another scope or signed with another secret", () => {
    const token = tokens.encode(scope, "ptn_1");
    expectInvalidCursor(() => tokens.decode("prd_2|status=active", token));
    expectInvalidCursor(() => tokens.decode("prd_1|status=removed", token));
    expectInvalidCursor(() => new PageTokens("other-secret").decode(scope, token));
  });

  it("refuses a tampered payload", () => {
    const [, signature] = tokens.encode(scope, "ptn_1").split(".");
    const forged = Buffer.from(JSON.stringify({ v: 1, a: "ptn_2" })).toString("base64url");
    expectInvalidCursor(() => tokens.decode(scope, `${forged}.${signature}`));
  });

  it("refuses a tampered signature", () => {
    const token = tokens.encode(scope, "ptn_1");
    const last = token.at(-1) === "A" ? "B" : "A";
    expectInvalidCursor(() => tokens.decode(scope, `${token.slice(0, -1)}${last}`));
    expectInvalidCursor(() => tokens.decode(scope, token.slice(0, -1)));
    expectInvalidCursor(() => tokens.decode(scope, `${token}A`));
  });

  it("refuses a token with an extra part", () => {
    const token = tokens.encode(scope, "ptn_1");
    expectInvalidCursor(() => tokens.decode(scope, `${token}.x`));
    expectInvalidCursor(() => tokens.decode(scope, `${token}.`));
  });

  it.each(["", "garbage", ".", "..", "abc.", ".abc", "a.b", "💥.💥"])("refuses garbage %j", (garbage) => {
    expectInvalidCursor(() => tokens.decode(scope, garbage));
  });

  it("refuses a correctly signed payload it did not produce", () => {
    // Signed the way PageTokens signs (HMAC-SHA256 over scope and payload), so only the payload
    // checks stand between such a token and a page.
    const sign = (payload: string) =>
      createHmac("sha256", "test-secret").update(`${scope}\n${payload}`).digest("base64url").slice(0, 32);
    for (const payload of [
      Buffer.from(JSON.stringify({ v: 2, a: "ptn_1" })).toString("base64url"),
      Buffer.from(JSON.stringify({ v: 1, a: 7 })).toString("base64url"),
      Buffer.from("not json").toString("base64url"),
    ]) {
      expectInvalidCursor(() => tokens.decode(scope, `${payload}.${sign(payload)}`));
    }
  });
});

describe("DomainError to ConnectError and back", () => {
  it("keeps the message, field errors and form errors", () => {
    const error = new DomainError(
      "invalid_argument",
      "Validation failed",
      { email: ["Invalid email", "Too long"], name: ["Required"] },
      ["Either a or b"],
    );
    const connectError = toConnectError(error);
    expect(connectError).toBeInstanceOf(ConnectError);
    expect(connectError.code).toBe(Code.InvalidArgument);
    expect(connectError.rawMessage).toBe("Validation failed");
    expect(fieldErrorsOf(connectError)).toEqual({
      fieldErrors: { email: ["Invalid email", "Too long"], name: ["Required"] },
      formErrors: ["Either a or b"],
    });
  });

  it("carries form errors alone", () => {
    const connectError = toConnectError(new DomainError("failed_precondition", "Nope", {}, ["Program is closed"]));
    expect(fieldErrorsOf(connectError)).toEqual({ fieldErrors: {}, formErrors: ["Program is closed"] });
  });

  it("has no field errors when the domain error has none", () => {
    expect(fieldErrorsOf(toConnectError(new DomainError("not_found", "Partnership ptn_1 not found")))).toBeUndefined();
    expect(fieldErrorsOf(new ConnectError("plain", Code.Internal))).toBeUndefined();
  });

  it("names the field in invalidField", () => {
    const error = DomainError.invalidField("cursor", "Bad cursor");
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: "DomainError",
      kind: "invalid_argument",
      message: "Bad cursor",
      fieldErrors: { cursor: ["Bad cursor"] },
      formErrors: [],
    });
    expect(fieldErrorsOf(toConnectError(error))).toEqual({ fieldErrors: { cursor: ["Bad cursor"] }, formErrors: [] });
  });

  it("carries a reason and public details as ErrorInfo, and nothing when there are none", () => {
    const error = DomainError.withInfo("already_exists", "Commission com_1 is already fully refunded", {
      reason: "already_refunded",
      details: { commission_id: "com_1", payment_amount_cents: 1000 },
    });
    const connectError = toConnectError(error);
    expect(errorInfoOf(connectError)).toEqual({
      reason: "already_refunded",
      details: { commission_id: "com_1", payment_amount_cents: 1000 },
    });
    expect(fieldErrorsOf(connectError)).toBeUndefined();
    expect(errorInfoOf(toConnectError(new DomainError("not_found", "missing")))).toBeUndefined();
  });

  it("marks an unknown outcome so every hop and the gateway can tell it from other failures", () => {
    const unknown = toConnectError(DomainError.outcomeUnknown("the commit may have landed"));
    expect(unknown.code).toBe(Code.Unknown);
    expect(isOutcomeUnknown(unknown)).toBe(true);
    expect(isOutcomeUnknown(toConnectError(DomainError.deadlineExceeded()))).toBe(false);
    expect(isOutcomeUnknown(new ConnectError("unknown", Code.Unknown))).toBe(false);
  });

  // Typed as a full record: a new kind fails to compile until it is listed here.
  const expectedCodes: Record<DomainErrorKind, Code> = {
    invalid_argument: Code.InvalidArgument,
    not_found: Code.NotFound,
    already_exists: Code.AlreadyExists,
    failed_precondition: Code.FailedPrecondition,
    out_of_range: Code.OutOfRange,
    unauthenticated: Code.Unauthenticated,
    permission_denied: Code.PermissionDenied,
    aborted: Code.Aborted,
    unavailable: Code.Unavailable,
    deadline_exceeded: Code.DeadlineExceeded,
    outcome_unknown: Code.Unknown,
  };
  it.each(Object.entries(expectedCodes) as [DomainErrorKind, Code][])("maps %s to code %i", (kind, code) => {
    const connectError = toConnectError(new DomainError(kind, `a ${kind} error`));
    expect(connectError.code).toBe(code);
    expect(connectError.rawMessage).toBe(`a ${kind} error`);
  });
});

describe("ids", () => {
  it("are the prefix and 32 lowercase hex digits of a UUIDv7", () => {
    const id = newId("com");
    expect(id).toMatch(/^com_[0-9a-f]{32}$/);
    expect(id[4 + 12]).toBe("7");
    expect(isId("com", id)).toBe(true);
  });

  it("isId refuses other prefixes and malformed values", () => {
    const id = newId("prd");
    const hex = id.slice(4);
    expect(isId("com", id)).toBe(false);
    expect(isId("prd", `prd_${hex.toUpperCase()}`)).toBe(false);
    expect(isId("prd", `prd_${hex.slice(1)}`)).toBe(false);
    expect(isId("prd", `${id}0`)).toBe(false);
    expect(isId("prd", `${id}\n`)).toBe(false);
    expect(isId("prd", `x${id}`)).toBe(false);
    expect(isId("prd", hex)).toBe(false);
  });

  it("are unique", () => {
    const ids = Array.from({ length: 2000 }, () => newId("evt"));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("made at least 2 ms apart sort by creation as strings", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(newId("evt"));
      await sleep(2);
    }
    expect([...ids].sort()).toEqual(ids);
  });

  it("made by one process always increase, within a millisecond too, and carry their time and RFC 9562 variant", () => {
    const before = Date.now();
    // Enough to draw the random pool several times over and to make many in one millisecond.
    const ids = Array.from({ length: 5000 }, () => newId("evt").slice(4));
    const after = Date.now();
    for (let i = 1; i < ids.length; i++) expect((ids[i] ?? "") > (ids[i - 1] ?? ""), String(i)).toBe(true);
    for (const hex of [ids[0] ?? "", ids.at(-1) ?? ""]) {
      const ms = Number.parseInt(hex.slice(0, 12), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after + 1);
      expect(hex[12]).toBe("7");
      expect(["8", "9", "a", "b"]).toContain(hex[16]);
    }
  });
});

describe("loadConfig", () => {
  const shape = { ...baseConfigShape, PORT: port(8080) };

  it("returns a typed, frozen object of the parsed values", () => {
    const config = loadConfig(shape, {
      DATABASE_URL: "postgres://svc@db.internal:5432/affiliate",
      NATS_URL: "nats://nats.internal:4222",
      EVENTS_NAMESPACE: "t_abc",
      LOG_LEVEL: "warn",
      PORT: "9090",
      UNRELATED: "ignored",
    });
    expect(config).toEqual({
      DATABASE_URL: "postgres://svc@db.internal:5432/affiliate",
      NATS_URL: "nats://nats.internal:4222",
      EVENTS_NAMESPACE: "t_abc",
      EVENTS_REPLICAS: 1,
      LOG_LEVEL: "warn",
      PORT: 9090,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(() => {
      (config as { PORT: number }).PORT = 1;
    }).toThrow(TypeError);
    expectTypeOf(config.PORT).toEqualTypeOf<number>();
    expectTypeOf(config.LOG_LEVEL).toEqualTypeOf<"fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent">();
  });

  it("takes clusters: several NATS servers, several Postgres hosts that keep only the primary, stream replicas", () => {
    const cluster = {
      DATABASE_URL: "postgres://svc:pw@pg-1.internal:5432,pg-2.internal:5433/affiliate?target_session_attrs=primary",
      NATS_URL: "nats://nats-0:4222, nats://nats-1:4222,nats://nats-2:4222",
      EVENTS_REPLICAS: "3",
    };
    expect(parseConfig(shape, cluster)).toMatchObject({ success: true, data: { ...cluster, EVENTS_REPLICAS: 3 } });
    const readWrite = "postgres://svc@[::1]:5432,10.0.0.7/affiliate?target_session_attrs=read-write";
    expect(parseConfig(shape, { DATABASE_URL: readWrite })).toMatchObject({ success: true });

    const problems = (env: Record<string, string>) => {
      const parsed = parseConfig(shape, env);
      return parsed.success ? "" : parsed.problems;
    };
    expect(problems({ DATABASE_URL: "postgres://svc@pg-1:5432,pg-2:5432/affiliate" })).toMatch(
      /^DATABASE_URL: .*target_session_attrs=primary/,
    );
    expect(problems({ DATABASE_URL: "postgres://svc@pg-1/affiliate?target_session_attrs=any" })).toMatch(
      /^DATABASE_URL: target_session_attrs must be one of/,
    );
    expect(problems({ DATABASE_URL: "postgres://svc@pg-1:5432,/affiliate?target_session_attrs=primary" })).toMatch(
      /^DATABASE_URL: must be a postgres:\/\/ URL/,
    );
    expect(problems({ NATS_URL: "nats://a:4222,nats://b:x" })).toMatch(/^NATS_URL: /);
    for (const bad of ["0", "6", "two"]) expect(problems({ EVENTS_REPLICAS: bad })).toMatch(/^EVENTS_REPLICAS: /);
  });

  it("refuses an empty, non-numeric or out-of-range port instead of picking a random one", () => {
    for (const bad of ["", "abc", "70000", "-1", "80.5"]) expect(port(8080).safeParse(bad).success).toBe(false);
    expect(port(8080).parse("0")).toBe(0);
  });

  it("takes a service's address as one URL or several, comma-separated, and refuses anything else", () => {
    for (const good of ["http://ledger:7102", "http://10.0.0.5:7102,http://10.0.0.6:7102", "https://a:1, http://b:2"]) {
      expect(serviceUrls.safeParse(good).success, good).toBe(true);
    }
    for (const bad of ["", "ledger:7102", "http://a:1,", "ftp://a:1", "http://a:1,not a url"]) {
      expect(serviceUrls.safeParse(bad).success, bad).toBe(false);
    }
  });

  it("fills in the defaults", () => {
    expect(loadConfig(shape, {})).toEqual({
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
      NATS_URL: "nats://127.0.0.1:4222",
      EVENTS_NAMESPACE: "",
      EVENTS_REPLICAS: 1,
      LOG_LEVEL: "info",
      PORT: 8080,
    });
  });

  it("gives every RPC service the same listening, metrics and pool settings, with its own default ports", () => {
    const ledgerShape = rpcServiceConfigShape({ rpcPort: 7102, metricsPort: 9102 });
    expect(loadConfig(ledgerShape, {})).toMatchObject({
      RPC_PORT: 7102,
      RPC_HOST: "127.0.0.1",
      METRICS_PORT: 9102,
      DATABASE_POOL_SIZE: 10,
      LOG_LEVEL: "info",
    });
    const moved = loadConfig(ledgerShape, {
      RPC_PORT: "7202",
      RPC_HOST: "0.0.0.0",
      METRICS_PORT: "9202",
      DATABASE_POOL_SIZE: "3",
    });
    expect(moved).toMatchObject({ RPC_PORT: 7202, RPC_HOST: "0.0.0.0", METRICS_PORT: 9202, DATABASE_POOL_SIZE: 3 });
    expectTypeOf(moved).toExtend<RpcServiceConfig>();
    for (const bad of ["0", "101", "ten"]) {
      expect(ledgerShape.DATABASE_POOL_SIZE.safeParse(bad).success, bad).toBe(false);
    }
  });

  it("refuses a page token secret shorter than 32 characters", () => {
    expect(pageTokenSecret.safeParse("short").success).toBe(false);
    expect(pageTokenSecret.parse(undefined)).toBe("local-development-page-token-secret");
  });

  it("stops the process with one line naming a bad variable", async () => {
    // process.exit cannot run inside the test worker: a child process loads the built package.
    const script = `import("@affiliate/platform").then(({ loadConfig, baseConfigShape }) => {
      loadConfig(baseConfigShape);
      console.log("configuration accepted");
    });`;
    const { NODE_OPTIONS: _, ...env } = process.env;
    const child = spawn(process.execPath, ["-e", script], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...env, DATABASE_URL: "not a url" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    const lines = stderr.split("\n").filter((line) => line !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^configuration error: DATABASE_URL/);
    expect(stderr.endsWith("\n")).toBe(true);
  });
});

describe("secrets", () => {
  const developmentValue = "local-development-signing-key-for-tests";
  const shape = { ...baseConfigShape, SIGNING_KEY: secret(developmentValue), PAGE_TOKEN_SECRET: pageTokenSecret };
  const strong = "d8Qm3kR0v7Zc1xYpL4sT9bWnE2hG6jUa"; // 32 characters
  const production = { NODE_ENV: "production", PAGE_TOKEN_SECRET: "p".repeat(40) };

  it("are named by the shape they are declared in, and nothing else is", () => {
    expect(secretsOf(shape)).toEqual(["SIGNING_KEY", "PAGE_TOKEN_SECRET"]);
    expect(secretsOf(baseConfigShape)).toEqual([]);
  });

  it("default to their development value outside production, so npm start and the tests need none", () => {
    for (const NODE_ENV of [undefined, "development", "test"]) {
      expect(parseConfig(shape, { NODE_ENV })).toMatchObject({
        success: true,
        data: { SIGNING_KEY: developmentValue, PAGE_TOKEN_SECRET: "local-development-page-token-secret" },
      });
    }
  });

  it("are refused shorter than 32 characters in any environment", () => {
    expect(parseConfig(shape, { SIGNING_KEY: strong.slice(1) })).toEqual({
      success: false,
      problems: expect.stringMatching(/^SIGNING_KEY: /),
    });
  });

  it("must be set in production: a missing one is named", () => {
    expect(parseConfig(shape, { ...production })).toEqual({
      success: false,
      problems: "SIGNING_KEY: must be set when NODE_ENV=production (32+ random characters)",
    });
  });

  it("must be 32 characters or more in production", () => {
    expect(parseConfig(shape, { ...production, SIGNING_KEY: strong.slice(1) })).toEqual({
      success: false,
      problems: "SIGNING_KEY: must be at least 32 characters when NODE_ENV=production",
    });
  });

  it("must not be the public development value in production", () => {
    expect(parseConfig(shape, { ...production, SIGNING_KEY: developmentValue })).toEqual({
      success: false,
      problems: "SIGNING_KEY: is the public development value: set one of your own when NODE_ENV=production",
    });
  });

  it("name every bad secret in one line, and accept strong ones", () => {
    expect(parseConfig(shape, { NODE_ENV: "production" })).toEqual({
      success: false,
      problems:
        "SIGNING_KEY: must be set when NODE_ENV=production (32+ random characters); " +
        "PAGE_TOKEN_SECRET: must be set when NODE_ENV=production (32+ random characters)",
    });
    const parsed = parseConfig(shape, { ...production, SIGNING_KEY: strong });
    expect(parsed).toMatchObject({ success: true, data: { SIGNING_KEY: strong, PAGE_TOKEN_SECRET: "p".repeat(40) } });
  });

  it("leave the other settings' rules and defaults as they are in production", () => {
    const parsed = parseConfig(shape, { ...production, SIGNING_KEY: strong, LOG_LEVEL: "warn" });
    expect(parsed).toMatchObject({ success: true, data: { LOG_LEVEL: "warn", NATS_URL: "nats://127.0.0.1:4222" } });
    expect(parseConfig(shape, { ...production, SIGNING_KEY: strong, DATABASE_URL: "not a url" })).toMatchObject({
      success: false,
      problems: expect.stringMatching(/^DATABASE_URL: /),
    });
  });

  it("cannot be declared with a development value that would itself be too short", () => {
    expect(() => secret("short-development-value")).toThrow(/32\+ characters/);
  });
});
