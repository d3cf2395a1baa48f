-- Why the last attempt got no answer ("connect ECONNREFUSED 127.0.0.1:9", "timeout after 15 s"),
-- beside last_status_code, so a delivery that failed says why without reading its attempts
-- (issue 23 item 6). Null when the last attempt was answered or none was made. A nullable column
-- without a default: no table rewrite.
alter table deliveries add column last_error text;
