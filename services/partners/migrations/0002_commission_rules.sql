-- Commission rules (contract section 12): how level 1 is computed (a percentage or a flat
-- amount), how long a customer's payments earn (calendar months after the customer's first
-- payment to the partnership, or a number of payments), and the affiliates' link template.
-- Null limits mean none (lifetime, unlimited). Defaults leave every existing program as it was.
alter table programs
  add column commission_type text not null default 'percent' check (commission_type in ('percent', 'flat')),
  add column commission_flat_cents bigint not null default 0
    check (commission_flat_cents between 0 and 100000000000),
  add column max_commission_months integer check (max_commission_months between 1 and 120),
  add column max_commission_payments integer check (max_commission_payments between 1 and 1000),
  add column referral_url_template text check (referral_url_template like '%{code}%'),
  -- A flat program without an amount would silently pay nothing.
  add constraint programs_flat_has_amount check (commission_type = 'percent' or commission_flat_cents > 0);

-- A partnership's own terms over the program's: a JSON object whose keys are the public field
-- names it overrides (commission_type, commission_rate_bps, commission_flat_cents,
-- tier2_rate_bps, max_commission_months, max_commission_payments); a key left out inherits the
-- program's, a limit set to JSON null means no limit for this partnership. Null: no override.
-- The service validates the values; the database only refuses what is not an object.
alter table partnerships
  add column commission_override jsonb
    check (commission_override is null or jsonb_typeof(commission_override) = 'object');
