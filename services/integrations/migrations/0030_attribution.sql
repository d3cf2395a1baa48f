-- Attribution without merchant code (contract section 17).

-- Customers a customer.* or checkout session event has been applied for, referred or not: a
-- payment of a customer not seen yet, that nothing else attributes, waits for its customer's
-- event (Stripe does not promise order), up to 10 minutes.
create table stripe_customers_seen (
  product_id text not null,
  customer_id text not null,
  seen_at timestamptz not null default now(),
  primary key (product_id, customer_id)
);

-- A payment waiting for its customer's event: woken when that event is applied.
alter table stripe_events add column awaits_customer text;
create index stripe_events_awaiting_customer on stripe_events (product_id, awaits_customer)
  where outcome = 'waiting' and awaits_customer is not null;

-- Stripe promotion codes mapped to partnerships (PUT /api/v1/affiliates/:id/coupons): an invoice
-- or session whose discount uses one is attributed to that partnership. `code` is kept
-- lowercased (Stripe's codes are case-insensitive); a promotion code's id (promo_…) may be mapped
-- too, for payloads that carry only the id.
create table stripe_promotion_codes (
  product_id text not null,
  code text not null,
  partnership_id text not null,
  referral_code text not null,
  created_at timestamptz not null default now(),
  primary key (product_id, code)
);
create index stripe_promotion_codes_by_partnership on stripe_promotion_codes (product_id, partnership_id);
