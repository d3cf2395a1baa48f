-- The partners schema: tenants (products), their keys and program settings, the affiliates'
-- shared profiles, and the partnerships joining the two.

create table products (
  id text primary key,
  name text not null check (char_length(name) between 1 and 200),
  created_at timestamptz not null default now()
);

-- One row per product; defaults are the contract's (section 3).
create table programs (
  product_id text primary key references products (id),
  commission_rate_bps integer not null default 2000 check (commission_rate_bps between 0 and 10000),
  tier2_rate_bps integer not null default 500 check (tier2_rate_bps between 0 and 10000),
  hold_days integer not null default 30 check (hold_days between 0 and 365),
  payout_minimum_cents bigint not null default 5000 check (payout_minimum_cents >= 0),
  attribution_window_days integer not null default 60 check (attribution_window_days between 1 and 365),
  auto_approve boolean not null default true,
  currency text not null default 'usd',
  updated_at timestamptz not null default now()
);

-- Secret keys are stored only as SHA-256 hashes. Keys are 192 random bits, so a fast hash is
-- enough: there is nothing to brute-force that a slow hash would protect.
create table api_keys (
  key_hash bytea primary key,
  product_id text not null references products (id),
  mode text not null check (mode in ('live', 'test')),
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_active_by_product on api_keys (product_id) where revoked_at is null;

-- A person's profile, shared by every program they join. Emails are stored trimmed and
-- lowercased, so equality is exact.
create table affiliates (
  id text primary key,
  email text not null unique,
  name text not null default '',
  country_last_ip text,
  created_at timestamptz not null default now()
);

create table partnerships (
  id text primary key,
  product_id text not null references products (id),
  affiliate_id text not null references affiliates (id),
  status text not null check (status in ('active', 'pending', 'rejected', 'removed')),
  referral_code text not null check (referral_code ~ '^[A-Za-z0-9_-]{3,50}$'),
  sponsor_partnership_id text references partnerships (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint partnerships_one_per_affiliate unique (product_id, affiliate_id)
);
-- Codes are unique per product regardless of case: "ACME" and "acme" would be the same link.
create unique index partnerships_referral_code_unique on partnerships (product_id, lower(referral_code));
-- Ids are time-ordered (UUIDv7), so "newest first" pages on the id alone.
create index partnerships_newest_first on partnerships (product_id, id desc);
create index partnerships_by_status_newest_first on partnerships (product_id, status, id desc);
