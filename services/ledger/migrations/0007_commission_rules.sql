-- Commission rules (contract section 12).

-- A customer's attributed live payments to one partnership: how many were recorded and when the
-- first occurred, the anchor of max_commission_months and the count behind
-- max_commission_payments. A payment locks its row (insert ... on conflict do update) in the
-- transaction that records it, so two payments of one customer racing for the last earning
-- number are numbered one after the other. The row is never decremented: a refunded or rejected
-- payment keeps its number and a refunded first payment still anchors the window.
--
-- The customer is provider_customer_id, else the email (a payment with neither has no row: it is
-- its own first payment). The key is a SHA-256 of "pcid:<id>" or "email:<email>", so no
-- customer's email or provider id is written here (an erasure has nothing to find in this table;
-- the customer's limits keep holding after it).
create table customer_payment_counters (
  product_id text not null,
  partnership_id text not null,
  customer_key text not null,
  payments integer not null check (payments > 0),
  first_payment_at timestamptz not null,
  -- The payment that anchors the window (its event), for operators tracing a limit.
  first_event_id text not null,
  primary key (product_id, partnership_id, customer_key)
);

-- The payments recorded before this migration, counted in the order they were recorded.
insert into customer_payment_counters (product_id, partnership_id, customer_key, payments, first_payment_at, first_event_id)
select product_id, partnership_id, customer_key, count(*),
       (array_agg(occurred_at order by created_at, id))[1], (array_agg(id order by created_at, id))[1]
from (
  select product_id, partnership_id, occurred_at, created_at, id,
         encode(sha256(convert_to(case when provider_customer_id is not null then 'pcid:' || provider_customer_id
                                       else 'email:' || customer_email end, 'UTF8')), 'hex') as customer_key
  from tracking_events
  where event_type = 'payment' and partnership_id is not null
    and (provider_customer_id is not null or customer_email is not null)
) payments
group by product_id, partnership_id, customer_key;

-- The rule each commission was made with, frozen at creation (null on commissions created before
-- rules were recorded). Refunds scale original_amount_cents, never a recomputation from these.
alter table commissions
  add column rule_source text check (rule_source in ('program', 'partnership')),
  add column rule_type text check (rule_type in ('percent', 'flat')),
  add column rule_rate_bps integer check (rule_rate_bps between 0 and 10000),
  add column rule_flat_cents bigint check (rule_flat_cents >= 0),
  add column rule_payment_number integer check (rule_payment_number >= 1),
  add column rule_first_payment_at timestamptz,
  add constraint commissions_rule_whole check (
    (rule_source is null and rule_type is null and rule_rate_bps is null and rule_flat_cents is null
      and rule_payment_number is null and rule_first_payment_at is null)
    or (rule_source is not null and rule_payment_number is not null and rule_first_payment_at is not null
      and ((rule_type = 'percent' and rule_rate_bps is not null and rule_flat_cents is null)
        or (rule_type = 'flat' and rule_flat_cents is not null and rule_rate_bps is null))));

-- Why an attributed payment earned nothing, answered again on a replay.
alter table tracking_events
  add column commission_skipped text check (commission_skipped in ('max_commission_months', 'max_commission_payments'));
alter table sandbox_events
  add column commission_skipped text check (commission_skipped in ('max_commission_months', 'max_commission_payments'));
