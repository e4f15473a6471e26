# Sourced by Tests/Fuzz/hostile.sh and schemathesis.sh (from the repository's root).
# start_google_standin DIR starts the stand-in Google (Tests/Fuzz/google_standin.py), which writes
# its push signing key and a service account's key file into DIR, sets google_pid (the caller's
# cleanup kills it), and exports the WALLET_GOOGLE_* settings that make `wallet serve` ask it for
# everything (purchases, consumption, voids, push signing keys), and HOSTILE_GOOGLE_* for hostile.py.
start_google_standin() {
  local dir=$1 port
  python3 Tests/Fuzz/google_standin.py serve "$dir/google-port" "$dir/google-push-key.pem" "$dir/google-service-account.json" \
    2>>"$dir/google-standin.log" &
  google_pid=$!
  # Two RSA keys are made first; on a loaded machine that takes a few seconds.
  for _ in $(seq 1 300); do
    [ -s "$dir/google-port" ] && break
    kill -0 "$google_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$dir/google-port" ]; then
    echo "the Google stand-in did not start: $(tail -3 "$dir/google-standin.log")" >&2
    return 1
  fi
  port=$(cat "$dir/google-port")
  export WALLET_GOOGLE_PACKAGE_NAME=com.example.game
  export WALLET_GOOGLE_SERVICE_ACCOUNT="$dir/google-service-account.json"
  export WALLET_GOOGLE_API_URL="http://127.0.0.1:$port"
  export WALLET_GOOGLE_PUSH_AUDIENCE=https://wallet.example.com/v1/notifications/google
  export WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT=pubsub-push@hostile-project.iam.gserviceaccount.com
  export WALLET_GOOGLE_JWKS_URL="http://127.0.0.1:$port/oauth2/v3/certs"
  export HOSTILE_GOOGLE_URL="http://127.0.0.1:$port"
  export HOSTILE_GOOGLE_PUSH_KEY="$dir/google-push-key.pem"
}
