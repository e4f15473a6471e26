#!/usr/bin/env bash
# The ceiling for `wallet bench`: the spend's statements on the wallet's own schema.sql in C
# (with credit lots, as a spend runs them now; `--statements=before-lots` gives the set from
# before lots, `--lots-per-wallet=N` seeds each wallet with N lots, `--bonus-lots` makes those N
# one-credit bonus lots, each from its own bonus transaction, as `wallet bench --lots-per-wallet N`
# seeds them; `--checkpoints=none` checkpoints nothing while timing instead of checkpointing as the
# wallet does; each option is passed to every run),
# one transaction per operation and then 64 and 512 per commit, with 1,000 players and random
# idempotency keys as `wallet bench` uses; then the same with one player and sequential keys,
# where every operation writes into the same few pages; then a bare schema (the same tables with
# primary keys only: no foreign keys, CHECKs, triggers or secondary indexes) with random keys, to
# show what the ledger's own rules cost. Needs gcc and libsqlite3-dev.
#
# Usage: Tests/Load/sqlite-ceiling.sh [operations, default 50000] [--statements=lots|before-lots] [--lots-per-wallet=N] [--bonus-lots]
#        [--checkpoints=wallet|none]
set -euo pipefail
cd "$(dirname "$0")/../.."
operations=50000
options=()
for argument in "$@"; do
  case $argument in
    --*) options+=("$argument") ;;
    *) operations=$argument ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -pthread -o "$work/sqlite-ceiling" Tests/Load/sqlite-ceiling.c -lsqlite3
run() { "$work/sqlite-ceiling" "$work/ceiling.sqlite" schema.sql "$@" "${options[@]}"; }
run 1 $((operations / 10)) 1000 random 0
for batch in 64 512; do
  run "$batch" "$operations" 1000 random 1
  run "$batch" "$operations" 1000 random 0
done
run 512 "$operations" 1 sequential 1
run 512 "$operations" 1 sequential 0
cat > "$work/bare.sql" <<'SQL'
CREATE TABLE currencies (code TEXT PRIMARY KEY NOT NULL);
INSERT INTO currencies VALUES ('credits');
CREATE TABLE accounts (id INTEGER PRIMARY KEY NOT NULL, owner TEXT NOT NULL, currency TEXT NOT NULL, balance INTEGER NOT NULL, UNIQUE (owner, currency));
CREATE TABLE transaction_kinds (kind TEXT PRIMARY KEY NOT NULL);
CREATE TABLE transactions (seq INTEGER PRIMARY KEY NOT NULL, id TEXT, kind TEXT, player_id TEXT, currency TEXT, amount INTEGER,
    actor TEXT, created_at TEXT, idempotency_key TEXT, store TEXT, store_transaction_id TEXT, product_id TEXT, quantity INTEGER,
    reason_code TEXT, note TEXT, ticket TEXT, refund_of_seq INTEGER, uncollected INTEGER, metadata TEXT, prev_hash TEXT, hash TEXT);
CREATE TABLE postings (seq INTEGER NOT NULL, account_id INTEGER NOT NULL, amount INTEGER NOT NULL, balance_after INTEGER NOT NULL,
    PRIMARY KEY (seq, account_id)) WITHOUT ROWID;
CREATE TABLE idempotency_keys (scope TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (scope, key)) WITHOUT ROWID;
CREATE TABLE lots (id INTEGER PRIMARY KEY NOT NULL, account_id INTEGER NOT NULL, category TEXT NOT NULL, amount INTEGER NOT NULL,
    remaining INTEGER NOT NULL, created_at TEXT NOT NULL, expires_at TEXT, source_seq INTEGER NOT NULL);
CREATE TABLE lot_draws (seq INTEGER NOT NULL, lot_id INTEGER NOT NULL, amount INTEGER NOT NULL, PRIMARY KEY (seq, lot_id)) WITHOUT ROWID;
CREATE TABLE holds (id TEXT PRIMARY KEY NOT NULL, player_id TEXT NOT NULL, currency TEXT NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL,
    expires_at TEXT NOT NULL, hold_seq INTEGER NOT NULL, resolved_seq INTEGER, captured INTEGER);
SQL
echo "bare schema:"
"$work/sqlite-ceiling" "$work/ceiling.sqlite" "$work/bare.sql" 512 "$operations" 1000 random 0 "${options[@]}"
"$work/sqlite-ceiling" "$work/ceiling.sqlite" "$work/bare.sql" 512 "$operations" 1 sequential 0 "${options[@]}"
