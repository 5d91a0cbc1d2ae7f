#!/usr/bin/env bash
# bench/serve_bounds.sh: `hiccup serve` bounded under load (issue 42). Two measurements:
#   1. RSS of a server whose SESSIONS sessions (created over the control API, default journal
#      window) each answer every request with a fault (bench/peers/gemini_stream_malformed.json),
#      driven by wrk (Debian) over CONNECTIONS keep-alive connections spread over the sessions, in
#      slices of SLICE seconds until REQUESTS requests were journaled: RSS and peak RSS (VmHWM) each
#      time another STEP requests passed; then how long one session's verdict and journal take and
#      how long a health check waits while a verdict is being made.
#   2. A slowloris of SLOW_CLIENTS clients (bench/slowloris.py: one byte of a never-ending head
#      every 2 s each, reopened when the server ends them) against a fresh server, and a fresh
#      client's request in the middle of it: its status and time (curl).
#   3. 8 clients asking for an 8 MB answer and never reading it, twice (bench/never_read.py): RSS
#      per client while they are open, and whether a second round reuses what the first freed.
# A benchmark, not a test: never run in CI. 127.0.0.1 only. Runs under `nice` (a shared machine).
#
# usage: bench/serve_bounds.sh [REQUESTS] [SLOW_CLIENTS]   (defaults 10000000, 4096; env
#        HICCUP_BIN=build/hiccup SESSIONS=16 CONNECTIONS=64 SLICE=10 STEP=1000000 PORT=19381
#        SLOW_SECONDS=40 SERVE_ARGS="")
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-10000000}
SLOW_CLIENTS=${2:-4096}
SESSIONS=${SESSIONS:-16}
CONNECTIONS=${CONNECTIONS:-64}
SLICE=${SLICE:-10}
STEP=${STEP:-1000000}
PORT=${PORT:-19381}
SLOW_SECONDS=${SLOW_SECONDS:-40}
HICCUP_BIN=${HICCUP_BIN:-$PWD/build/hiccup}
command -v wrk >/dev/null || { echo "serve_bounds: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v curl >/dev/null || { echo "serve_bounds: curl is missing (apt-get install curl)" >&2; exit 1; }
[ -x "$HICCUP_BIN" ] || { echo "serve_bounds: $HICCUP_BIN not found; build first" >&2; exit 1; }
# Each slow client is a descriptor here and one in the server.
ulimit -n $(( SLOW_CLIENTS + 4096 > $(ulimit -Hn) ? $(ulimit -Hn) : SLOW_CLIENTS + 4096 ))

work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
url="http://127.0.0.1:$PORT"
start_server() {
  # shellcheck disable=SC2086
  nice -n 10 "$HICCUP_BIN" serve "$@" --port "$PORT" ${SERVE_ARGS:-} >/dev/null 2>"$work/serve.err" &
  server=$!
  for _ in $(seq 100); do curl -s -o /dev/null "$url/_hiccup/health" && return; sleep 0.1; done
  echo "serve_bounds: the server did not start: $(cat "$work/serve.err")" >&2
  exit 1
}
stop_server() { kill -INT "$server"; wait "$server" 2>/dev/null || true; server=; }
mb() { awk -v k="$1" '$1 == k":" {printf "%.1f", $2 / 1024}' "/proc/$server/status"; }

echo "== 1. RSS: $SESSIONS sessions, a fault (malformed frame) on every request, $CONNECTIONS connections"
start_server
for i in $(seq 0 $((SESSIONS - 1))); do
  curl -sf -o /dev/null -X POST "$url/_hiccup/sessions" \
    -d "{\"id\":\"b$i\",\"scenario\":$(cat bench/peers/gemini_stream_malformed.json)}"
done
cat >"$work/load.lua" <<LUA
local i = 0
local body = '{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}'
request = function()
  i = (i + 1) % $SESSIONS
  return wrk.format("POST", "/s/b" .. i .. "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                    {["Content-Type"] = "application/json"}, body)
end
LUA
requests() { curl -s "$url/_hiccup/sessions" | grep -o '"requests":[0-9]*' | cut -d: -f2 | paste -sd+ | bc; }
echo "| requests | RSS MB | peak RSS MB | req/s (last slice) |"
echo "|---|---|---|---|"
echo "| $(requests) | $(mb VmRSS) | $(mb VmHWM) | |"
next=$STEP
started=$(date +%s)
while :; do
  nice -n 10 wrk -t1 -c"$CONNECTIONS" -d"${SLICE}s" -s "$work/load.lua" "$url" >"$work/wrk.txt"
  n=$(requests)
  if [ "$n" -ge "$next" ] || [ "$n" -ge "$REQUESTS" ]; then
    echo "| $n | $(mb VmRSS) | $(mb VmHWM) | $(awk '/Requests\/sec/ {printf "%.0f", $2}' "$work/wrk.txt") |"
    while [ "$next" -le "$n" ]; do next=$((next + STEP)); done
  fi
  [ "$n" -lt "$REQUESTS" ] || break
done
echo "$n requests in $(( $(date +%s) - started )) s"
t() { curl -s -o "$work/out" -w '%{time_total}' "$url$1"; }
echo "verdict of b0: $(t /_hiccup/sessions/b0/verdict) s, verdict $(grep -o '"verdict":"[a-z]*"' "$work/out"), $(grep -o '"requests_evicted":[0-9]*' "$work/out")"
echo "journal of b0: $(t /_hiccup/sessions/b0/journal) s, $(wc -c <"$work/out") bytes"
# A health check while 8 verdicts at once are being made (each on a worker thread).
for _ in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null "$url/_hiccup/sessions/b0/verdict" & done
echo "health during 8 verdicts: $(t /_hiccup/health) s"
wait_jobs=$(jobs -p | grep -v "^$server\$" || true)
[ -z "$wait_jobs" ] || wait $wait_jobs 2>/dev/null || true
echo "RSS after: $(mb VmRSS) MB, peak $(mb VmHWM) MB"
stop_server

echo
echo "== 2. slowloris: $SLOW_CLIENTS clients trickling heads (1 byte / 2 s), a fresh client among them"
start_server bench/peers/gemini_stream.json
python3 bench/slowloris.py "$PORT" "$SLOW_CLIENTS" 2 "$SLOW_SECONDS" >"$work/slow.txt" &
slow=$!
for _ in $(seq 200); do grep -q opened "$work/slow.txt" 2>/dev/null && break; sleep 0.1; done
sleep 3
echo "slow clients: $(head -1 "$work/slow.txt"); server connections: $(ls /proc/$server/fd | wc -l) descriptors"
curl -s -o "$work/fresh" -w 'fresh client: HTTP %{http_code} after %{time_total} s\n' --max-time 60 \
  -H 'Content-Type: application/json' -d '{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}' \
  "$url/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" || echo "fresh client: no answer within 60 s"
wait "$slow"
echo "slow clients at the end: $(tail -1 "$work/slow.txt")"
echo "RSS: $(mb VmRSS) MB, peak $(mb VmHWM) MB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
stop_server

echo
echo "== 3. clients that never read an 8 MB answer"
python3 -c 'import json; print(json.dumps({"schema": 1, "name": "big", "provider": "gemini", "prompt": "Deploy.",
  "turns": [{"attempts": [{"events": [{"text": "z" * (8 << 20)}, {"finish": "stop"}]}]}]}))' >"$work/big.json"
start_server "$work/big.json"
python3 bench/never_read.py "$PORT" 8 "$server" 7
stop_server
