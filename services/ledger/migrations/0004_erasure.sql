-- Erasure (spec 4.11, contract 9a): finding one customer's records of a product without reading
-- the product's whole history. Clicks rarely carry an email, so the existing per-type indexes
-- (signups, payments) do not cover every event an erasure must find.
create index tracking_events_by_customer_email on tracking_events (product_id, customer_email)
  where customer_email is not null;
create index sandbox_events_by_customer_email on sandbox_events (product_id, customer_email)
  where customer_email is not null;
-- Free text that may quote an email: a product's refund and commission reasons.
create index refunds_with_reason on refunds (product_id) where reason is not null;
create index commissions_with_reason on commissions (product_id) where reason is not null;
-- Audit metadata is rare ('{}' by default); only rows that have some are searched.
create index tracking_events_with_metadata on tracking_events (product_id) where metadata <> '{}';
create index sandbox_events_with_metadata on sandbox_events (product_id) where metadata <> '{}';
