import type { Queryable } from "@affiliate/platform";
import type { HoldReason, HoldResolution } from "../domain/types.js";

/** Open, or closed as it was resolved. */
export type HoldState = "held" | HoldResolution;

/**
 * The column's word for a lifted hold is 'released' (0008_commission_holds.sql, read by replicas of
 * every version during a rollout); the code says lifted, as HoldResolution does.
 */
const storedState = (state: HoldState) => (state === "lifted" ? "released" : state);

export interface HoldRow {
  holdId: string;
  eventId: string;
  reason: HoldReason;
  state: HoldState;
}

/** The hold a provider named `holdId` for this product, if any was recorded. */
export async function getHold(sql: Queryable, productId: string, holdId: string): Promise<HoldRow | undefined> {
  const [row] = await sql<HoldRow[]>`
    select hold_id, event_id, reason, case state when 'released' then 'lifted' else state end as state
    from commission_holds
    where product_id = ${productId} and hold_id = ${holdId}`;
  return row;
}

export async function insertHold(sql: Queryable, hold: HoldRow & { productId: string }): Promise<void> {
  await sql`
    insert into commission_holds (product_id, hold_id, event_id, reason, state, closed_at)
    values (${hold.productId}, ${hold.holdId}, ${hold.eventId}, ${hold.reason}, ${storedState(hold.state)},
            ${hold.state === "held" ? null : new Date()})`;
}

export async function closeHold(
  sql: Queryable,
  productId: string,
  holdId: string,
  resolution: HoldResolution,
): Promise<void> {
  await sql`
    update commission_holds set state = ${storedState(resolution)}, closed_at = now()
    where product_id = ${productId} and hold_id = ${holdId}`;
}

/** The reason of one of the payment's open holds (the oldest); undefined when none is open. */
export async function openHoldReasonOf(sql: Queryable, eventId: string): Promise<HoldReason | undefined> {
  const [row] = await sql<{ reason: HoldReason }[]>`
    select reason from commission_holds where event_id = ${eventId} and state = 'held'
    order by created_at limit 1`;
  return row?.reason;
}

/** Sets (or, with null, lifts) the hold of these commissions. */
export async function setHoldReason(sql: Queryable, ids: string[], reason: HoldReason | null): Promise<void> {
  if (ids.length === 0) return;
  await sql`update commissions set hold_reason = ${reason}, updated_at = now() where id in ${sql(ids)}`;
}

/**
 * Holds those of these commissions (just unlinked from a payout) whose payment has an open hold,
 * with that hold's reason; the caller holds their row locks.
 */
export async function holdAgainWhileDisputed(sql: Queryable, ids: string[]): Promise<void> {
  await sql`
    update commissions c set hold_reason = h.reason, updated_at = now()
    from (select distinct on (event_id) event_id, reason from commission_holds
          where state = 'held' and event_id in (select event_id from commissions where id = any(${ids}::text[]))
          order by event_id, created_at) h
    where c.id = any(${ids}::text[]) and c.event_id = h.event_id and c.hold_reason is null
      and c.status in ('pending', 'approved') and c.payout_id is null`;
}
