-- Publishable keys (contract section 17): pk_live_ / pk_test_, safe in a merchant's page, good
-- for recording clicks and nothing else. They live beside the secret keys (same hash lookup, same
-- revocation), and, being public by design, are also kept as written so the merchant can read
-- them again (GET /api/v1/keys/publishable); a secret key's text is never kept.
alter table api_keys drop constraint api_keys_mode_check;
alter table api_keys add constraint api_keys_mode_check
  check (mode in ('live', 'test', 'publishable_live', 'publishable_test'));
alter table api_keys add column publishable_key text;
alter table api_keys add constraint api_keys_publishable_text
  check ((publishable_key is not null) = (mode in ('publishable_live', 'publishable_test')));

-- A referral link (/r/CODE) names no product: its code is looked up across products, among the
-- active partnerships (a dead link records nothing).
create index partnerships_active_by_referral_code on partnerships (lower(referral_code)) where status = 'active';
