/**
 * Payout files through the client: the export answers text/csv (its text, an empty PayPal file
 * included), the import sends the file as text/csv, and a refused file is a typed error with its
 * lines. Against a scripted server; the routes themselves are tested in the gateway.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AffiliateClient, ValidationError } from "../src/index.js";
import { type Reply, scriptedServer } from "./support/scripted-server.js";

type Server = Awaited<ReturnType<typeof scriptedServer>>;
let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientOf(script: (index: number) => Reply) {
  server = await scriptedServer((_request, index) => script(index));
  const client = new AffiliateClient({
    baseUrl: server.url,
    apiKey: "sk_live_test",
    retry: { maxAttempts: 2, baseDelayMs: 5 },
  });
  return { client, seen: server.seen };
}

const csv = (raw: string): Reply => ({ status: 200, headers: { "content-type": "text/csv; charset=utf-8" }, raw });

describe("payout files", () => {
  it("reads an export as text, an empty one as an empty string", async () => {
    const { client, seen } = await clientOf((i) => csv(i === 0 ? "payout_id,status\r\n" : ""));
    await expect(client.payouts.export({ format: "csv", status: "approved" })).resolves.toBe("payout_id,status\r\n");
    await expect(client.payouts.export({ format: "paypal" })).resolves.toBe("");
    expect(seen[0]?.url).toBe("/api/v1/payouts/export?format=csv&status=approved");
    expect(seen[0]?.headers.accept).toBe("text/csv, application/json");
  });

  it("sends an import as text/csv and reads the refusal's lines", async () => {
    const { client, seen } = await clientOf((i) =>
      i === 0
        ? { status: 200, body: { data: { already_imported: true, paid: 1 } } }
        : {
            status: 400,
            body: {
              error: "Validation failed",
              details: {
                formErrors: ["Nothing was imported: 1 line is refused (first: line 2)"],
                fieldErrors: { "line 2": ["Unknown payout po_x"] },
              },
            },
          },
    );
    const file = "payout_id,status\npo_1,paid\n";
    await expect(client.payouts.import(file)).resolves.toMatchObject({ data: { already_imported: true } });
    expect(seen[0]).toMatchObject({ method: "POST", url: "/api/v1/payouts/import", body: file });
    expect(seen[0]?.headers["content-type"]).toBe("text/csv");
    const refused = await client.payouts.import(file, { format: "csv" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).fieldErrors).toEqual({ "line 2": ["Unknown payout po_x"] });
    expect(seen[1]?.url).toBe("/api/v1/payouts/import?format=csv");
  });
});
