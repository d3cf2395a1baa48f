import { DomainError, type Queryable } from "@affiliate/platform";
import type { Program, ProgramChanges } from "../domain/types.js";

const programColumns = (sql: Queryable) => sql`
  g.product_id, p.name, g.commission_rate_bps, g.tier2_rate_bps, g.hold_days, g.payout_minimum_cents,
  g.attribution_window_days, g.auto_approve, g.currency, g.commission_type, g.commission_flat_cents,
  g.max_commission_months, g.max_commission_payments, g.referral_url_template`;

/** The program; `forUpdate` locks its row for the caller's transaction (a change checks the result). */
export async function getProgramOrThrow(sql: Queryable, productId: string, forUpdate = false): Promise<Program> {
  const [row] = await sql<Program[]>`
    select ${programColumns(sql)} from programs g join products p on p.id = g.product_id
    where g.product_id = ${productId} ${forUpdate ? sql`for update of g` : sql``}`;
  if (!row) throw new DomainError("not_found", `Product ${productId} not found`);
  return row;
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
  if (Object.keys(set).length === 0) return;
  await sql`update programs set ${sql(set)}, updated_at = now() where product_id = ${productId}`;
}
