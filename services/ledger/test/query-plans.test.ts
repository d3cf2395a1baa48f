import { newId } from "@affiliate/platform";
import { CommissionAction, CommissionStatus, HoldReason, HoldResolution, Period } from "@affiliate/proto/ledger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EventType,
  type Harness,
  newAffiliate,
  newProduct,
  type PlanNode,
  planOf,
  recordStatements,
  type SentStatement,
  startHarness,
  track,
  trackBatch,
  unique,
  uniqueEmail,
} from "./harness.js";

// Issue 17: under mixed load Postgres read ledger.tracking_events whole, over and over. Each
// statement the ledger runs for that load must be an index read at a realistic size, as Postgres
// plans it for the parameters given and as a generic plan (postgres.js prepares statements, and
// Postgres may switch a prepared statement to its generic plan).

let h: Harness;
let productId: string;
let aff: { id: string; code: string };
let sponsor: { id: string; code: string };

/** Tables that grow with the traffic: a statement reads them through an index or not at all. */
const largeTables = ["tracking_events", "commissions", "refunds"];
const seededEvents = 60_000;

beforeAll(async () => {
  h = await startHarness();
  productId = await newProduct(h, { holdDays: 0 });
  sponsor = await newAffiliate(h, productId);
  aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
  // A year of traffic, half of it this product's, the rest spread over 40 others: clicks,
  // signups and payments (a tenth each) with their level-1 commissions, paid out monthly except
  // the last 30 days'. Seeded by SQL, so the rollups do not summarise them: this file checks
  // plans, not figures.
  await h.sql`
    insert into tracking_events (id, product_id, event_type, partnership_id, visitor_id, customer_email,
                                 provider_customer_id, amount_cents, external_id, occurred_at)
    select 'evt_seed' || g, case when g % 2 = 0 then ${productId} else 'prod_seed' || (g % 40) end,
           case g % 10 when 0 then 'payment' when 1 then 'signup' else 'click' end,
           case when g % 3 <> 0 then case when g % 2 = 0 then ${aff.id} else 'ptn_seed' || (g % 500) end end,
           'vis_seed' || (g % 20000),
           case when g % 10 in (0, 1) then 'seed' || (g % 5000) || '@example.com' end,
           case when g % 10 in (0, 1) then 'cus_seed' || (g % 5000) end,
           case when g % 10 = 0 then 1000 + g % 9000 end,
           case when g % 10 = 0 then 'ext_seed' || g end,
           now() - (g % 360) * interval '1 day' - (g % 86400) * interval '1 second'
    from generate_series(1, ${seededEvents}) g`;
  await h.sql`
    insert into commissions (id, product_id, partnership_id, event_id, level, original_amount_cents, amount_cents,
                             status, hold_until, referral_code, payment_amount_cents, payment_occurred_at, payout_id,
                             rule_source, rule_type, rule_rate_bps, rule_payment_number, rule_first_payment_at)
    select 'com_seed' || substr(id, 9), product_id, partnership_id, id, 1, amount_cents / 5, amount_cents / 5,
           case when paid then 'paid' else 'approved' end, occurred_at, 'seed', amount_cents, occurred_at,
           case when paid then 'po_seed' || to_char(occurred_at, 'YYYYMM') || partnership_id end,
           'program', 'percent', 2000, 1, occurred_at
    from (select *, occurred_at < now() - interval '30 days' as paid from tracking_events
          where id like 'evt_seed%' and event_type = 'payment' and partnership_id is not null) payments`;
  await h.sql`vacuum analyze tracking_events`;
  await h.sql`vacuum analyze commissions`;
});
afterAll(() => h.close());

