-- The job worker counts a group's leases per endpoint of the due candidates (packages/platform,
-- job-worker.ts): an index on the endpoint over the leased rows alone (few: those in flight, and
-- those of a run that crashed until they are claimed again) makes that count an index read
-- however many deliveries the endpoint has. It replaces the index on leased_until alone, which
-- served the count over every endpoint that the claim no longer makes.
create index deliveries_leased_by_endpoint on deliveries (endpoint_id, leased_until) where leased_until is not null;
drop index deliveries_leased;

-- An erasure reads the product's stored payloads (a refund's free-text reason may quote the
-- email anywhere): with the product as the leading column of the customer index, and every row
-- in it, that is an index read of one product's deliveries instead of a scan of every product's.
-- Same count of indexes to maintain per delivery as before.
create index deliveries_by_product_customer on deliveries (product_id, (payload -> 'data' ->> 'customer_email'));
drop index deliveries_by_customer;
