-- Attribution without merchant code (contract section 17).
--
-- What the gateway records of a click it takes itself (a referral link, the browser script): a
-- keyed hash of the visitor's address instead of the address, and the host of the referring
-- page. Both are null for events reported with POST /events.
--
-- How an event found its partnership (`attribution`): link (a referral code sent with the event),
-- metadata (Stripe's metadata.referral_code), coupon (a promotion code mapped to the partnership),
-- visitor (the visitor's click), or, for a payment credited through the customer's signup, the
-- signup's own; `signup` for signups recorded before this column. Null when unattributed.
-- Commissions read it from their payment's event.
-- (ip_hash "if not exists": the fraud checks' migration 0040 adds it to tracking_events too.)
alter table tracking_events
  add column if not exists ip_hash text,
  add column referrer_host text,
  add column attribution text check (attribution in ('link', 'metadata', 'coupon', 'visitor', 'signup'));
alter table sandbox_events
  add column if not exists ip_hash text,
  add column referrer_host text,
  add column attribution text check (attribution in ('link', 'metadata', 'coupon', 'visitor', 'signup'));
