-- Affiliates' payout details (contract section 19): how each partnership is paid, set by the
-- affiliate in the portal. The details are personal data: they are kept only sealed
-- (AES-256-GCM under PAYOUT_DETAILS_ENCRYPTION_KEY, packages/platform/src/sealing.ts), answered
-- masked on every read but the payouts service's export, and deleted with the affiliate's data
-- by an erasure of the affiliate's email.
create table payout_methods (
  partnership_id text primary key references partnerships (id),
  product_id text not null references products (id),
  -- Which provider; the details' shape follows it. Not personal, so kept in clear for the export's
  -- reasons ("other_payout_method") and for counting.
  method text not null check (method in ('paypal', 'wise')),
  -- JSON of the details, sealed: nonce, tag, ciphertext.
  sealed_details bytea not null,
  updated_at timestamptz not null default now()
);
create index payout_methods_by_product on payout_methods (product_id);
