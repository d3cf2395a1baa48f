import { createCipheriv, hkdfSync, randomBytes } from "node:crypto";
import { fieldErrorsOf, newId, PageTokens } from "@affiliate/platform";
import { ErasureOwnerService } from "@affiliate/proto/erasure";
import { WiseReceiverType } from "@affiliate/proto/partners";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { developmentPayoutDetailsKey, payoutSealingKey } from "../src/config.js";
import { routes } from "../src/server.js";
import { type Harness, serviceClients, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
let erasure: ReturnType<typeof createClient<typeof ErasureOwnerService>>;
beforeAll(async () => {
  h = await startHarness();
  erasure = createClient(
    ErasureOwnerService,
    createRouterTransport(routes({ sql: h.sql, pageTokens: new PageTokens("test-page-token-secret") })),
  );
});
afterAll(() => h.close());

const failure = (promise: Promise<unknown>) => promise.then(() => undefined, ConnectError.from);

async function partnership(email = uniqueEmail()) {
  const { product } = await h.admin.createProduct({ name: `methods ${email}` });
  const productId = product?.id ?? "";
  const { partnership } = await h.partners.registerAffiliate({ productId, registration: { email }, notify: false });
  return { productId, partnershipId: partnership?.id ?? "", email };
}

/** Details as partners sealed them before sealed values carried a key version: nonce, tag, ciphertext. */
function sealedWithoutVersion(secret: string, details: object): Buffer {
  const key = Buffer.from(hkdfSync("sha256", secret, "affiliate-partners", "payout-details", 32));
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(details), "utf8"), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), ciphertext]);
}

const paypal = (partnershipId: string, email: string) => ({
  partnershipId,
  details: { case: "paypal" as const, value: { email } },
});

