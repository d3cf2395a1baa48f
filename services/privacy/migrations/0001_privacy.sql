-- The privacy schema: erasure requests and their receipts. No email is stored here in the clear:
-- a request is known by a keyed hash of the normalised email. While an erasure runs, the email
-- is kept sealed (AES-256-GCM) so the saga can resume after a crash; the transaction that
-- completes the erasure deletes it.
create table erasures (
  id text primary key,
  product_id text not null,
  -- HMAC-SHA256 (ERASURE_HASH_KEY) of the normalised email, hex: lists receipts by email.
  email_hash text not null,
  -- The sealed email (nonce, tag, ciphertext), only while running.
  sealed_email bytea,
  status text not null check (status in ('running', 'completed')),
  requested_at timestamptz not null default now(),
  completed_at timestamptz,
  verified_at timestamptz,
  -- Whoever runs the saga owns it until then; afterwards the resume job may take it over.
  lease_until timestamptz not null,
  attempts integer not null default 0,
  check ((status = 'running') = (sealed_email is not null)),
  check ((status = 'completed') = (completed_at is not null))
);
create index erasures_by_email on erasures (product_id, email_hash, requested_at desc);
-- The resume job's work list.
create index erasures_running on erasures (lease_until) where status = 'running';

-- The owners an erasure calls (fixed when it is requested) and how far each got.
create table erasure_owners (
  erasure_id text not null references erasures (id),
  owner text not null,
  erased_at timestamptz,
  primary key (erasure_id, owner)
);

-- Each owner's answer: records changed per store (what the receipt shows).
create table erasure_stores (
  erasure_id text not null references erasures (id),
  owner text not null,
  store text not null,
  records bigint not null check (records >= 0),
  primary key (erasure_id, owner, store)
);
