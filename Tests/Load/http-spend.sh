#!/usr/bin/env bash
# HTTP load: durable spends through `wallet serve` (release build, synchronous=FULL) with wrk
# (-t2 -c64), first with the group commit and then with one commit per request, plus a trivial
# GET on the same stack for scale. Every server runs on a fresh database on 127.0.0.1 and is
# stopped at the end; the ledger is verified after each run. Needs `apt-get install -y wrk`.
#
# Usage: Tests/Load/http-spend.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Load/seed.sh
seconds=${1:-10}
players=${WALLET_PLAYERS:-100}
export WALLET_PLAYERS=$players
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
swift build -c release --product wallet >/dev/null
wallet=$(swift build -c release --show-bin-path)/wallet
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

run() { # run <label> <write mode> <wrk script or "get">
  local label=$1 mode=$2 kind=$3
  export WALLET_DB="$work/$label.sqlite"
  seed_ledger
  local port
  port=$(free_port)
  WALLET_LOG_LEVEL=error "$wallet" serve --port "$port" --write-mode "$mode" &
  server_pid=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  echo "== $label (write mode $mode)"
  if [ "$kind" = get ]; then
    wrk -t2 -c64 -d"${seconds}s" "http://127.0.0.1:$port/healthz" | grep -E "Requests/sec|Latency"
  else
    wrk -t2 -c64 -d"${seconds}s" --latency -s Tests/Load/spend.lua "http://127.0.0.1:$port" | grep -E "Requests/sec|requests|Latency|99%"
  fi
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
  "$wallet" verify
}

run grouped grouped spend
run single single spend
run get grouped get
