#!/usr/bin/env bash
# Export benchmark: builds a ledger of about one million postings with `wallet bench` (group
# commit only), then times `wallet export` of all of it to CSV and to JSON Lines with its peak
# memory (GNU time's maximum resident set size), and verifies each file offline against the head.
#
# Usage: Tests/Load/export-million.sh [bench operations, default 600000: about 1.04 million postings]
set -euo pipefail
cd "$(dirname "$0")/../.."
operations=${1:-600000}
swift build -c release --product wallet >/dev/null
wallet=$(swift build -c release --show-bin-path)/wallet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building a ledger from $operations benchmark operations"
"$wallet" bench --db "$work" --operations "$operations" --no-single --players 10000 | grep -E "grouped|verify"
export WALLET_DB="$work/grouped.sqlite"
head=$("$wallet" verify --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["head_hash"])')
for format in csv jsonl; do
  echo "== export, $format"
  /usr/bin/time -f "%e s elapsed, %M KiB peak resident memory" "$wallet" export --format "$format" --output "$work/ledger.$format" --json
  ls -l "$work/ledger.$format" | awk '{ printf "%.0f MiB written\n", $5 / 1048576 }'
  echo "== verify --export, $format"
  /usr/bin/time -f "%e s elapsed, %M KiB peak resident memory" "$wallet" verify --export "$work/ledger.$format" --head "$head"
done
