import { badTextMessage } from "@affiliate/contract-rules";
import { ErrorInfoSchema } from "@affiliate/proto/common";
import { BulkRegisterAffiliatesRequestSchema, PartnersService } from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fieldErrorsOf } from "../src/errors.js";
import { badTextFields } from "../src/refuse-bad-text.js";
import { createRpcTransport } from "../src/rpc-client.js";
import { type RpcServer, startRpcServer } from "../src/rpc-server.js";
import { silentLogger } from "./helpers.js";

const loneHigh = "\uD83D";
const loneLow = "\uDE00";
const smile = "\uD83D\uDE00";

describe("badTextFields", () => {
  it("names every bad string by its field path, through lists and nested messages", () => {
    const request = create(BulkRegisterAffiliatesRequestSchema, {
      productId: "prd_1",
      registrations: [
        { email: "a@example.com", name: "Ada" },
        { email: "b@example.com", name: "B\u0000b", referralCode: loneHigh },
      ],
    });
    expect(badTextFields(BulkRegisterAffiliatesRequestSchema, request)).toEqual([
      { path: "registrations[1].name" },
      { path: "registrations[1].referral_code" },
    ]);
  });

  it("checks map keys and values", () => {
    const info = create(ErrorInfoSchema, { reason: "r", details: { "k\u0000": "v", good: `x${loneLow}` } });
    expect(badTextFields(ErrorInfoSchema, info).map((field) => field.path)).toEqual([
      'details.fields["k\\u0000"]',
      "details.fields[good].string_value",
    ]);
  });
});

describe("refuseBadText in startRpcServer", () => {
  let server: RpcServer;
  let handled = 0;
  const routes = (router: ConnectRouter) =>
    router.service(PartnersService, {
      registerAffiliate: async () => {
        handled++;
        return {};
      },
      bulkRegisterAffiliates: async () => {
        handled++;
        return { results: [] };
      },
    });

  beforeAll(async () => {
    server = await startRpcServer({
      routes,
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
      readiness: async () => true,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  const baseUrl = () => `http://127.0.0.1:${server.port}`;
  const transports: Record<string, () => Transport> = {
    "Connect, binary": () => createRpcTransport(baseUrl()),
    "Connect, JSON": () => createConnectTransport({ baseUrl: baseUrl(), httpVersion: "2", useBinaryFormat: false }),
    gRPC: () => createGrpcTransport({ baseUrl: baseUrl() }),
  };

  async function callError(call: () => Promise<unknown>): Promise<ConnectError> {
    try {
      await call();
    } catch (error) {
      return ConnectError.from(error);
    }
    throw new Error("expected the call to fail");
  }

  for (const [protocol, transport] of Object.entries(transports)) {
    it(`answers ${protocol} with INVALID_ARGUMENT naming the field, before the handler runs`, async () => {
      const client = createClient(PartnersService, transport());
      const before = handled;
      const refused = await callError(() =>
        client.registerAffiliate({ productId: "prd_1", registration: { email: "a@example.com", name: "A\u0000" } }),
      );
      expect(refused.code).toBe(Code.InvalidArgument);
      expect(fieldErrorsOf(refused)).toEqual({
        fieldErrors: { "registration.name": [badTextMessage] },
        formErrors: [],
      });

      const bulk = await callError(() =>
        client.bulkRegisterAffiliates({
          productId: "prd_1\u0000",
          registrations: [{ email: "a@example.com" }, { email: "b@example.com", sponsorReferralCode: "x\u0000" }],
        }),
      );
      expect(bulk.code).toBe(Code.InvalidArgument);
      expect(Object.keys(fieldErrorsOf(bulk)?.fieldErrors ?? {})).toEqual([
        "product_id",
        "registrations[1].sponsor_referral_code",
      ]);
      expect(handled).toBe(before);

      await client.registerAffiliate({
        productId: "prd_1",
        registration: { email: "a@example.com", name: `A${smile}` },
      });
      expect(handled).toBe(before + 1);
    });
  }

  // Only JSON can carry one (binary strings are UTF-8); protobuf-es refuses it while decoding,
  // before the interceptor, and connect answers INVALID_ARGUMENT naming the field in its message.
  it("refuses an unpaired surrogate in a JSON payload as INVALID_ARGUMENT", async () => {
    const client = createClient(PartnersService, transports["Connect, JSON"]?.() as Transport);
    const before = handled;
    const refused = await callError(() =>
      client.registerAffiliate({ productId: "prd_1", registration: { email: `a${loneLow}@example.com` } }),
    );
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.rawMessage).toContain("AffiliateRegistration.email");
    expect(handled).toBe(before);
  });
});
