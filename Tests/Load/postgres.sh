#!/usr/bin/env bash
# PostgreSQL load, in one sitting, on a private throwaway cluster (fsync and synchronous_commit
# on: every acknowledged write is durable), each run on a fresh database:
#   1. `wallet bench`: the same mix of grants, spends, replays and overdrafts through the group
#      commit (one ledger lock and one commit per batch) and with one transaction per operation;
#   2. pgbench running the statements of one spend as the wallet runs them now (lock, key,
#      accounts, the wallet's first lots in burn order and its expired holds, head, transaction
#      row, two postings, key row, the drawn lot and its breakdown row, both balances in one
#      statement) as one transaction per spend, 64 clients;
#   3. HTTP spends with wrk through 1, 2 and 3 `wallet serve` instances on one database (64
#      connections in all, split between them).
# Needs postgresql and wrk (apt-get install -y postgresql wrk). Run as root or as a user that
# may run initdb.
#
# Usage: Tests/Load/postgres.sh [seconds per run, default 15] [bench operations, default 20000]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Load/seed.sh
seconds=${1:-15}
operations=${2:-20000}
players=100
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
swift build -c release --product wallet >/dev/null
wallet=$(swift build -c release --show-bin-path)/wallet
work=$(mktemp -d)
chmod 755 "$work"
as_owner=()
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as_owner=(runuser -u postgres --); fi
port=$(free_port)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  "${as_owner[@]}" "$bin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"${as_owner[@]}" "$bin/initdb" -D "$work/data" -U wallet --auth=trust -E UTF8 --locale=C >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w start \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB" >/dev/null
database() { "$bin/psql" -q -h 127.0.0.1 -p "$port" -U wallet -d postgres -c "CREATE DATABASE $1"; echo "postgres://wallet@127.0.0.1:$port/$1?sslmode=disable"; }

echo "== wallet bench: $operations operations, 64 callers, $players players"
"$wallet" bench --db "$(database bench_grouped)" --single-db "$(database bench_single)" --operations "$operations" --players "$players"

echo "== pgbench: one spend's statements per transaction, 64 clients, ${seconds}s (on the bench_single database)"
# The player's variable is `p`: pgbench replaces `:name` even inside a string literal, so a
# variable named `player` turned 'player:player-' into 'player42-' and the spend wrote nothing
# (as it did in the figures measured before 2026-11-25).
cat > "$work/spend.sql" <<'SQL'
\set p random(0, 99)
\set k random(1, 1000000000000)
BEGIN;
SELECT id FROM ledger_lock WHERE id = 1 FOR UPDATE;
SELECT request_hash, seq FROM idempotency_keys WHERE scope = 'spend:player-' || (:p)::text AND key = 'pgb-' || (:k)::text;
SELECT 1 FROM currencies WHERE code = 'credits';
SELECT id, balance FROM accounts WHERE owner = 'player:player-' || (:p)::text AND currency = 'credits';
SELECT id, balance FROM accounts WHERE owner = '@spend' AND currency = 'credits';
SELECT id, category, amount, remaining, created_at, expires_at, source_seq FROM lots
  WHERE account_id = (SELECT id FROM accounts WHERE owner = 'player:player-' || (:p)::text AND currency = 'credits') AND remaining > 0
  ORDER BY (CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END), expires_at, created_at, id LIMIT 4;
SELECT h.id, h.amount, h.status, h.expires_at, t.actor FROM holds h JOIN transactions t ON t.seq = h.hold_seq
  WHERE h.player_id = 'player-' || (:p)::text AND h.currency = 'credits' AND h.status = 'open'
  AND h.expires_at <= to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ORDER BY h.expires_at, h.id;
SELECT seq, hash FROM transactions ORDER BY seq DESC LIMIT 1;
INSERT INTO transactions (seq, id, kind, player_id, currency, amount, actor, created_at, idempotency_key, prev_hash, hash)
  SELECT coalesce(max(seq), 0) + 1, gen_random_uuid()::text, 'spend', 'player-' || (:p)::text, 'credits', -1, 'pgbench',
    to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'pgb-' || (:k)::text, repeat('0', 64), md5(random()::text) || md5(random()::text)
  FROM transactions;
