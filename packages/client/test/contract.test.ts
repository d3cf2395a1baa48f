/**
 * The client against the document the gateway serves (contract section 15): the committed
 * snapshot is that document, the generated sources are what the snapshot generates, and every
 * operation of it has a method. When one of these fails, `npm run snapshot -w @affiliate/client`
 * takes the gateway's document and regenerates; a new operation then needs its method in
 * src/resources.ts, and the typecheck shows every method a changed type breaks.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { generatedDirectory, generatedSources } from "../scripts/codegen.mjs";
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { committedSnapshot, servedDocument } from "../scripts/document.mjs";
import type { operations, webhooks } from "../src/generated/openapi.js";
import {
  AffiliateClient,
  type ItemOf,
  type OperationId,
  operationsWithoutMethod,
  operationTable,
  type ResultOf,
  type WebhookEventType,
} from "../src/index.js";

const regenerate = "run `npm run snapshot -w @affiliate/client`";

/** Every operation id a method of `client` sends, found by walking its resources. */
function operationsWithMethod(client: AffiliateClient): string[] {
  const found: string[] = [];
  const walk = (node: object) => {
    for (const value of Object.values(node)) {
      if (typeof value === "function" && typeof value.operationId === "string") found.push(value.operationId);
      else if (value && typeof value === "object") walk(value);
    }
  };
  walk(client);
  return found.sort();
}

describe("the snapshot and the generated sources", () => {
  it("the snapshot is the document the gateway serves now", async () => {
    const served = await servedDocument();
    expect(served, `The gateway's document changed: ${regenerate}`).toEqual(committedSnapshot());
  });

  it("src/generated/ is what the snapshot generates", async () => {
    const sources: Record<string, string> = await generatedSources(committedSnapshot());
    for (const [name, source] of Object.entries(sources)) {
      expect(
        readFileSync(join(generatedDirectory, name), "utf8"),
        `src/generated/${name} is stale: ${regenerate}`,
      ).toBe(source);
    }
  });
});

describe("coverage", () => {
  it("every operation of the document has a method, except the ones named with a reason", () => {
    const documented = Object.keys(operationTable).sort();
    const withMethod = operationsWithMethod(new AffiliateClient({ baseUrl: "http://127.0.0.1:9" }));
    const missing = documented.filter((id) => !withMethod.includes(id) && !(id in operationsWithoutMethod));
    expect(missing, "operations without a method in src/resources.ts").toEqual([]);
    expect(withMethod.filter((id) => !documented.includes(id))).toEqual([]);
    expect(new Set(withMethod).size, "two methods for one operation").toBe(withMethod.length);
  });

  it("the operation table and the generated types name the same operations and webhook events", () => {
    const documentOperations = new Set(
      Object.values(committedSnapshot().paths as Record<string, Record<string, { operationId: string }>>).flatMap(
        (item) => Object.values(item).map((operation) => operation.operationId),
      ),
    );
    expect(new Set(Object.keys(operationTable))).toEqual(documentOperations);
    expectTypeOf<OperationId>().toEqualTypeOf<Exclude<keyof operations, `webhook${string}`>>();
    expectTypeOf<WebhookEventType>().toEqualTypeOf<keyof webhooks>();
  });
});

describe("types", () => {
  it("int64 sums are bigint, other numbers number; list items come from the page's data", () => {
    type Partnership = ResultOf<"getAffiliate">["data"];
    expectTypeOf<Partnership["stats"]["earned_cents"]>().toEqualTypeOf<bigint>();
    expectTypeOf<Partnership["stats"]["clicks"]>().toEqualTypeOf<number>();
    expectTypeOf<ItemOf<"listPayouts">["amount_cents"]>().toEqualTypeOf<bigint>();
    expectTypeOf<ItemOf<"listCommissions">["amount_cents"]>().toEqualTypeOf<number>();
  });

  it("amounts are accepted as number or bigint", () => {
    const client = new AffiliateClient({ baseUrl: "http://127.0.0.1:9" });
    expectTypeOf(client.refunds.create)
      .parameter(0)
      .toHaveProperty("refund_amount_cents")
      .toEqualTypeOf<number | bigint | undefined>();
    expectTypeOf(client.events.track)
      .parameter(0)
      .toHaveProperty("amount_cents")
      .toEqualTypeOf<number | bigint | undefined>();
  });
});
