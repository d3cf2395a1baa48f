import { DomainError, type Queryable } from "@affiliate/platform";
import type { Affiliate, CommissionOverride, Partnership, PartnershipStatus } from "../domain/types.js";

interface PartnershipRow {
  id: string;
  productId: string;
  status: PartnershipStatus;
  referralCode: string;
  createdAt: Date;
  sponsorPartnershipId: string | null;
  affiliateId: string;
  affiliateEmail: string;
  affiliateName: string;
  commissionOverride: CommissionOverride | null;
  externalId: string | null;
}

const toPartnership = (row: PartnershipRow): Partnership => ({
  id: row.id,
  productId: row.productId,
  status: row.status,
  referralCode: row.referralCode,
  createdAt: row.createdAt,
  sponsorPartnershipId: row.sponsorPartnershipId,
  affiliate: { id: row.affiliateId, email: row.affiliateEmail, name: row.affiliateName },
  commissionOverride: row.commissionOverride,
  externalId: row.externalId,
});

const selectPartnership = (sql: Queryable) => sql`
  select p.id, p.product_id, p.status, p.referral_code, p.created_at, p.sponsor_partnership_id,
         p.commission_override, p.external_id, a.id as affiliate_id, a.email as affiliate_email, a.name as affiliate_name
  from partnerships p join affiliates a on a.id = p.affiliate_id`;

/** Tenancy is part of the lookup: another product's partnership is simply not found. */
export async function getPartnershipOrThrow(sql: Queryable, productId: string, id: string): Promise<Partnership> {
  const [row] = await sql<PartnershipRow[]>`
    ${selectPartnership(sql)} where p.product_id = ${productId} and p.id = ${id}`;
  if (!row) throw new DomainError("not_found", `Affiliate ${id} not found`);
  return toPartnership(row);
}

/** The affiliate's partnership in this product, locked for the caller's transaction. */
export async function lockPartnershipOfAffiliate(
  sql: Queryable,
  productId: string,
  affiliateId: string,
): Promise<{ id: string; status: PartnershipStatus } | undefined> {
  const [row] = await sql<{ id: string; status: PartnershipStatus }[]>`
    select id, status from partnerships
    where product_id = ${productId} and affiliate_id = ${affiliateId}
    for update`;
  return row;
}

export async function lockPartnershipOrThrow(
  sql: Queryable,
  productId: string,
  id: string,
): Promise<{ id: string; status: PartnershipStatus }> {
  const [row] = await sql<{ id: string; status: PartnershipStatus }[]>`
    select id, status from partnerships where product_id = ${productId} and id = ${id} for update`;
  if (!row) throw new DomainError("not_found", `Affiliate ${id} not found`);
  return row;
}

export async function findActivePartnershipByCode(
  sql: Queryable,
  productId: string,
  referralCode: string,
): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }[]>`
    select id from partnerships
    where product_id = ${productId} and lower(referral_code) = lower(${referralCode}) and status = 'active'`;
  return row;
}

export async function insertPartnership(
  sql: Queryable,
  partnership: {
    id: string;
    productId: string;
    affiliateId: string;
    status: PartnershipStatus;
    referralCode: string;
    sponsorPartnershipId: string | null;
    externalId: string | null;
  },
): Promise<void> {
  await sql`
    insert into partnerships (id, product_id, affiliate_id, status, referral_code, sponsor_partnership_id, external_id)
    values (${partnership.id}, ${partnership.productId}, ${partnership.affiliateId}, ${partnership.status},
            ${partnership.referralCode}, ${partnership.sponsorPartnershipId}, ${partnership.externalId})`;
}

/** The constraint a taken external id breaks, for callers that turn it into ALREADY_EXISTS. */
export const externalIdConstraint = "partnerships_external_id_unique";

/** Sets (or with null removes) the merchant's id; a taken one breaks externalIdConstraint. */
export async function setExternalId(sql: Queryable, id: string, externalId: string | null): Promise<void> {
  await sql`update partnerships set external_id = ${externalId}, updated_at = now() where id = ${id}`;
}

export async function setPartnershipStatus(sql: Queryable, id: string, status: PartnershipStatus): Promise<void> {
  await sql`update partnerships set status = ${status}, updated_at = now() where id = ${id}`;
}

