import { errorInfoOf, fieldErrorsOf } from "@affiliate/platform";
import { CustomerErasedSchema, ErasureStatus } from "@affiliate/proto/privacy";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestErasure, resumeAbandonedErasures, runErasure } from "../src/domain/erase-customer.js";
import { type Harness, newProgram, pay, startHarness, storesOf, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const failure = (promise: Promise<unknown>) => promise.then(() => undefined, ConnectError.from);
/** Lets every lease of the erasures taken so far run out, as after a crash. */
const expireLeases = () => h.sql`update erasures set lease_until = now() where status = 'running'`;

describe("EraseCustomer", () => {
  it("erases the customer at every owner, verifies, and answers a receipt that adds up", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);
    await pay(h, program, email, 5000);
    h.notifier.deliveries.push({ productId: program.productId, email }, { productId: program.productId, email });

    const { erasure } = await h.privacy.eraseCustomer({
      productId: program.productId,
      email: `  ${email.toUpperCase()} `,
    });
    expect(erasure?.status).toBe(ErasureStatus.COMPLETED);
    expect(erasure?.completedAt).toBeDefined();
    expect(erasure?.verifiedAt).toBeDefined();
    expect(storesOf(erasure)).toEqual({
      tracking_events: 2,
      sandbox_events: 0,
      commissions: 2,
      refunds: 0,
      idempotency_keys: 0,
      affiliate_profiles: 0,
      payout_methods: 0,
      webhook_deliveries: 2,
    });

    const [event] = await h.ledgerSql<{ customerEmail: string | null; ip: string | null }[]>`
      select customer_email, ip from tracking_events where product_id = ${program.productId}`;
    expect(event).toEqual({ customerEmail: null, ip: null });
    expect(h.notifier.deliveries.every((delivery) => delivery.email === null)).toBe(true);
  });

  it("answers all zeros on a repeat and for an unknown email, every store still listed", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);
    await h.privacy.eraseCustomer({ productId: program.productId, email });
    const repeat = await h.privacy.eraseCustomer({ productId: program.productId, email });
    const unknown = await h.privacy.eraseCustomer({ productId: program.productId, email: uniqueEmail("nobody") });
    for (const { erasure } of [repeat, unknown]) {
      expect(erasure?.status).toBe(ErasureStatus.COMPLETED);
      expect(Object.values(storesOf(erasure))).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    }
  });

  it("refuses an invalid email with a field error, recording nothing", async () => {
    const countErasures = async () =>
      (await h.sql<{ count: number }[]>`select count(*)::int as count from erasures`)[0]?.count;
    const before = await countErasures();
    const error = await failure(h.privacy.eraseCustomer({ productId: "prd_x", email: "not an email" }));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error && fieldErrorsOf(error)?.fieldErrors).toEqual({ email: ["Invalid email address"] });
    expect(await countErasures()).toBe(before);
  });

  it("keeps only a keyed hash of a completed erasure's email, and emits customer.erased without it", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    const { erasure } = await h.privacy.eraseCustomer({ productId: program.productId, email });
    const rows = await h.sql<{ emailHash: string; sealedEmail: Buffer | null }[]>`
      select email_hash, sealed_email from erasures where id = ${erasure?.id ?? ""}`;
    expect(rows).toEqual([{ emailHash: h.deps.keys.hash(email), sealedEmail: null }]);
    expect(rows[0]?.emailHash).not.toContain(email);

    const [outbox] = await h.sql<{ subject: string; payload: Buffer }[]>`
      select subject, payload from outbox where payload is not null order by seq desc limit 1`;
    expect(outbox?.subject).toBe("privacy.customer.erased");
    expect(outbox?.payload.includes(Buffer.from(email))).toBe(false);
    const event = fromBinary(CustomerErasedSchema, outbox?.payload ?? new Uint8Array());
    expect(event).toMatchObject({ erasureId: erasure?.id, productId: program.productId });
    expect(event.requestedAt).toEqual(erasure?.requestedAt);
    expect(event.completedAt).toEqual(erasure?.completedAt);
  });
});

