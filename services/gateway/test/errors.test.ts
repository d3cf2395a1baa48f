import { DomainError, toConnectError } from "@affiliate/platform";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { httpErrorOfConnect } from "../src/errors.js";

describe("Connect errors as HTTP answers", () => {
  it("puts an ErrorInfo's details beside the service's message", () => {
    const error = toConnectError(
      DomainError.withInfo("failed_precondition", "Payout is locked", {
        reason: "payout_locked",
        details: { payout_id: "po_1", attempts: 2 },
      }),
    );
    const answer = httpErrorOfConnect(error);
    expect(answer?.statusCode).toBe(400);
    expect(answer?.body).toEqual({ error: "Payout is locked", details: { payout_id: "po_1", attempts: 2 } });
  });

  it("leaves details out when the ErrorInfo has none", () => {
    const error = toConnectError(
      DomainError.withInfo("already_exists", "This idempotency key was already used with a different request body", {
        reason: "idempotency_key_reused",
      }),
    );
    const answer = httpErrorOfConnect(error);
    expect(answer?.statusCode).toBe(409);
    expect(answer?.body).toEqual({ error: "This idempotency key was already used with a different request body" });
    expect(Object.keys(answer?.body ?? {})).toEqual(["error"]);
  });

  it("answers OUT_OF_RANGE as 422, with or without details", () => {
    const withInfo = toConnectError(
      DomainError.withInfo("out_of_range", "too much", {
        reason: "refund_out_of_range",
        details: { payment_amount_cents: 100 },
      }),
    );
    expect(httpErrorOfConnect(withInfo)).toMatchObject({
      statusCode: 422,
      body: { error: "too much", details: { payment_amount_cents: 100 } },
    });
    const plain = httpErrorOfConnect(new ConnectError("out", Code.OutOfRange));
    expect(plain).toMatchObject({ statusCode: 422, body: { error: "out" } });
  });

  it("keeps field violations as the envelope, and 503 and 401 as they are, whatever the ErrorInfo", () => {
    const invalid = toConnectError(DomainError.invalidField("reason", "Too long"));
    expect(httpErrorOfConnect(invalid)?.body).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { reason: ["Too long"] } },
    });
    const unavailable = toConnectError(
      DomainError.withInfo("unavailable", "db at 10.0.0.1 down", { reason: "db", details: { host: "10.0.0.1" } }),
    );
    expect(httpErrorOfConnect(unavailable)).toMatchObject({
      statusCode: 503,
      body: { error: "Service temporarily unavailable" },
      headers: { "retry-after": "1" },
    });
    const unauthenticated = toConnectError(
      DomainError.withInfo("unauthenticated", "key k revoked", { reason: "revoked", details: { key: "k" } }),
    );
    expect(httpErrorOfConnect(unauthenticated)?.body).toEqual({ error: "Invalid or revoked API key" });
  });

  it("answers nothing (a 500 for the handler) for codes that are bugs, ErrorInfo or not", () => {
    const internal = new ConnectError("boom", Code.Internal);
    expect(httpErrorOfConnect(internal)).toBeUndefined();
  });

  it("answers an unknown outcome 504 saying how to find out, without Retry-After", () => {
    const unknown = toConnectError(DomainError.outcomeUnknown("connection to LedgerService.Refund lost"));
    const answer = httpErrorOfConnect(unknown);
    expect(answer?.statusCode).toBe(504);
    expect(answer?.body).toEqual({ error: expect.stringContaining("Idempotency-Key") });
    expect(answer?.headers).toEqual({});
  });

  it("answers a deadline the service could not meet 503 with Retry-After: it rolled back", () => {
    const answer = httpErrorOfConnect(toConnectError(DomainError.deadlineExceeded()));
    expect(answer).toMatchObject({ statusCode: 503, headers: { "retry-after": "1" } });
  });
});
