import { fieldErrorsOf } from "@affiliate/platform";
import { PartnershipStatus } from "@affiliate/proto/partners";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async () => (await h.admin.createProduct({ name: "List" })).product?.id ?? "";
const register = async (productId: string) =>
  (await h.partners.registerAffiliate({ productId, registration: { email: uniqueEmail() }, notify: false })).partnership
    ?.id ?? "";

/** Every id of a listing, following next_page_token until the end. */
async function listAll(productId: string, pageSize: number, status = PartnershipStatus.UNSPECIFIED) {
  const ids: string[] = [];
  let pageToken = "";
  do {
    const page = await h.partners.listPartnerships({ productId, pageSize, pageToken, status });
    ids.push(...page.partnerships.map((p) => p.id));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return ids;
}

describe("listing partnerships", () => {
  it("pages newest first through every partnership exactly once", async () => {
    const productId = await newProduct();
    const created: string[] = [];
    for (let i = 0; i < 7; i++) created.push(await register(productId));
    expect(await listAll(productId, 3)).toEqual([...created].reverse());
    const only = await h.partners.listPartnerships({ productId, pageSize: 100, pageToken: "" });
    expect(only.nextPageToken).toBe("");
  });

  it("is stable when rows are added or deleted between pages", async () => {
    const productId = await newProduct();
    const created: string[] = [];
    for (let i = 0; i < 6; i++) created.push(await register(productId));
    const first = await h.partners.listPartnerships({ productId, pageSize: 2, pageToken: "" });
    const added = await register(productId); // newer than every listed row: belongs before page 1
    const doomed = created[1] ?? ""; // on a later page
    await h.sql`delete from partnerships where id = ${doomed}`;
    const rest: string[] = [];
    let pageToken = first.nextPageToken;
    while (pageToken) {
      const page = await h.partners.listPartnerships({ productId, pageSize: 2, pageToken });
      rest.push(...page.partnerships.map((p) => p.id));
      pageToken = page.nextPageToken;
    }
    const seen = [...first.partnerships.map((p) => p.id), ...rest];
    expect(seen).toEqual([...created].reverse().filter((id) => id !== doomed));
    expect(seen).not.toContain(added);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("filters by status", async () => {
    const productId = await newProduct();
    const kept = await register(productId);
    const removed = await register(productId);
    await h.partners.updatePartnershipStatus({ productId, partnershipId: removed, status: PartnershipStatus.REMOVED });
    expect(await listAll(productId, 10, PartnershipStatus.REMOVED)).toEqual([removed]);
    expect(await listAll(productId, 10, PartnershipStatus.ACTIVE)).toEqual([kept]);
  });

  it("shows only the key's product", async () => {
    const [mine, theirs] = [await newProduct(), await newProduct()];
    const own = await register(mine);
    await register(theirs);
    expect(await listAll(mine, 10)).toEqual([own]);
  });

  it("refuses tampered, foreign and cross-filter page tokens on the cursor field", async () => {
    const productId = await newProduct();
    for (let i = 0; i < 3; i++) await register(productId);
    const { nextPageToken } = await h.partners.listPartnerships({ productId, pageSize: 1, pageToken: "" });
    const [payload, signature] = nextPageToken.split(".");
    const forged = `${Buffer.from(JSON.stringify({ v: 1, a: "ptn_ffffffffffffffffffffffffffffffff" })).toString("base64url")}.${signature}`;
    const other = await newProduct();
    const attempts = [
      { productId, pageToken: forged },
      { productId, pageToken: `${payload}.AAAA${signature?.slice(4)}` },
      { productId, pageToken: "garbage" },
      { productId: other, pageToken: nextPageToken },
      { productId, pageToken: nextPageToken, status: PartnershipStatus.REMOVED },
    ];
    for (const attempt of attempts) {
      try {
        await h.partners.listPartnerships({ pageSize: 1, ...attempt });
        throw new Error("expected INVALID_ARGUMENT");
      } catch (error) {
        const connectError = ConnectError.from(error);
        expect(connectError.code).toBe(Code.InvalidArgument);
        expect(fieldErrorsOf(connectError)?.fieldErrors).toHaveProperty("cursor");
      }
    }
  });

  it("refuses page sizes outside 1-100 on the limit field", async () => {
    const productId = await newProduct();
    for (const pageSize of [0, 101, -5]) {
      const error = await h.partners.listPartnerships({ productId, pageSize, pageToken: "" }).catch(ConnectError.from);
      expect(error).toBeInstanceOf(ConnectError);
      expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("limit");
    }
  });
});

describe("reading a partnership", () => {
  it("returns it with its affiliate", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email, name: "Grace" },
      notify: false,
    });
    const read = await h.partners.getPartnership({ productId, partnershipId: partnership?.id ?? "" });
    expect(read.partnership).toEqual(partnership);
  });

  it("answers another product's partnership exactly like a missing one", async () => {
    const [mine, theirs] = [await newProduct(), await newProduct()];
    const foreign = await register(theirs);
    const errors = await Promise.all(
      [foreign, "ptn_missing"].map((partnershipId) =>
        h.partners.getPartnership({ productId: mine, partnershipId }).catch(ConnectError.from),
      ),
    );
    for (const error of errors) expect((error as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("changing a partnership's status", () => {
  const statuses = {
    active: PartnershipStatus.ACTIVE,
    pending: PartnershipStatus.PENDING,
    rejected: PartnershipStatus.REJECTED,
    removed: PartnershipStatus.REMOVED,
  } as const;
  const allowed = new Set([
    "pending>active",
    "pending>rejected",
    "active>removed",
    "rejected>active",
    "removed>active",
  ]);

  for (const from of Object.keys(statuses) as (keyof typeof statuses)[]) {
    for (const to of ["active", "rejected", "removed"] as const) {
      const ok = allowed.has(`${from}>${to}`);
      it(`${from} -> ${to} is ${ok ? "allowed" : "refused"}`, async () => {
        const productId = await newProduct();
        const id = await register(productId);
        await h.sql`update partnerships set status = ${from} where id = ${id}`;
        const result = await h.partners
          .updatePartnershipStatus({ productId, partnershipId: id, status: statuses[to] })
          .catch(ConnectError.from);
        if (ok) {
          expect(result).not.toBeInstanceOf(ConnectError);
          expect((await h.partners.getPartnership({ productId, partnershipId: id })).partnership?.status).toBe(
            statuses[to],
          );
        } else {
          expect((result as ConnectError).code).toBe(Code.FailedPrecondition);
          const [row] = await h.sql<{ status: string }[]>`select status from partnerships where id = ${id}`;
          expect(row?.status).toBe(from);
        }
      });
    }
  }

  it("publishes removal and return from removal", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.REMOVED });
    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.ACTIVE });
    const rows = await h.sql<{ subject: string }[]>`select subject from outbox order by seq desc limit 4`;
    expect(rows.map((row) => row.subject)).toEqual([
      "partners.partnership.reactivated",
      "partners.partnership.status_changed",
      "partners.partnership.removed",
      "partners.partnership.status_changed",
    ]);
  });

  it("refuses pending as a target and unknown partnerships", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    const toPending = await h.partners
      .updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.PENDING })
      .catch(ConnectError.from);
    expect((toPending as ConnectError).code).toBe(Code.InvalidArgument);
    const missing = await h.partners
      .updatePartnershipStatus({ productId, partnershipId: "ptn_nope", status: PartnershipStatus.REMOVED })
      .catch(ConnectError.from);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  });
});
