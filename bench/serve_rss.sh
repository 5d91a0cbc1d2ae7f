#!/usr/bin/env bash
# bench/serve_rss.sh: memory of a long-running `hiccup serve` (issue 11: RSS flat over 10 million
# requests). Serves bench/peers/gemini_stream.json with the default journal window, drives it with
# wrk (Debian) in slices of SLICE seconds until REQUESTS requests were journaled, and prints the
# server's RSS and peak RSS (VmHWM, /proc) each time another STEP requests have passed, then how
# long Ctrl-C took. A benchmark, not a test: never run in CI. Runs under `nice` (a shared machine):
# it measures memory, not speed.
#
# usage: bench/serve_rss.sh [REQUESTS]   (default 10000000; env HICCUP_BIN=build/hiccup STEP=1000000
#                                         CONNECTIONS=64 SLICE=10 PORT=19380)
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-10000000}
STEP=${STEP:-1000000}
CONNECTIONS=${CONNECTIONS:-64}
SLICE=${SLICE:-10}
PORT=${PORT:-19380}
HICCUP_BIN=${HICCUP_BIN:-$PWD/build/hiccup}
command -v wrk >/dev/null || { echo "serve_rss: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v curl >/dev/null || { echo "serve_rss: curl is missing (apt-get install curl)" >&2; exit 1; }
[ -x "$HICCUP_BIN" ] || { echo "serve_rss: $HICCUP_BIN not found; build first" >&2; exit 1; }

work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
wrk.body = '{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}'
wrk.headers["Content-Type"] = "application/json"
LUA
nice -n 10 "$HICCUP_BIN" serve bench/peers/gemini_stream.json --port "$PORT" >/dev/null 2>"$work/serve.err" &
server=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
requests() { curl -s "http://127.0.0.1:$PORT/_hiccup/sessions/default" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
mb() { awk -v k="$1" '$1 == k":" {printf "%.1f", $2 / 1024}' "/proc/$server/status"; }

echo "| requests | RSS MB | peak RSS MB |"
echo "|---|---|---|"
echo "| $(requests) | $(mb VmRSS) | $(mb VmHWM) |"
next=$STEP
started=$(date +%s)
while :; do
  nice -n 10 wrk -t1 -c"$CONNECTIONS" -d"${SLICE}s" -s "$work/post.lua" "http://127.0.0.1:$PORT" >"$work/wrk.txt"
  n=$(requests)
  if [ "$n" -ge "$next" ] || [ "$n" -ge "$REQUESTS" ]; then
    echo "| $n | $(mb VmRSS) | $(mb VmHWM) |"
    while [ "$next" -le "$n" ]; do next=$((next + STEP)); done
  fi
  [ "$n" -lt "$REQUESTS" ] || break
done
t0=$(date +%s%N)
kill -INT "$server"
wait "$server" 2>/dev/null || true
t1=$(date +%s%N)
server=
echo
echo "$n requests in $(( $(date +%s) - started )) s; hiccup stopped $(( (t1 - t0) / 1000000 )) ms after SIGINT; load average $(cut -d' ' -f1-3 /proc/loadavg)"
