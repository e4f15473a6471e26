# Shared by the HTTP load runners (sourced): a free loopback port, and a ledger seeded for
# Tests/Load/spend.lua. Needs $wallet (the binary), $players and WALLET_DB set by the caller.

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# The load product, a service key exported as WALLET_KEY, and $players players with a billion
# credits each, so no spend of the run is refused for funds.
seed_ledger() {
  "$wallet" products set load.credits --credits 5 >/dev/null
  WALLET_KEY=$("$wallet" keys create --role service --name load --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
  export WALLET_KEY
  for player in $(seq 0 $((players - 1))); do
    "$wallet" adjust --player "player-$player" --amount 1000000000 --reason-code load_test --note "credits for the load test" \
      --actor load --key "seed-$player" >/dev/null
  done
}
