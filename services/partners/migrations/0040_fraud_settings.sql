-- Fraud settings (contract section 18): what each fraud signal does in this program, as a JSON
-- object keyed by the public names (self_referral, duplicate_click, bot, refund_rate:
-- "flag" | "reject" | "off"; refund_rate_threshold_bps: 1-10000 or null). A key left out has its
-- default (packages/platform/src/fraud-settings.ts), so the defaults can be read without a
-- backfill. The service validates the values; the database only refuses what is not an object.
alter table programs
  add column fraud jsonb not null default '{}' check (jsonb_typeof(fraud) = 'object');
