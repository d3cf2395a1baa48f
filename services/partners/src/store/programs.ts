import { defaultFraudSettings, type FraudSettings } from "@affiliate/contract-rules";
import { DomainError, type Queryable } from "@affiliate/platform";
import type { Program, ProgramChanges } from "../domain/types.js";

const programColumns = (sql: Queryable) => sql`
  g.product_id, p.name, g.commission_rate_bps, g.tier2_rate_bps, g.hold_days, g.payout_minimum_cents,
  g.attribution_window_days, g.auto_approve, g.currency, g.commission_type, g.commission_flat_cents,
  g.max_commission_months, g.max_commission_payments, g.referral_url_template, g.fraud`;

/** The stored fraud settings (only the keys ever set) over the defaults. */
const withFraudDefaults = (row: Omit<Program, "fraud"> & { fraud: Partial<FraudSettings> }): Program => ({
  ...row,
  fraud: { ...defaultFraudSettings, ...row.fraud },
});

/** The program; `forUpdate` locks its row for the caller's transaction (a change checks the result). */
export async function getProgramOrThrow(sql: Queryable, productId: string, forUpdate = false): Promise<Program> {
  const [row] = await sql<(Omit<Program, "fraud"> & { fraud: Partial<FraudSettings> })[]>`
    select ${programColumns(sql)} from programs g join products p on p.id = g.product_id
    where g.product_id = ${productId} ${forUpdate ? sql`for update of g` : sql``}`;
  if (!row) throw new DomainError("not_found", `Product ${productId} not found`);
  return withFraudDefaults(row);
}

export async function updateProgram(sql: Queryable, productId: string, changes: ProgramChanges): Promise<void> {
  const columns = {
    commission_rate_bps: changes.commissionRateBps,
    tier2_rate_bps: changes.tier2RateBps,
    hold_days: changes.holdDays,
    payout_minimum_cents: changes.payoutMinimumCents,
    attribution_window_days: changes.attributionWindowDays,
    auto_approve: changes.autoApprove,
    commission_type: changes.commissionType,
    commission_flat_cents: changes.commissionFlatCents,
    max_commission_months: changes.maxCommissionMonths,
    max_commission_payments: changes.maxCommissionPayments,
    referral_url_template: changes.referralUrlTemplate,
  };
  const set = Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
  const fraud = storedFraud(changes.fraud ?? {});
  // postgres.js writes an object as `column = value, …` only right after `set`: one statement each.
  if (Object.keys(set).length > 0) {
    await sql`update programs set ${sql(set)}, updated_at = now() where product_id = ${productId}`;
  }
  if (Object.keys(fraud).length > 0) {
    await sql`update programs set fraud = fraud || ${sql.json(fraud)}, updated_at = now() where product_id = ${productId}`;
  }
}

/** The fraud changes as stored: keyed by the public names, only those given. */
function storedFraud(changes: Partial<FraudSettings>): Record<string, string | number | null> {
  const keys: Record<keyof FraudSettings, string> = {
    selfReferral: "self_referral",
    duplicateClick: "duplicate_click",
    bot: "bot",
    refundRate: "refund_rate",
    refundRateThresholdBps: "refund_rate_threshold_bps",
  };
  return Object.fromEntries(
    Object.entries(changes)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => [keys[key as keyof FraudSettings], value as string | number | null]),
  );
}
