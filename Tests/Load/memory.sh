#!/usr/bin/env bash
# Memory and growth (release build, SQLite, synchronous=FULL):
#   1. `wallet serve` (group commit) answers durable HTTP spends (wrk -t2 -c64, Tests/Load/spend.lua,
#      100 players) in rounds of 30 s until at least SPENDS were answered; then its resident memory
#      (VmRSS) and peak (VmHWM), the database's size and its bytes per spend (file size once the
#      server has stopped and the WAL is checkpointed, divided by the spends in the ledger).
#   2. A ledger of at least ROWS rows (transactions, postings, lot draws, keys and lots) built with
#      `wallet bench --no-single`, then `wallet serve` on it under the same spends for 30 s: its
#      resident memory and peak again. Each ledger is verified afterwards.
# Needs wrk and sqlite3 (apt-get install -y wrk sqlite3).
#
# Usage: Tests/Load/memory.sh [spends, default 1000000] [rows, default 10000000]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Load/seed.sh
spends=${1:-1000000}
rows=${2:-10000000}
players=100
export WALLET_PLAYERS=$players
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing: apt-get install -y sqlite3" >&2; exit 1; }
load_setup

memory() { # memory <label>: the server's resident memory now and at its peak
  awk -v label="$1" '/^VmRSS|^VmHWM/ { value[$1] = $2 } END { printf "%s: resident %.0f MiB, peak %.0f MiB\n", label, value["VmRSS:"] / 1024, value["VmHWM:"] / 1024 }' "/proc/$server_pid/status"
}

# spend_for <seconds> <round>: prints how many spends wrk had answered with 201; any other
# answer or a socket error fails the run
spend_for() {
  WALLET_RUN="round-$2" wrk -t2 -c64 -d"$1s" --latency -s Tests/Load/spend.lua "http://127.0.0.1:$port" \
    | awk '/^requests/ { gsub(",", "", $2); gsub(",", "", $7); if ($7 != 0) { print "wrk: " $7 " failed requests" > "/dev/stderr"; exit 1 } print $2 }'
}

count() { sqlite3 "$WALLET_DB" "SELECT $1"; }

echo "== 1. $spends spends through wallet serve"
export WALLET_DB="$work/spends.sqlite"
seed_ledger
start_server grouped
memory "after start"
done_spends=0
round=0
while [ "$done_spends" -lt "$spends" ]; do
  round=$((round + 1))
  started=$(date +%s.%N)
  answered=$(spend_for 30 "$round")
  done_spends=$((done_spends + answered))
  awk -v n="$answered" -v t0="$started" -v t1="$(date +%s.%N)" -v total="$done_spends" 'BEGIN { printf "round: %d spends, %.0f/s, %d in all\n", n, n / (t1 - t0), total }'
done
memory "after $done_spends spends"
stop_server
"$wallet" verify
ledger_spends=$(count "count(*) FROM transactions WHERE kind = 'spend'")
bytes=$(stat -c %s "$WALLET_DB")
[ "$ledger_spends" -gt 0 ] || { echo "no spend reached the ledger" >&2; exit 1; }
echo "database: $((bytes / 1048576)) MiB for $ledger_spends spends: $((bytes / ledger_spends)) bytes per spend (every table and index)"
sqlite3 "$WALLET_DB" "SELECT name, printf('%.1f MiB', sum(pgsize) / 1048576.0) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC LIMIT 8" 2>/dev/null || true

echo "== 2. a ledger of at least $rows rows, then wallet serve on it"
export WALLET_DB="$work/bench/grouped.sqlite"
# A bench operation that writes makes four or five rows (its transaction, two postings and a key;
# a grant also a lot, a spend a lot draw), but replays, overdrafts and the spends that find their
# wallet empty write none: about 2.7 rows per operation with 10,000 players.
"$wallet" bench --db "$work/bench" --operations $((rows * 10 / 27 + 1)) --players 10000 --no-single | grep -E "grouped|verify"
total=$(count "(SELECT count(*) FROM transactions) + (SELECT count(*) FROM postings) + (SELECT count(*) FROM lot_draws) + (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM lots)")
echo "rows: $total ($(($(stat -c %s "$WALLET_DB") / 1048576)) MiB)"
[ "$total" -ge "$rows" ] || echo "(fewer rows than asked: the bench's mix wrote less than estimated)"
seed_ledger
start_server grouped
memory "after start on $total rows"
answered=$(spend_for 30 big)
memory "after $answered more spends"
stop_server
"$wallet" verify