describe("receipts", () => {
  it("reads one receipt of the product, and lists an email's receipts newest first", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    const first = (await h.privacy.eraseCustomer({ productId: program.productId, email })).erasure;
    const second = (await h.privacy.eraseCustomer({ productId: program.productId, email })).erasure;
    await h.privacy.eraseCustomer({ productId: program.productId, email: uniqueEmail("other") });

    const read = await h.privacy.getErasure({ productId: program.productId, erasureId: first?.id ?? "" });
    expect(read.erasure).toEqual(first);
    const { erasures } = await h.privacy.listErasures({ productId: program.productId, email: email.toUpperCase() });
    expect(erasures.map((e) => e.id)).toEqual([second?.id, first?.id]);

    const elsewhere = await newProgram(h);
    const foreign = await failure(h.privacy.getErasure({ productId: elsewhere.productId, erasureId: first?.id ?? "" }));
    expect(foreign?.code).toBe(Code.NotFound);
    expect((await h.privacy.listErasures({ productId: elsewhere.productId, email })).erasures).toEqual([]);
  });
});

describe("faults", () => {
  it("an owner down mid-saga: 503 with the erasure id, then the resume job completes it and the receipt adds up", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);
    h.notifier.deliveries.push({ productId: program.productId, email });
    h.notifier.down = true;

    const error = await failure(h.privacy.eraseCustomer({ productId: program.productId, email }));
    expect(error?.code).toBe(Code.Unavailable);
    const erasureId = String(error && errorInfoOf(error)?.details.erasure_id);
    const running = (await h.privacy.getErasure({ productId: program.productId, erasureId })).erasure;
    expect(running?.status).toBe(ErasureStatus.RUNNING);
    expect(running?.verifiedAt).toBeUndefined();
    expect(storesOf(running)).toMatchObject({ tracking_events: 1, affiliate_profiles: 0 });

    h.notifier.down = false;
    await expireLeases();
    expect(await resumeAbandonedErasures(h.deps, (id, cause) => expect.fail(`${id}: ${String(cause)}`))).toBe(1);
    const done = (await h.privacy.getErasure({ productId: program.productId, erasureId })).erasure;
    expect(done?.status).toBe(ErasureStatus.COMPLETED);
    expect(done?.verifiedAt).toBeDefined();
    expect(storesOf(done)).toMatchObject({ tracking_events: 1, commissions: 1, webhook_deliveries: 1 });
  });

  it("privacy killed mid-saga (an owner erased, its answer lost): the resumed saga's receipt still counts it", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);
    await pay(h, program, email, 7000);
    // The request commits, the ledger erases, and the process dies before recording the answer.
    const erasureId = await requestErasure(h.deps, { productId: program.productId, email });
    const ledger = h.deps.owners.find((owner) => owner.name === "ledger");
    await ledger?.erase({ productId: program.productId, email }, erasureId);

    await expireLeases();
    await resumeAbandonedErasures(h.deps, (id, cause) => expect.fail(`${id}: ${String(cause)}`));
    const { erasure } = await h.privacy.getErasure({ productId: program.productId, erasureId });
    expect(erasure?.status).toBe(ErasureStatus.COMPLETED);
    expect(storesOf(erasure)).toMatchObject({ tracking_events: 2, commissions: 2 });
  });

  it("a payment recorded after the owners erased is found by the verification and erased too", async () => {
    const program = await newProgram(h);
    const email = uniqueEmail();
    await pay(h, program, email);
    const erasureId = await requestErasure(h.deps, { productId: program.productId, email });
    // Every owner erases; then, before the verification, a payment of the customer lands.
    for (const owner of h.deps.owners) await owner.erase({ productId: program.productId, email }, erasureId);
    await h.sql`update erasure_owners set erased_at = now() where erasure_id = ${erasureId}`;
    await pay(h, program, email, 3000);

    const erasure = await runErasure(h.deps, erasureId);
    expect(erasure?.status).toBe("completed");
    expect(erasure?.stores).toContainEqual({ store: "tracking_events", records: 2 });
    const [left] = await h.ledgerSql<{ count: number }[]>`
      select count(*)::int as count from tracking_events where product_id = ${program.productId} and customer_email is not null`;
    expect(left?.count).toBe(0);
  });
});
