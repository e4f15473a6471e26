#!/usr/bin/env bash
# Sends hostile traffic to the running API (Tests/Fuzz/hostile.py): malformed and ambiguous JSON,
# look-alike player ids, forged player JWTs, forged Apple JWS, Google Play redemptions, forged and
# malformed Google Pub/Sub pushes, broken HTTP framing, bad query strings, and the event feed and
# webhook endpoints (SSRF-shaped URLs, look-alike endpoint ids). Starts `wallet serve`
# on a fresh database and a free loopback port, with player JWTs (HS256), the Apple routes and
# Google Play (against the stand-in Google, Tests/Fuzz/google_standin.py) configured; fails if the
# server dies, answers a 5xx other than 503 with Retry-After, answers an error that is not a
# problem document with a `code`, accepts what it must refuse, sends Google what it never should,
# or leaves a ledger that `wallet verify` rejects. The server and the stand-in are stopped however
# the run ends.
#
# Usage: Tests/Fuzz/hostile.sh [path-to-wallet-binary]
#   HOSTILE_SECONDS   time budget of the hostile traffic (default 120; the run takes at most ~60 s more)
#   HOSTILE_KEEP=1    keep the temporary directory (database, server log) for inspection
#   HOSTILE_TRACE=F   append each checked answer (class, case, status) to the file F
#   FUZZ_DB           the database to attack, such as an empty PostgreSQL database's URL (default: a fresh SQLite file)
# Needs python3 (3.11, standard library; `cryptography` if installed, to sign Apple-shaped JWS and
# to run the stand-in Google: without it the Google routes are left unconfigured and not attacked).
set -euo pipefail
cd "$(dirname "$0")/../.."

wallet=${1:-$(swift build --show-bin-path)/wallet}
wallet=$(cd "$(dirname "$wallet")" && pwd)/$(basename "$wallet")
work=$(mktemp -d)
export WALLET_DB="${FUZZ_DB:-$work/wallet.sqlite}"
pid_file="$work/server.pid"
server_log="$work/server.log"
google_pid=""
cleanup() {
  # The server may have been restarted by hostile.py after a crash: its pid is in the pid file.
  if [ -s "$pid_file" ]; then
    pid=$(cat "$pid_file")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ -n "$google_pid" ]; then kill "$google_pid" 2>/dev/null || true; wait "$google_pid" 2>/dev/null || true; fi
  if [ "${HOSTILE_KEEP:-0}" = 1 ]; then echo "hostile: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

product=com.example.game.consume5credits
key_of() { python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])'; }
"$wallet" products set "$product" --credits 5 >/dev/null
"$wallet" products set com.example.game.fuzzproduct --credits 1 >/dev/null
"$wallet" products set com.example.game.fuzzpass --credits 0 --type non_renewing --entitlement fuzz_pass --duration P1M >/dev/null
service_key=$("$wallet" keys create --role service --name hostile-service --json | key_of)
admin_key=$("$wallet" keys create --role admin --name hostile-admin --json | key_of)
support_key=$("$wallet" keys create --role support --name hostile-support --json | key_of)
auditor_key=$("$wallet" keys create --role auditor --name hostile-auditor --json | key_of)
# p1: the wallet the malformed bodies spend from; Kate and café (composed): the victims of
# look-alike ids; ctl: a player whose own token must work; p2: a purchase to refund.
cafe=$(printf 'caf\xc3\xa9')
for player in p1 Kate "$cafe" ctl p2; do
  seed_id=hostile-seed-$player
  [ "$player" = "$cafe" ] && seed_id=hostile-seed-cafe   # store transaction ids are visible ASCII
  # A server that takes only ASCII player ids refuses café: hostile.py then leaves it out.
  "$wallet" grant --player "$player" --store apple --store-transaction-id "$seed_id" --product "$product" --quantity 100 >/dev/null 2>&1 ||
    { [ "$player" = "$cafe" ] && echo "hostile: this server refuses the player id café; it is left out of the victims"; }
done

if python3 -c 'import cryptography' 2>/dev/null; then
  . Tests/Fuzz/google_standin.sh
  start_google_standin "$work"
else
  echo "hostile: \`cryptography\` is not installed; Google Play is left unconfigured and not attacked"
fi

# A webhook endpoint to attack by id, at a loopback port where nothing listens: the server allows
# 127.0.0.1 (and only it) for webhooks, so that whatever endpoint the run adds is sent nowhere else.
export WALLET_WEBHOOK_ALLOW_HOSTS=127.0.0.1
webhook_id=$("$wallet" webhooks add --url http://127.0.0.1:9/hostile --types '*' --webhook-allow-host 127.0.0.1 --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["endpoint"]["id"])')

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
export WALLET_PLAYER_JWT_SECRET
WALLET_PLAYER_JWT_SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
export WALLET_APPLE_BUNDLE_ID=com.example.game
export WALLET_LOG_LEVEL=warning
"$wallet" serve --host 127.0.0.1 --port "$port" >>"$server_log" 2>&1 &
echo $! >"$pid_file"
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done

HOSTILE_WALLET="$wallet" HOSTILE_PORT="$port" HOSTILE_PID_FILE="$pid_file" HOSTILE_SERVER_LOG="$server_log" \
  HOSTILE_SERVICE_KEY="$service_key" HOSTILE_ADMIN_KEY="$admin_key" HOSTILE_SUPPORT_KEY="$support_key" \
  HOSTILE_AUDITOR_KEY="$auditor_key" HOSTILE_PRODUCT="$product" HOSTILE_WEBHOOK_ID="$webhook_id" \
  HOSTILE_APPLE_ROOT="${HOSTILE_APPLE_ROOT:-$(pwd)/../shared/certs/AppleRootCA-G3.pem}" \
  python3 Tests/Fuzz/hostile.py
