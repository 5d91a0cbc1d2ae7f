#!/usr/bin/env bash
# The latency `hiccup proxy` and `hiccup record` add per request and per streamed SSE frame, against
# `hiccup serve` direct (issue 38's target: under 0.2 ms added p99 at 16 connections).
# Debian's wrk on 127.0.0.1, keep-alive connections, a 1 s warm-up thrown away before each run; one
# streamed Gemini answer per request: a short one (a text event and a finish: 2 SSE frames) and a
# long one (64 text events and a finish: 65 SSE frames) for the per-frame cost.
# Two loads: max (wrk's closed loop: each connection sends its next request as soon as the answer
# is in, so on a small machine latency is the CPU's queue) and paced (each connection waits 10 ms
# between requests). Prints one line per run: what, load, connections, frames, p50, p99 (ms), req/s, and the CPU time per
# request of the process asked (serve for direct, the proxy for proxy and record; the proxied
# requests' serve CPU is not in it), in µs; then the added p50/p99.
# The floor (when hiccup_floor_forwarder is built beside HICCUP, bench/floor_forwarder.cpp): a
# do-nothing forwarder of the proxy's shape (a thread and a keep-alive upstream connection per client
# connection, bytes relayed as read, no HTTP parsing), so the rows show what the extra hop alone
# adds on this machine.
# usage: bench/proxy_overhead.sh [HICCUP] [SECONDS] [CONNECTIONS...]   (env: FLOOR=path of the floor)
#        (defaults build/hiccup, 5, "1 16"; not run in CI; a shared machine's tails are its own)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
hiccup="${1:-$root/build/hiccup}"
floor="${FLOOR:-$(dirname "$hiccup")/hiccup_floor_forwarder}"
secs="${2:-5}"
shift $(( $# > 2 ? 2 : $# )) || true
conns=("$@")
(( ${#conns[@]} )) || conns=(1 16)
command -v wrk >/dev/null || { echo "proxy_overhead.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# $1 = number of text events
scenario() {
  python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
events = [{"text": "word %d of a streamed answer, " % i} for i in range(n)] + [{"finish": "stop"}]
print(json.dumps({"schema": 1, "name": "bench", "provider": "gemini", "prompt": "hi",
                  "turns": [{"attempts": [{"events": events}]}]}))
PY
}
scenario 1 >"$work/short.json"
scenario 64 >"$work/long.json"
# `hiccup proxy` relays every request untouched under a scenario whose attempt has no fault.
cp "$work/short.json" "$work/nofault.json"
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-goog-api-key"] = "bench-key"
wrk.body = '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
LUA
# Paced: every connection waits 10 ms between its requests (16 connections: about 1,600 req/s), so
# the latency is a request's own, not the queue behind a saturated CPU (see docs/RECORDING.md).
{ cat "$work/post.lua"; echo 'function delay() return 10 end'; } >"$work/paced.lua"

# Starts "$@" in the background; sets $url to the first line it writes to stdout, $pid to its pid.
start() {
  local out="$work/url.$RANDOM"
  "$@" >"$out" 2>/dev/null &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do [[ -s "$out" ]] && break; sleep 0.05; done
  url="$(head -1 "$out")"
}
# CPU time of process $1 so far, in clock ticks (user + system).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# wrk's "50%  33.00us" → milliseconds
to_ms() { awk '{v=$1; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
  if (u=="us") v/=1000; else if (u=="s") v*=1000; else if (u=="m") v*=60000; printf "%.3f", v}'; }

# $1 label, $2 url, $3 connections, $4 frames, $5 pid of the process whose CPU per request is
# shown, $6 load: max (each connection sends its next request as soon as the answer is in) or paced
run() {
  local t=$(( $3 < 2 ? 1 : 2 ))
  local script="$work/post.lua"
  [[ $6 == paced ]] && script="$work/paced.lua"
  wrk -t"$t" -c"$3" -d1s -s "$script" "$2" >/dev/null
  local out p50 p99 rps before cpu requests
  before=$(ticks "$5")
  out="$(wrk -t"$t" -c"$3" -d"${secs}s" --latency -s "$script" "$2")"
  requests="$(awk '/requests in/{print $1}' <<<"$out")"
  cpu="$(awk -v t=$(( $(ticks "$5") - before )) -v hz="$hz" -v n="$requests" 'BEGIN{printf "%.1f", t / hz * 1e6 / n}')"
  if grep -q "Non-2xx" <<<"$out"; then echo "proxy_overhead.sh: $1 answered errors:" >&2; echo "$out" >&2; exit 1; fi
  p50="$(awk '$1=="50%"{print $2}' <<<"$out" | to_ms)"
  p99="$(awk '$1=="99%"{print $2}' <<<"$out" | to_ms)"
  rps="$(awk '/Requests\/sec/{printf "%d", $2}' <<<"$out")"
  printf '%-7s %-6s %5s %6s %9s %9s %9s %9s\n' "$1" "$6" "$3" "$4" "$p50" "$p99" "$rps" "$cpu"
  echo "$1 $6 $3 $4 $p50 $p99" >>"$work/results"
}

printf '%-7s %-6s %5s %6s %9s %9s %9s %9s\n' what load conns frames p50_ms p99_ms req/s cpu_us
for shape in short long; do
  frames=$([[ $shape == short ]] && echo 2 || echo 65)
  start "$hiccup" serve "$work/$shape.json"
  serve_url=$url serve_pid=$pid
  start "$hiccup" proxy --upstream "$serve_url" "$work/nofault.json"
  proxy_url=$url proxy_pid=$pid
  start "$hiccup" record --upstream "$serve_url" --out "$work/rec.json"
  record_url=$url record_pid=$pid
  floor_url=""
  if [[ -x "$floor" ]]; then
    start "$floor" 127.0.0.1 "${serve_url##*:}"
    floor_url=$url floor_pid=$pid
  fi
  for load in max paced; do
    for c in "${conns[@]}"; do
      run direct "$serve_url" "$c" "$frames" "$serve_pid" "$load"
      run proxy "$proxy_url" "$c" "$frames" "$proxy_pid" "$load"
      run record "$record_url" "$c" "$frames" "$record_pid" "$load"
      [[ -z $floor_url ]] || run floor "$floor_url" "$c" "$frames" "$floor_pid" "$load"
    done
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
echo "added over direct (ms):"
awk '{k=$2" "$3" "$4; if ($1=="direct") {d50[k]=$5; d99[k]=$6} else {m[NR]=$0}}
     END {for (i in m) {split(m[i], f, " "); k=f[2]" "f[3]" "f[4];
       printf "%-7s %-6s %5s conns %3s frames: p50 %+.3f  p99 %+.3f\n", f[1], f[2], f[3], f[4], f[5]-d50[k], f[6]-d99[k]}}' \
  "$work/results" | sort -k2,2 -k3,3n -k5,5n -k1,1
