-- Affiliate access (contract section 14): the merchant's own id for a partnership, the bearer
-- tokens an affiliate reads its own partnership with, and the one-time sign-in codes.

-- Unique per product, compared exactly (it is the merchant's id, as the merchant spells it).
alter table partnerships
  add column external_id text check (char_length(external_id) between 1 and 128);
create unique index partnerships_external_id_unique on partnerships (product_id, external_id)
  where external_id is not null;

-- Tokens ("apt_…") are stored only as SHA-256 hashes; like API keys they are 192 random bits,
-- so a fast hash is enough. A token lives until expires_at, or until it is deleted: on
-- revocation, and when its partnership stops being active (a token never comes back to life
-- with a reactivated partnership).
create table affiliate_tokens (
  token_hash bytea primary key,
  product_id text not null references products (id),
  partnership_id text not null references partnerships (id),
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
-- Revocation deletes by partnership; minting a token deletes that partnership's expired ones, so
-- the table holds about one row per token still alive.
create index affiliate_tokens_by_partnership on affiliate_tokens (partnership_id);

-- A sign-in by email: recorded when the email has an active partnership, its code issued to the
-- notifier (only the code's hash is kept, replaced at each issue) and used once.
create table affiliate_logins (
  id text primary key,
  product_id text not null references products (id),
  partnership_id text not null references partnerships (id),
  code_hash bytea unique,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
-- Requesting a sign-in deletes the partnership's expired logins, as minting does expired tokens.
create index affiliate_logins_by_partnership on affiliate_logins (partnership_id);
