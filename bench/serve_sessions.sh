#!/usr/bin/env bash
# Measures `hiccup serve` sessions (issue 13) with Debian's wrk on 127.0.0.1, a few seconds each:
#   1. sessions created per second (POST /_hiccup/sessions, a one-turn openai-chat scenario);
#   2. requests per second through one server with 32 sessions, every request to the next session
#      (non-streaming Chat Completions answer), over 8 keep-alive connections
#      and over 32 connections with `Connection: close`.
# The server runs on core 0, wrk on core 1 when taskset exists.
# usage: bench/serve_sessions.sh [HICCUP_BIN] [SECONDS]   (defaults build/hiccup, 3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/hiccup}"
secs="${2:-3}"
command -v wrk >/dev/null || { echo "serve_sessions.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
pin() { if command -v taskset >/dev/null; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

pin 0 "$bin" serve >"$work/url" 2>/dev/null &
server=$!
for _ in $(seq 100); do [[ -s "$work/url" ]] && break; sleep 0.05; done
url="$(head -1 "$work/url")"
scenario='{"schema":1,"name":"bench","provider":"openai-chat","prompt":"Hi","turns":[{"attempts":[{"events":[{"text":"Hello."},{"finish":"stop"}]}]}]}'

cat >"$work/create.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"scenario":$scenario}'
wrk.headers["Content-Type"] = "application/json"
LUA
echo "== sessions created per second (1 connection, ${secs} s)"
pin 1 wrk -t1 -c1 -d"${secs}s" -s "$work/create.lua" "$url/_hiccup/sessions" | grep -E "Requests/sec|Non-2xx|Latency"

for i in $(seq 0 31); do
  curl -sf -o /dev/null -X POST "$url/_hiccup/sessions" -d "{\"id\":\"b$i\",\"scenario\":$scenario}"
done
cat >"$work/load.lua" <<'LUA'
local i = 0
local body = '{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}'
request = function()
  i = (i + 1) % 32
  return wrk.format("POST", "/s/b" .. i .. "/v1/chat/completions", {["Content-Type"] = "application/json"}, body)
end
LUA
echo "== 32 sessions, 8 keep-alive connections (${secs} s)"
pin 1 wrk -t1 -c8 -d"${secs}s" --latency -s "$work/load.lua" "$url" | grep -E "Requests/sec|Non-2xx|99%|Socket"
echo "== 32 sessions, 32 connections, Connection: close (${secs} s)"
pin 1 wrk -t1 -c32 -d"${secs}s" --latency -H "Connection: close" -s "$work/load.lua" "$url" | grep -E "Requests/sec|Non-2xx|99%|Socket"
echo "== journal of session b0: $(curl -sf "$url/_hiccup/sessions/b0" | grep -o '"requests":[0-9]*')"