/** The statements worth planning: reads and writes, not transaction control or settings. */
const planned = (statements: SentStatement[]) =>
  statements.filter((s) => /^\s*(select|insert|update|delete|with)\b/i.test(s.text) && !/set_config\(/.test(s.text));

/**
 * Postgres runs a prepared statement with its generic plan only when that plan costs no more than
 * its custom plans plus their planning (plancache.c: about 1000 × cpu_operator_cost per relation):
 * a generic plan costlier than that is never used, whatever it reads.
 */
const genericPlanUsed = (generic: PlanNode[], custom: PlanNode[]) =>
  (generic[0]?.["Total Cost"] ?? 0) <= (custom[0]?.["Total Cost"] ?? 0) + 10;

/** Scans that read a large table without an index, in a plan Postgres may use, with their statement. */
async function fullScans(statements: SentStatement[]): Promise<{ table: string; statement: string }[]> {
  const found: { table: string; statement: string }[] = [];
  for (const statement of planned(statements)) {
    const custom = await planOf(h.sql, statement);
    const generic = await planOf(h.sql, statement, { generic: true });
    const plans = genericPlanUsed(generic, custom) ? { custom, "generic plan": generic } : { custom };
    for (const [plan, nodes] of Object.entries(plans)) {
      for (const node of nodes) {
        if (node["Node Type"] === "Seq Scan" && largeTables.includes(node["Relation Name"] ?? "")) {
          found.push({ table: `${node["Relation Name"]} (${plan})`, statement: statement.text });
        }
      }
    }
  }
  return found;
}

describe("every statement of a mixed load reads the large tables through an index", () => {
  it("clicks, signups, payments, batches, replays, refunds, lists, commission changes, stats, payouts, disputes, erasure", async () => {
    const customerEmail = uniqueEmail();
    const visitorId = unique("vis");
    const externalId = unique("pay");
    const sent = await recordStatements(h, async () => {
      await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, visitorId });
      await track(h, {
        productId,
        type: EventType.SIGNUP,
        visitorId,
        customerEmail,
        providerCustomerId: unique("cus"),
      });
      const payment = {
        productId,
        type: EventType.PAYMENT,
        customerEmail,
        amountCents: 4200n,
        externalId,
      };
      await track(h, payment); // attributed by the customer's signup
      await track(h, payment); // a replay
      await track(h, { productId, type: EventType.PAYMENT, visitorId, amountCents: 999n, externalId: unique("pay") });
      const batch = await trackBatch(h, [
        ...Array.from({ length: 50 }, () => ({ productId, type: EventType.CLICK, referralCode: aff.code })),
        ...Array.from({ length: 10 }, (_, i) => ({
          productId,
          type: EventType.PAYMENT,
          referralCode: aff.code,
          amountCents: BigInt(1000 + i),
          externalId: unique("batch"),
        })),
        { productId, type: EventType.PAYMENT, amountCents: 4200n, externalId }, // a replay in a batch
      ]);
      await h.ledger.refund({
        productId,
        identification: { case: "externalId", value: externalId },
        refundAmountCents: 100n,
      });
      await h.ledger.refund({
        productId,
        identification: { case: "emailAndAmount", value: { email: customerEmail, paymentAmountCents: 4200n } },
        refundAmountCents: 100n,
        idempotencyKey: unique("key"),
      });
      await h.ledger.refund({ productId, identification: { case: "externalId", value: "ext_seed10" } });
      const page = await h.ledger.listCommissions({ productId, pageSize: 20 });
      await h.ledger.listCommissions({ productId, pageSize: 20, pageToken: page.nextPageToken });
      await h.ledger.listCommissions({ productId, pageSize: 20, status: CommissionStatus.APPROVED });
      await h.ledger.listCommissions({ productId, pageSize: 20, partnershipId: sponsor.id });
      const [first, second] = batch.results
        .map((r) => (r.outcome.case === "tracked" ? r.outcome.value.event?.commissions[0]?.id : undefined))
        .filter((id) => id !== undefined);
      await h.ledger.getCommission({ productId, commissionId: first ?? "" });
      await h.ledger.refund({ productId, identification: { case: "commissionId", value: first ?? "" } });
      await h.ledger.updateCommission({ productId, commissionId: second ?? "", action: CommissionAction.REJECT });
      await h.ledger.getStats({ productId, period: Period.PERIOD_12M });
      await h.ledger.getTimeseries({ productId, period: Period.PERIOD_30D });
      await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id, sponsor.id] });
      await h.ledger.listPayableBalances({ productId });
      const payoutId = newId("po");
      await h.ledger.claimCommissions({ productId, claims: [{ partnershipId: sponsor.id, payoutId }] });
      await h.ledger.releaseCommissions({ productId, payoutIds: [payoutId] });
      const dispute = { productId, externalId, holdId: unique("dp"), reason: HoldReason.DISPUTE };
      await h.ledger.holdPaymentCommissions(dispute);
      await h.ledger.releasePaymentCommissions({ ...dispute, resolution: HoldResolution.REFUNDED });
      await h.erasure.eraseCustomer({ productId, email: "seed42@example.com", erasureId: newId("ers") });
      await h.erasure.findCustomer({ productId, email: "seed42@example.com" });
    });
    // The load did run: every kind of statement was recorded.
    const texts = planned(sent).map((s) => s.text);
    expect(texts.some((t) => /insert into "tracking_events"/i.test(t))).toBe(true);
    expect(texts.some((t) => /from tracking_events\s+where product_id = \$1 and external_id/i.test(t))).toBe(true);
    expect(texts.some((t) => /customer_email = \$\d+ and amount_cents/i.test(t))).toBe(true);

    expect(await fullScans(sent)).toEqual([]);

    // The statements issue 17's load read whole tables with, each now on its index.
    const indexesOf = async (pattern: RegExp) => {
      const statement = planned(sent).find((s) => pattern.test(s.text));
      expect(statement, String(pattern)).toBeDefined();
      const nodes = await planOf(h.sql, statement as SentStatement);
      return { indexes: nodes.flatMap((node) => node["Index Name"] ?? []), nodes };
    };
    expect((await indexesOf(/hold_reason is null\s+group by partnership_id/)).indexes).toContain("commissions_payable");
    expect((await indexesOf(/join commissions c2 on c2.product_id/)).indexes).toContain("commissions_payable");
    expect((await indexesOf(/as tracking_events,/)).indexes).toEqual(
      expect.arrayContaining(["tracking_events_by_customer_email", "commissions_by_event", "commissions_with_reason"]),
    );
    const stats = await indexesOf(/from parts p join daily_figures/);
    expect([...new Set(stats.nodes.flatMap((node) => node["Relation Name"] ?? []))].sort()).toEqual([
      "activity_deltas",
      "daily_rollups",
      "hourly_rollups",
    ]);
  });
});