describe("payout methods", () => {
  it("are stored sealed and read masked; only the reveal answers them in clear", async () => {
    const { productId, partnershipId } = await partnership();
    const { method } = await h.partners.setPayoutMethod({
      productId,
      method: paypal(partnershipId, "  Ada.Pay@Example.COM "),
    });
    expect(method?.details).toEqual({ case: "paypal", value: expect.objectContaining({ email: "a***@example.com" }) });
    const [row] = await h.sql<{ sealedDetails: Buffer; method: string }[]>`
      select sealed_details, method from payout_methods where partnership_id = ${partnershipId}`;
    expect(row?.method).toBe("paypal");
    expect(row?.sealedDetails.toString("latin1")).not.toContain("example.com");
    // Another key cannot open them.
    expect(() =>
      payoutSealingKey("another-payout-details-key-0123456789").open(row?.sealedDetails ?? Buffer.alloc(0)),
    ).toThrow();

    const read = await h.partners.getPayoutMethod({ productId, partnershipId });
    expect(read.method?.details.value).toMatchObject({ email: "a***@example.com" });
    const { methods } = await h.partners.revealPayoutMethods({
      productId,
      partnershipIds: [partnershipId, "ptn_none"],
    });
    expect(methods.map((m) => [m.partnershipId, m.details.value])).toEqual([
      [partnershipId, expect.objectContaining({ email: "ada.pay@example.com" })],
    ]);

    await h.partners.setPayoutMethod({
      productId,
      method: {
        partnershipId,
        details: {
          case: "wise",
          value: {
            accountHolderName: "Ada Lovelace",
            iban: "gb82 west 1234 5698 7654 32",
            receiverType: WiseReceiverType.PERSON,
          },
        },
      },
    });
    const wise = (await h.partners.revealPayoutMethods({ productId, partnershipIds: [partnershipId] })).methods[0];
    expect(wise?.details).toEqual({
      case: "wise",
      value: expect.objectContaining({ accountHolderName: "Ada Lovelace", iban: "GB82WEST12345698765432", email: "" }),
    });
    expect((await h.partners.getPayoutMethod({ productId, partnershipId })).method?.details.value).toMatchObject({
      accountHolderName: "A*** L***",
      iban: "GB82**************5432",
    });

    expect((await h.partners.deletePayoutMethod({ productId, partnershipId })).deleted).toBe(true);
    expect((await h.partners.deletePayoutMethod({ productId, partnershipId })).deleted).toBe(false);
    expect((await failure(h.partners.getPayoutMethod({ productId, partnershipId })))?.code).toBe(Code.NotFound);
  });

  it("sealed before key versions or under the previous key, still open after the key rotates", async () => {
    const { productId, partnershipId } = await partnership();
    const other = await partnership();
    await h.partners.setPayoutMethod({ productId, method: paypal(partnershipId, "legacy@example.com") });
    await h.partners.setPayoutMethod({
      productId: other.productId,
      method: paypal(other.partnershipId, "version1@example.com"),
    });
    // The first as partners stored it before sealed values carried a key version: nonce, tag,
    // ciphertext under the same key.
    await h.sql`
      update payout_methods set sealed_details = ${sealedWithoutVersion(developmentPayoutDetailsKey, {
        type: "paypal",
        email: "legacy@example.com",
      })}
      where partnership_id = ${partnershipId}`;
    const emailsOf = async (clients: Pick<Harness, "partners">) => {
      const emails = [];
      for (const one of [{ productId, partnershipId }, other]) {
        const { methods } = await clients.partners.revealPayoutMethods({
          productId: one.productId,
          partnershipIds: [one.partnershipId],
        });
        emails.push(...methods.map((m) => (m.details.case === "paypal" ? m.details.value.email : "")));
      }
      return emails;
    };
    expect(await emailsOf(h)).toEqual(["legacy@example.com", "version1@example.com"]);

    const rotated = serviceClients(h.sql, {
      payoutSealing: payoutSealingKey("rotated-payout-details-key-0123456789", {
        version: 2,
        previousSecret: developmentPayoutDetailsKey,
      }),
    });
    expect(await emailsOf(rotated)).toEqual(["legacy@example.com", "version1@example.com"]);
    await rotated.partners.setPayoutMethod({ productId, method: paypal(partnershipId, "version2@example.com") });
    const [row] = await h.sql<{ sealedDetails: Buffer }[]>`
      select sealed_details from payout_methods where partnership_id = ${partnershipId}`;
    expect(row?.sealedDetails[0]).toBe(2);
    expect(await emailsOf(rotated)).toEqual(["version2@example.com", "version1@example.com"]);
    // The key before the rotation cannot open what the new one sealed.
    expect((await failure(h.partners.revealPayoutMethods({ productId, partnershipIds: [partnershipId] })))?.code).toBe(
      Code.Internal,
    );
    expect(() => payoutSealingKey(developmentPayoutDetailsKey, { version: 1, previousSecret: "x".repeat(32) })).toThrow(
      /PAYOUT_DETAILS_ENCRYPTION_KEY_VERSION must be 2 or more/,
    );
  });

  it("refuses bad details by field, and another product's partnership as a missing one", async () => {
    const { productId, partnershipId } = await partnership();
    const bad = await failure(h.partners.setPayoutMethod({ productId, method: paypal(partnershipId, "nope") }));
    expect(fieldErrorsOf(bad as ConnectError)?.fieldErrors).toEqual({ email: ["Must be an email address"] });
    const noDetails = await failure(h.partners.setPayoutMethod({ productId, method: { partnershipId } }));
    expect(fieldErrorsOf(noDetails as ConnectError)?.fieldErrors).toHaveProperty("type");
    const iban = await failure(
      h.partners.setPayoutMethod({
        productId,
        method: {
          partnershipId,
          details: { case: "wise", value: { accountHolderName: "Ada", iban: "GB00WEST12345698765432" } },
        },
      }),
    );
    expect(fieldErrorsOf(iban as ConnectError)?.fieldErrors).toHaveProperty("iban");
    const other = await partnership();
    const foreign = await failure(
      h.partners.setPayoutMethod({ productId, method: paypal(other.partnershipId, "a@example.com") }),
    );
    expect(foreign?.code).toBe(Code.NotFound);
    expect(
      await h.sql`select 1 from payout_methods where partnership_id in (${partnershipId}, ${other.partnershipId})`,
    ).toHaveLength(0);
    const tooMany = await failure(
      h.partners.revealPayoutMethods({ productId, partnershipIds: Array.from({ length: 101 }, (_, i) => `ptn_${i}`) }),
    );
    expect(tooMany?.code).toBe(Code.InvalidArgument);
  });

  it("are erased with the affiliate's email in that product, counted once", async () => {
    const { productId, partnershipId, email } = await partnership();
    await h.partners.setPayoutMethod({ productId, method: paypal(partnershipId, "payee@example.com") });
    const counts = (response: { stores: { store: string; records: bigint }[] }) =>
      Object.fromEntries(response.stores.map(({ store, records }) => [store, Number(records)]));
    expect(counts(await erasure.findCustomer({ productId, email }))).toEqual({
      affiliate_profiles: 0,
      payout_methods: 1,
    });
    const erasureId = newId("ers");
    expect(counts(await erasure.eraseCustomer({ productId, email, erasureId }))).toMatchObject({ payout_methods: 1 });
    expect((await failure(h.partners.getPayoutMethod({ productId, partnershipId })))?.code).toBe(Code.NotFound);
    expect(counts(await erasure.findCustomer({ productId, email }))).toMatchObject({ payout_methods: 0 });
    expect(counts(await erasure.eraseCustomer({ productId, email, erasureId }))).toMatchObject({ payout_methods: 1 });
  });
});
