#!/usr/bin/env bash
# Issue 28: how many single-row INSERT commits per second Postgres takes with and without a
# statement trigger that sends a NOTIFY (as the outbox and the job tables had). Postgres commits
# notifying transactions one at a time (a global lock held through the WAL flush), so they lose
# group commit. Runs each case twice, alternating, on a scratch database it drops afterwards.
#   bench/pgbench/notify-commits.sh [postgres-url-without-database] [clients] [seconds]
set -euo pipefail
base="${1:-postgres://postgres@127.0.0.1:5432}"
clients="${2:-16}"
seconds="${3:-8}"
db="notify_commits_$$"
work="$(mktemp -d)"
trap 'psql "$base/postgres" -qc "drop database if exists $db" >/dev/null; rm -rf "$work"' EXIT
psql "$base/postgres" -qc "create database $db"
psql "$base/$db" -q <<'SQL'
create table plain (id bigint generated always as identity, v int);
create table notifying (id bigint generated always as identity, v int);
create function notify_it() returns trigger language plpgsql as $$ begin perform pg_notify('bench', ''); return null; end $$;
create trigger notifying_insert after insert on notifying for each statement execute function notify_it();
SQL
echo "insert into plain (v) values (1);" > "$work/plain.sql"
echo "insert into notifying (v) values (1);" > "$work/notifying.sql"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); autovacuum: $(psql "$base/$db" -Atc 'show autovacuum'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2; do
  for table in plain notifying; do
    tps="$(pgbench "$base/$db" -n -c "$clients" -j 2 -T "$seconds" -f "$work/$table.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')"
    echo "round $round  $table: $tps commits/s ($clients clients, $seconds s)"
  done
done
