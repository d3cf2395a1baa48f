-- What each erasure changed in this service's stores (the ErasureOwnerService's answer). A batch
-- of an erasure adds its count in the transaction that changes the records, so the count
-- survives a crash of either side: the privacy service's repeat of a call with the same erasure
-- id answers the whole count, not only what the repeat found. Holds ids and counts, never an
-- email.
create table erasure_counts (
  erasure_id text not null,
  store text not null,
  records bigint not null default 0 check (records >= 0),
  updated_at timestamptz not null default now(),
  primary key (erasure_id, store)
);