/**
 * Stores the partnership's commission override (null removes it). The stored object's keys are
 * the public field names (the database's convention; reads come back camelCased); an explicit
 * null limit is kept, as it means "no limit" rather than "inherit".
 */
export async function setCommissionOverride(
  sql: Queryable,
  id: string,
  override: CommissionOverride | null,
): Promise<void> {
  const stored =
    override === null
      ? null
      : Object.fromEntries(
          Object.entries(override)
            .filter(([, value]) => value !== undefined)
            .map(([field, value]) => [field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]),
        );
  await sql`
    update partnerships set commission_override = ${stored === null ? null : sql.json(stored)}, updated_at = now()
    where id = ${id}`;
}

/** One page, newest first, after the keyset position `afterId`; `limit + 1` rows tell whether more exist. */
export async function listPartnerships(
  sql: Queryable,
  query: {
    productId: string;
    status: PartnershipStatus | undefined;
    externalId: string | undefined;
    email?: string | undefined;
    referralCode?: string | undefined;
    afterId: string | undefined;
    limit: number;
  },
): Promise<Partnership[]> {
  const rows = await sql<PartnershipRow[]>`
    ${selectPartnership(sql)}
    where p.product_id = ${query.productId}
      ${query.status ? sql`and p.status = ${query.status}` : sql``}
      ${query.externalId !== undefined ? sql`and p.external_id = ${query.externalId}` : sql``}
      ${query.email !== undefined ? sql`and a.email = ${query.email}` : sql``}
      ${query.referralCode !== undefined ? sql`and lower(p.referral_code) = lower(${query.referralCode})` : sql``}
      ${query.afterId ? sql`and p.id < ${query.afterId}` : sql``}
    order by p.id desc
    limit ${query.limit}`;
  return rows.map(toPartnership);
}

/** Inserts the profile unless the email exists; returns the profile and whether it is new. */
export async function upsertAffiliate(
  sql: Queryable,
  affiliate: Affiliate,
): Promise<{ affiliate: Affiliate; isNew: boolean }> {
  const [inserted] = await sql<Affiliate[]>`
    insert into affiliates (id, email, name) values (${affiliate.id}, ${affiliate.email}, ${affiliate.name})
    on conflict (email) do nothing
    returning id, email, name`;
  if (inserted) return { affiliate: inserted, isNew: true };
  const [existing] = await sql<Affiliate[]>`select id, email, name from affiliates where email = ${affiliate.email}`;
  if (!existing) throw new Error("affiliate profile vanished between insert and select");
  return { affiliate: existing, isNew: false };
}

export async function getPartnershipsByIds(sql: Queryable, productId: string, ids: string[]): Promise<Partnership[]> {
  if (ids.length === 0) return [];
  const rows = await sql<PartnershipRow[]>`
    ${selectPartnership(sql)} where p.product_id = ${productId} and p.id in ${sql(ids)}`;
  return rows.map(toPartnership);
}

export interface AttributionRow {
  id: string;
  referralCode: string;
  status: PartnershipStatus;
  sponsorPartnershipId: string | null;
  sponsorStatus: PartnershipStatus | null;
  commissionOverride: CommissionOverride | null;
  /** The affiliate's email; null once the profile was scrubbed. */
  affiliateEmail: string | null;
}

/** The partnership a code or id names, with its sponsor's status. */
export async function findAttribution(
  sql: Queryable,
  productId: string,
  target: { referralCode: string } | { partnershipId: string },
): Promise<AttributionRow | undefined> {
  const [row] = await sql<AttributionRow[]>`
    select p.id, p.referral_code, p.status, p.sponsor_partnership_id, s.status as sponsor_status, p.commission_override,
      a.email as affiliate_email
    from partnerships p join affiliates a on a.id = p.affiliate_id
      left join partnerships s on s.id = p.sponsor_partnership_id
    where p.product_id = ${productId}
      and ${"referralCode" in target ? sql`lower(p.referral_code) = lower(${target.referralCode})` : sql`p.id = ${target.partnershipId}`}`;
  return row;
}

export async function countPartnerships(
  sql: Queryable,
  productId: string,
  status: PartnershipStatus | undefined,
): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int8 as count from partnerships
    where product_id = ${productId} ${status ? sql`and status = ${status}` : sql``}`;
  return row?.count ?? 0;
}
