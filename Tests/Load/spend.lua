-- wrk script: durable spends with a unique Idempotency-Key per request, spread over players.
-- Environment: WALLET_KEY (a service key), WALLET_PLAYERS (how many players exist, default 100).
-- thread_id is a global, so that setup() can give each thread its own (thread:set sets globals).
local counter = 0
thread_id = 0
local players = tonumber(os.getenv("WALLET_PLAYERS") or "100")
local key = os.getenv("WALLET_KEY")
-- Several wrk processes at once (one per instance) keep their keys apart with WALLET_RUN.
local run = os.getenv("WALLET_RUN") or "wrk"

function setup(thread)
  thread_id = thread_id + 1
  thread:set("thread_id", thread_id)
end

function init(args)
  math.randomseed(thread_id * 7919)
end

function request()
  counter = counter + 1
  local player = math.random(0, players - 1)
  local headers = {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = run .. "-" .. thread_id .. "-" .. counter,
  }
  return wrk.format("POST", "/v1/wallets/player-" .. player .. "/spend", headers, '{"amount": 1}')
end

local failures = 0
function response(status, headers, body)
  if status ~= 201 then failures = failures + 1 end
end

function done(summary, latency, requests)
  io.write(string.format("requests %d, non-2xx or socket errors %d, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
    summary.requests, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
