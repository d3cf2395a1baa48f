-- Merchant console sessions (contract section 19): a secret key pasted once in the console is
-- exchanged for a short-lived bearer token ("cst_…") that the console keeps in memory only.
-- Stored only as SHA-256 hashes (192 random bits, like API keys and affiliate tokens). A session
-- lives until expires_at, until it is closed (sign-out), or until the product's keys are rotated:
-- it was bought with a key, so it dies with it.
create table console_sessions (
  token_hash bytea primary key,
  product_id text not null references products (id),
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
-- Rotation deletes by product; opening a session deletes the product's expired ones, so the
-- table holds about one row per session still alive.
create index console_sessions_by_product on console_sessions (product_id);
