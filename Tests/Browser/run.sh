#!/usr/bin/env bash
# Drives the web console in a real browser (Debian's chromium and chromium-driver, Selenium from
# PyPI): starts `wallet serve` on a fresh database and a free loopback port, with a support, an
# auditor and an admin key, then runs Tests/Browser/console_test.py against it. The server is
# stopped however the run ends.
#
# The README shows screenshots of the console (Tests/Browser/screenshots/*.png). They are taken only
# on request, so console.sha256 beside them records the console's sources they show; a run fails when
# those sources changed since, naming the command that takes the screenshots again.
#
# Usage: Tests/Browser/run.sh [--refresh-screenshots] [path-to-wallet-binary [test names, such as Console.test_keyboard_only]]
#        (needs chromium, chromium-driver, `pip install selenium==4.51.0 axe-selenium-python==2.1.6`, and
#        python3's cryptography for the stand-in Google)
#   --refresh-screenshots  save the README's screenshots and record the console's sources they show
#   CONSOLE_SCREENSHOTS    otherwise, a directory to save a screenshot of each main page in (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/../.."

refresh=false
if [ "${1:-}" = "--refresh-screenshots" ]; then refresh=true; shift; fi
screenshots=Tests/Browser/screenshots
# One line per console file, in a fixed order, so the record reads as what it covers.
console_sources() { LC_ALL=C sha256sum Sources/WalletServer/Console/*; }

wallet=${1:-$(swift build --show-bin-path)/wallet}
[ $# -gt 0 ] && shift
work=$(mktemp -d)
export WALLET_DB="$work/wallet.sqlite"
server_pid=""
tampered_pid=""
google_pid=""
cleanup() {
  for pid in "$server_pid" "$tampered_pid" "$google_pid"; do
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

key() { "$wallet" keys create --role "$1" --name "$2" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])'; }
"$wallet" products set com.example.consume5credits --credits 5 >/dev/null
"$wallet" grant --player p1 --store apple --store-transaction-id browser-seed --product com.example.consume5credits >/dev/null
"$wallet" grant --player p2 --store apple --store-transaction-id browser-seed-2 --product com.example.consume5credits --quantity 2 >/dev/null
# p3 owns a non-consumable (pro, for ever) and a 30-day pass (vip), for the entitlements table.
"$wallet" products set com.example.pro --credits 0 --type non_consumable --entitlement pro >/dev/null
"$wallet" products set com.example.vip30 --credits 0 --type non_renewing --entitlement vip --duration P30D >/dev/null
"$wallet" grant --player p3 --store apple --store-transaction-id browser-pro --product com.example.pro >/dev/null
"$wallet" grant --player p3 --store apple --store-transaction-id browser-vip --product com.example.vip30 >/dev/null
export SUPPORT_KEY=$(key support "Alice (support)") AUDITOR_KEY=$(key auditor "Ann (auditor)") ADMIN_KEY=$(key admin "Root (admin)")
# p4's history has every kind a support agent meets: a purchase, a spend, an adjustment, bonuses
# (one expiring in two seconds, booked below as an expiry), a hold released, one captured and one
# still open, a refund, and the open lots and holds that follow.
"$wallet" grant --player p4 --store apple --store-transaction-id browser-p4 --product com.example.consume5credits --quantity 4 >/dev/null
"$wallet" spend --player p4 --amount 3 --key p4-spend --reason "sword" --metadata '{"item": "sword", "level": 3}' >/dev/null
"$wallet" adjust --player p4 --amount 2 --reason-code goodwill --note "Outage on 3 May" --actor alice --key p4-adjust --ticket SUP-4 >/dev/null
"$wallet" bonus --player p4 --amount 7 --reason-code daily_login --note "Login streak" --campaign spring-2026 --key p4-bonus \
  --expires-at "$(python3 -c 'from datetime import datetime, timedelta, timezone; print((datetime.now(timezone.utc) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ"))')" >/dev/null
hold() { "$wallet" hold create --player p4 --amount "$1" --expires-in "$2" --reason "$3" --key "$4" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["hold"]["id"])'; }
"$wallet" hold release "$(hold 2 600 "match entry" p4-hold-1)" --key p4-release >/dev/null
"$wallet" hold capture "$(hold 3 600 "match entry" p4-hold-2)" --amount 1 --key p4-capture >/dev/null
hold 4 86400 "tournament" p4-hold-3 >/dev/null
# A second open hold: the release test takes one, and p4 still holds credits for the balances test.
hold 1 86400 "side bet" p4-hold-4 >/dev/null
# Given after the holds, which would draw it first (it expires soonest), so it is still whole then.
soon=$(python3 -c 'from datetime import datetime, timedelta, timezone; print((datetime.now(timezone.utc) + timedelta(seconds=2)).isoformat(timespec="milliseconds").replace("+00:00", "Z"))')
"$wallet" bonus --player p4 --amount 1 --reason-code event --key p4-bonus-soon --expires-at "$soon" >/dev/null
"$wallet" grant --player p4 --store apple --store-transaction-id browser-p4-refunded --product com.example.consume5credits >/dev/null
"$wallet" refund --store apple --store-transaction-id browser-p4-refunded >/dev/null
# A 255-character player id and key name, which must not widen the page.
export LONG_PLAYER=$(printf 'L%.0s' $(seq 1 255))
"$wallet" grant --player "$LONG_PLAYER" --store apple --store-transaction-id browser-long --product com.example.consume5credits >/dev/null
export LONG_SUPPORT_KEY=$(key support "$(printf 'K%.0s' $(seq 1 255))")
# Hostile values wherever the API takes free text (the browser test plants the rest in answers).
export HOSTILE_IMG='<img src=x onerror=window.__pwned=1>' HOSTILE_SCRIPT='"><script>window.__pwned=1</script>'
"$wallet" adjust --player p5 --amount 9 --reason-code goodwill --note "$HOSTILE_IMG" --ticket "$HOSTILE_SCRIPT" --actor "$HOSTILE_SCRIPT" --key p5-adjust >/dev/null
"$wallet" spend --player p5 --amount 1 --key "$HOSTILE_SCRIPT" --reason "$HOSTILE_IMG" --metadata "{\"item\": \"$HOSTILE_IMG\"}" >/dev/null
"$wallet" bonus --player p5 --amount 2 --reason-code event --note "$HOSTILE_IMG" --campaign "$HOSTILE_SCRIPT" --key p5-bonus >/dev/null
export HOSTILE_KEY=$(key support "$HOSTILE_IMG")
# A purchase whose store transaction id is itself hostile (without spaces, as store ids are), for
# the purchase lookup.
export HOSTILE_ID='"><svg/onload=window.__pwned=1>'
"$wallet" grant --player p5 --store apple --store-transaction-id "$HOSTILE_ID" --product com.example.consume5credits >/dev/null
# p6's Google Play purchases, as the stand-in Google (Tests/Fuzz/google_standin.py) reports them:
# ok-void-1 is voided there, ok-kept-1 is not. p6 spends more than the kept one gave, so the void
# (booked from Google's list of voided purchases, through the same path as a live notification)
# leaves p6 in debt. Neither purchase is consumed on Google's side: the server below runs without
# Google, so they wait in the google_consumes queue. The stand-in is stopped before the server starts.
. Tests/Fuzz/google_standin.sh
start_google_standin "$work"
"$wallet" redeem-google --player p6 --product com.example.consume5credits --token ok-void-1 >/dev/null
"$wallet" redeem-google --player p6 --product com.example.consume5credits --token ok-kept-1 >/dev/null
"$wallet" spend --player p6 --amount 8 --key p6-spend --reason "gems" >/dev/null
"$wallet" google catch-up >/dev/null
kill "$google_pid"; wait "$google_pid" 2>/dev/null || true; google_pid=""
unset WALLET_GOOGLE_PACKAGE_NAME WALLET_GOOGLE_SERVICE_ACCOUNT WALLET_GOOGLE_API_URL WALLET_GOOGLE_PUSH_AUDIENCE WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT WALLET_GOOGLE_JWKS_URL
"$wallet" webhooks add --url http://127.0.0.1:9/hostile --types lot.expired --description "$HOSTILE_IMG" --webhook-allow-host 127.0.0.1 >/dev/null
export WALLET_BINARY="$wallet"
if $refresh; then
  export CONSOLE_SCREENSHOTS="$PWD/$screenshots"
else
  export CONSOLE_SCREENSHOTS="${CONSOLE_SCREENSHOTS:-$work/screenshots}"
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
# Webhooks may go to 127.0.0.1 over plain HTTP: the admin's test adds an endpoint there.
serve() {  # serve DATABASE PORT: starts a server and waits until it answers
  WALLET_DB="$1" WALLET_LOG_LEVEL=warning "$wallet" serve --host 127.0.0.1 --port "$2" --webhook-allow-host 127.0.0.1 &
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$2/healthz" >/dev/null && break
    sleep 0.1
  done
}

# A second ledger whose seq 2 was edited behind the wallet's back (its trigger dropped first),
# for the auditor's "Verify ledger" to name.
tampered="$work/tampered.sqlite"
WALLET_DB="$tampered" "$wallet" products set com.example.consume5credits --credits 5 >/dev/null
for id in t1 t2 t3; do
  WALLET_DB="$tampered" "$wallet" grant --player p9 --store apple --store-transaction-id "$id" --product com.example.consume5credits >/dev/null
done
export TAMPERED_AUDITOR_KEY=$(WALLET_DB="$tampered" key auditor "Ann (auditor)")
sqlite3 "$tampered" "DROP TRIGGER transactions_append_only_update; UPDATE transactions SET note = 'edited' WHERE seq = 2;"
tampered_port=$(free_port)
serve "$tampered" "$tampered_port"
tampered_pid=$!
export TAMPERED_URL="http://127.0.0.1:$tampered_port/console/"

# p4's short bonus has expired by now (the tampered ledger took longer than two seconds); booking
# it adds p4's expiry entry.
until python3 -c 'import sys; from datetime import datetime, timezone; sys.exit(datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z") <= sys.argv[1])' "$soon"; do sleep 0.2; done
"$wallet" expire >/dev/null

port=$(free_port)
serve "$WALLET_DB" "$port"
server_pid=$!
export CONSOLE_URL="http://127.0.0.1:$port/console/"

python3 Tests/Browser/console_test.py "$@"
"$wallet" verify

if $refresh; then
  console_sources > "$screenshots/console.sha256"
  echo "Screenshots refreshed in $screenshots; console.sha256 records the console they show."
elif ! console_sources | cmp -s - "$screenshots/console.sha256"; then
  echo "The console (Sources/WalletServer/Console) changed since the README's screenshots were taken." >&2
  echo "Refresh them, then commit the new screenshots and console.sha256: Tests/Browser/run.sh --refresh-screenshots" >&2
  exit 1
fi