INSERT INTO postings (seq, account_id, amount, balance_after)
  SELECT (SELECT max(seq) FROM transactions), id, -1, balance - 1 FROM accounts WHERE owner = 'player:player-' || (:p)::text AND currency = 'credits';
INSERT INTO postings (seq, account_id, amount, balance_after)
  SELECT (SELECT max(seq) FROM transactions), id, 1, balance + 1 FROM accounts WHERE owner = '@spend' AND currency = 'credits';
INSERT INTO idempotency_keys (scope, key, request_hash, seq) SELECT 'spend:player-' || (:p)::text, 'pgb-' || (:k)::text, repeat('a', 64), max(seq) FROM transactions;
UPDATE lots SET remaining = remaining - 1 WHERE id = (SELECT id FROM lots
  WHERE account_id = (SELECT id FROM accounts WHERE owner = 'player:player-' || (:p)::text AND currency = 'credits') AND remaining > 0
  ORDER BY (CASE WHEN expires_at IS NOT NULL THEN 0 WHEN category = 'paid' THEN 2 ELSE 1 END), expires_at, created_at, id LIMIT 1) RETURNING id AS lot \gset
INSERT INTO lot_draws (seq, lot_id, amount) SELECT max(seq), :lot, 1 FROM transactions;
UPDATE accounts SET balance = accounts.balance + changed.column2
  FROM (VALUES ('player:player-' || (:p)::text, -1), ('@spend', 1)) AS changed WHERE accounts.owner = changed.column1 AND accounts.currency = 'credits';
END;
SQL
# Every player gets a paid lot of a billion credits, so each spend of the run draws one (pgbench
# writes rows no ledger rule checks: this database is not verified afterwards).
"$bin/psql" -q -v ON_ERROR_STOP=1 -1 -h 127.0.0.1 -p "$port" -U wallet -d bench_single -c "INSERT INTO lots (account_id, category, amount, remaining, created_at, source_seq)
  SELECT id, 'paid', 1000000000, 1000000000, '2026-11-22T00:00:00.000Z', 1 FROM accounts WHERE owner LIKE 'player:%'" \
  -c "UPDATE accounts SET balance = balance + 1000000000 WHERE owner LIKE 'player:%'"
"$bin/pgbench" -h 127.0.0.1 -p "$port" -U wallet -n -M simple -c 64 -j 2 -T "$seconds" -f "$work/spend.sql" bench_single \
  | grep -E "number of transactions actually processed|latency average|^tps"

for instances in 1 2 3; do
  url=$(database "http_$instances")
  export WALLET_DB=$url WALLET_PLAYERS=$players
  seed_ledger
  ports=()
  for index in $(seq 1 "$instances"); do
    serve_port=$(free_port)
    WALLET_LOG_LEVEL=error "$wallet" serve --port "$serve_port" --db-pool-size 8 & pids+=($!)
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null && break; sleep 0.1; done
    ports+=("$serve_port")
  done
  echo "== HTTP spends through $instances instance(s) on one database, 64 connections in all, ${seconds}s"
  wrk_pids=()
  for index in "${!ports[@]}"; do
    WALLET_RUN="i$index" wrk -t1 -c$((64 / instances)) -d"${seconds}s" --latency -s Tests/Load/spend.lua "http://127.0.0.1:${ports[$index]}" \
      > "$work/wrk-$instances-$index.txt" & wrk_pids+=($!)
  done
  wait "${wrk_pids[@]}"
  for index in "${!ports[@]}"; do grep -E "Requests/sec|50%|99%|Non-2xx" "$work/wrk-$instances-$index.txt" | sed "s/^/  instance $index: /"; done
  python3 - "$work" "$instances" <<'PY'
import re, sys, glob
total = sum(float(re.search(r"Requests/sec:\s+([\d.]+)", open(f).read()).group(1)) for f in glob.glob(f"{sys.argv[1]}/wrk-{sys.argv[2]}-*.txt"))
print(f"  total: {total:.0f} spends/s")
PY
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=()
  "$wallet" verify
done
