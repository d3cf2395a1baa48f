-- Issue 17: statements that read a whole table under load, each made an index read.
--
-- A product's payable balances (payout generation, every run) and the claims that link them to
-- payouts read the product's approved, unlinked commissions: without this index, all of the
-- product's commissions (a sequential scan once the product holds most of the table). With it,
-- exactly the payable rows, in the order both statements want them (the balance read never
-- touches the table).
create index commissions_payable on commissions (product_id, partnership_id, id) include (amount_cents)
  where status = 'approved' and payout_id is null;

-- Only the partial days at the edges of a stats window read these, and stats now read the hourly
-- rollups instead (0005): every event and commission no longer pays for two index entries nobody
-- reads.
drop index tracking_events_by_time;
drop index commissions_by_payment_time;
