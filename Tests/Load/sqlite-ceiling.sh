#!/usr/bin/env bash
# The ceiling for `wallet bench`: the spend's statements on the wallet's own schema.sql in C,
# one transaction per operation and then 64 and 512 per commit, with 1,000 players and random
# idempotency keys as `wallet bench` uses; then the same with one player and sequential keys,
# where every operation writes into the same few pages. Needs gcc and libsqlite3-dev.
#
# Usage: Tests/Load/sqlite-ceiling.sh [operations, default 50000]
set -euo pipefail
cd "$(dirname "$0")/../.."
operations=${1:-50000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/sqlite-ceiling" Tests/Load/sqlite-ceiling.c -lsqlite3
run() { "$work/sqlite-ceiling" "$work/ceiling.sqlite" schema.sql "$@"; }
run 1 $((operations / 10)) 1000 random 0
for batch in 64 512; do
  run "$batch" "$operations" 1000 random 1
  run "$batch" "$operations" 1000 random 0
done
run 512 "$operations" 1 sequential 1
run 512 "$operations" 1 sequential 0
