-- Provider result files imported (contract section 19): one row per distinct file of a product,
-- keyed by its SHA-256, written in the transaction that applies the file's lines. A second
-- import of the same bytes finds the row and changes nothing; two at once queue on the key, and
-- the second finds the first's row once it commits (or applies the file itself if it rolled back).
create table payout_imports (
  product_id text not null,
  file_sha256 bytea not null check (octet_length(file_sha256) = 32),
  format text not null check (format in ('csv', 'paypal', 'wise')),
  paid_count integer not null check (paid_count >= 0),
  failed_count integer not null check (failed_count >= 0),
  unchanged_count integer not null check (unchanged_count >= 0),
  pending_count integer not null check (pending_count >= 0),
  imported_at timestamptz not null default now(),
  primary key (product_id, file_sha256)
);
