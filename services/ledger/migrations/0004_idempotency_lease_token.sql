-- A reservation's lease now ends with the request's deadline (at most a few seconds), so a key
-- whose request died is free again quickly. The token fences a request that outlived its lease:
-- it stores its outcome only while its token is still the reservation's, in the transaction of
-- its effect, so a request that took the key over and the one it replaced never both apply.
alter table idempotency_keys add column lease_token text;
