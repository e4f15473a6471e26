#!/usr/bin/env bash
# HTTP load: durable spends through `wallet serve` (release build, synchronous=FULL) with wrk
# (-t2 -c64 unless WRK_THREADS says otherwise), first with the group commit and then with one commit per request, plus a trivial
# GET on the same stack for scale. Every server runs on a fresh database on 127.0.0.1 and is
# stopped at the end; the ledger is verified after each run. Needs `apt-get install -y wrk`.
#
# wrk shares the machine's cores with the server: WRK_THREADS=1 (default 2) leaves it more of them.
#
# Usage: [WRK_THREADS=N] Tests/Load/http-spend.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Load/seed.sh
seconds=${1:-10}
threads=${WRK_THREADS:-2}
players=${WALLET_PLAYERS:-100}
export WALLET_PLAYERS=$players
load_setup

run() { # run <label> <write mode> <wrk script or "get">
  local label=$1 mode=$2 kind=$3
  export WALLET_DB="$work/$label.sqlite"
  seed_ledger
  start_server "$mode"
  echo "== $label (write mode $mode)"
  if [ "$kind" = get ]; then
    wrk -t"$threads" -c64 -d"${seconds}s" "http://127.0.0.1:$port/healthz" | grep -E "Requests/sec|Latency"
  else
    wrk -t"$threads" -c64 -d"${seconds}s" --latency -s Tests/Load/spend.lua "http://127.0.0.1:$port" | grep -E "Requests/sec|requests|Latency|99%"
  fi
  stop_server
  "$wallet" verify
}

run grouped grouped spend
run single single spend
run get grouped get
