# Shared by the HTTP load runners (sourced): the release binary and a work directory, one
# `wallet serve` at a time, a free loopback port, and a ledger seeded for Tests/Load/spend.lua.
# seed_ledger needs $players and WALLET_DB set by the caller.

# Checks for wrk, builds the release binary as $wallet, makes $work, and on exit stops the
# server start_server left running and removes $work.
load_setup() {
  command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
  swift build -c release --product wallet >/dev/null
  wallet=$(swift build -c release --show-bin-path)/wallet
  work=$(mktemp -d)
  server_pid=""
  trap load_cleanup EXIT
}

load_cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}

# start_server <write mode>: `wallet serve` on WALLET_DB at a free $port, once it answers /healthz.
start_server() {
  port=$(free_port)
  WALLET_LOG_LEVEL=error "$wallet" serve --port "$port" --write-mode "$1" &
  server_pid=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}

stop_server() {
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

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
