#!/usr/bin/env bash
# Fuzzes the running API against its own OpenAPI document with schemathesis: starts
# `wallet serve` on a fresh database and a free loopback port, runs a bounded, seeded set of
# examples as a service key and as an admin key, and fails on any 5xx, any response that the
# document does not describe, or any request to the stand-in Google that a wallet should never
# send. The server and the stand-ins are stopped however the run ends.
#
# Usage: Tests/Fuzz/schemathesis.sh [path-to-wallet-binary]   (needs `pip install schemathesis==4.32.5 cryptography`)
#   FUZZ_DB   the database to fuzz, such as an empty PostgreSQL database's URL (default: a fresh SQLite file)
set -euo pipefail
cd "$(dirname "$0")/../.."

wallet=${1:-$(swift build --show-bin-path)/wallet}
examples=${SCHEMATHESIS_EXAMPLES:-25}
work=$(mktemp -d)
export WALLET_DB="${FUZZ_DB:-$work/wallet.sqlite}"
server_pid=""
apple_pid=""
google_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$apple_pid" ]; then kill "$apple_pid" 2>/dev/null || true; wait "$apple_pid" 2>/dev/null || true; fi
  if [ -n "$google_pid" ]; then kill "$google_pid" 2>/dev/null || true; wait "$google_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$wallet" products set com.example.consume5credits --credits 5 >/dev/null
"$wallet" products set com.example.vip30 --credits 0 --type non_renewing --entitlement vip --duration P30D >/dev/null
service_key=$("$wallet" keys create --role service --name fuzz-service --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
admin_key=$("$wallet" keys create --role admin --name fuzz-admin --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
"$wallet" grant --player p1 --store apple --store-transaction-id fuzz-seed --product com.example.consume5credits --quantity 100 >/dev/null

# A stand-in App Store Server API that knows no transaction and no order: receipts and order
# lookups go the whole way (token, request, Apple's error) and must end in a 4xx.
mkfifo "$work/apple-port"
python3 Tests/Fuzz/apple_standin.py "$work/AuthKey.p8" > "$work/apple-port" &
apple_pid=$!
read -r apple_port < "$work/apple-port"

# The stand-in Google (Tests/Fuzz/google_standin.py): purchase tokens starting with "ok-" are
# purchases, any other is unknown (a 4xx); pushes need its push key, which schemathesis lacks, so
# every fuzzed push must be a 401.
. Tests/Fuzz/google_standin.sh
start_google_standin "$work"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
# Apple and Google routes configured, so that fuzzed signed data meets the real verifier (and
# Apple's real root) and fuzzed purchase tokens are asked of Google: every forged transaction or
# notification must be a 4xx.
WALLET_LOG_LEVEL=warning WALLET_APPLE_BUNDLE_ID=com.example.game WALLET_APPLE_ISSUER_ID=fuzz-issuer WALLET_APPLE_KEY_ID=FUZZKEY \
  WALLET_APPLE_PRIVATE_KEY="$work/AuthKey.p8" WALLET_APPLE_API_URL="http://127.0.0.1:$apple_port" \
  "$wallet" serve --host 127.0.0.1 --port "$port" &
server_pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection
for key in "$service_key" "$admin_key"; do
  schemathesis --config-file Tests/Fuzz/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" \
    --header "Authorization: Bearer $key" \
    --checks "$checks" \
    --max-examples "$examples" \
    --seed 20261121 \
    --request-timeout 10 \
    --no-color
done
# The push route once more, with Google's push token: the envelope meets the wallet's reader.
push_token=$(python3 Tests/Fuzz/google_standin.py push-token "$HOSTILE_GOOGLE_PUSH_KEY" "$WALLET_GOOGLE_PUSH_AUDIENCE" "$WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT")
schemathesis --config-file Tests/Fuzz/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" \
  --include-path /v1/notifications/google \
  --header "Authorization: Bearer $push_token" \
  --checks "$checks" \
  --max-examples "$examples" \
  --seed 20261121 \
  --request-timeout 10 \
  --no-color
# Whatever schemathesis sent, the wallet must have asked Google only what Google's API has.
curl -sf "$HOSTILE_GOOGLE_URL/standin/report" | python3 -c '
import json, sys
report = json.load(sys.stdin)
print("the stand-in Google answered", report["counts"])
for line in report["unexpected"]:
    print("the wallet sent Google what it never should:", line)
sys.exit(1 if report["unexpected"] else 0)'
"$wallet" verify
