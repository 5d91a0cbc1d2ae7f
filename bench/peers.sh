#!/usr/bin/env bash
# bench/peers.sh: `hiccup serve` side by side with its peers — WireMock (npm `wiremock`), mockttp
# and Node's own http module — and with a ceiling, each serving the same 6-frame Gemini stream
# (1,418 bytes) to wrk from Debian over 16 keep-alive connections, plus hiccup at 64 and 256
# connections, with "Connection: close" on every request (a new connection per answer: the
# yardstick for the FIN, cut and RST rows) and with a fault on every request (malformed frame, FIN,
# cut, RST, 503). wrk runs on one core and each server on the other
# (taskset); each measurement is WARMUP seconds thrown away, then DURATION seconds measured.
# Prints one table: req/s, p99, server CPU µs per request (utime + stime of the server process from
# /proc, all threads), RSS at the end, wrk's socket errors, and hiccup's req/s ÷ each row's.
# Each peer runs in its best documented configuration for serving one fixed answer (stop 45; the
# table's first runs gave WireMock a body file read per request and request logging, and mockttp
# its default traffic recording):
#   - WireMock: the stream inline in the stub ("body", not "bodyFileName": no file read per
#     request), --no-request-journal (no request kept) and --disable-request-logging (no request
#     and response written to the notifier: "useful when performance testing", wiremock.org
#     "Running as a Standalone Process");
#   - mockttp: getLocal({recordTraffic: false}) (MockttpOptions.recordTraffic: no request kept for
#     getSeenRequests) and debug off (its default);
#   - Node: one res.write per SSE frame, no framework.
# The ceiling (bench/ceiling_server.cpp, target hiccup_ceiling, built here when missing): one
# thread, epoll, each request read only to its end and answered with the same prebuilt bytes, so
# the table shows how close hiccup comes to what this machine can do.
# A benchmark, not a test: never run in CI. The machine's load is printed before and after.
#
# usage: bench/peers.sh            (env: DURATION=10 WARMUP=3 HICCUP_BIN=build/hiccup
#                                        PORT_BASE=19080 WRK_CPU=0 SERVER_CPU=1)
# Installs wrk, curl and a Java runtime from Debian when missing, and the pinned npm peers
# (bench/peers/npm/package.json) into .cache/peers (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
HICCUP_BIN=${HICCUP_BIN:-$root/build/hiccup}
PORT_BASE=${PORT_BASE:-19080}
WRK_CPU=${WRK_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}

# --- what the benchmark needs -------------------------------------------------------------------
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v curl >/dev/null || missing+=(curl)
command -v java >/dev/null || missing+=(default-jre-headless)
command -v node >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "peers: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
[ -x "$HICCUP_BIN" ] || { echo "peers: $HICCUP_BIN not found; build first (scripts/setup.sh)" >&2; exit 1; }
CEILING_BIN=${CEILING_BIN:-$(dirname "$HICCUP_BIN")/hiccup_ceiling}
if [ ! -x "$CEILING_BIN" ]; then
  echo "peers: building hiccup_ceiling" >&2
  cmake --build "$(dirname "$CEILING_BIN")" --target hiccup_ceiling >&2
fi

peers=$root/.cache/peers
mkdir -p "$peers"
if ! cmp -s bench/peers/npm/package.json "$peers/package.json" || [ ! -f "$peers/node_modules/wiremock/package.json" ] ||
   [ ! -f "$peers/node_modules/mockttp/package.json" ]; then
  echo "peers: installing wiremock and mockttp into .cache/peers" >&2
  cp bench/peers/npm/package.json "$peers/package.json"
  (cd "$peers" && npm install --no-audit --no-fund --loglevel=error >"$peers/install.log" 2>&1) ||
    { tail -20 "$peers/install.log" >&2; exit 1; }
fi
wiremock_jar=$(ls "$peers"/node_modules/wiremock/build/wiremock-standalone-*.jar | head -1)

work=$(mktemp -d)
servers=()
cleanup() {
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/post.lua" <<'EOF'
wrk.method = "POST"
wrk.path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
wrk.body = '{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}'
wrk.headers["Content-Type"] = "application/json"
EOF
# The same request with "Connection: close": a new TCP connection for every answer, the yardstick
# for the FIN row, whose client must reconnect after every answer too.
{ cat "$work/post.lua"; echo 'wrk.headers["Connection"] = "close"'; } >"$work/post_close.lua"
target=/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse
request_body='{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}'

port=$PORT_BASE
wait_ready() {  # PORT: until the server answers GET / (at most 60 s: the JVM starts slowly)
  for _ in $(seq 600); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  echo "peers: nothing answers on port $1" >&2
  exit 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
to_ms() {  # wrk's latency ("812.00us", "1.24ms", "2.01s") in ms
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'
}
hz=$(getconf CLK_TCK)

# The stream every server sends: hiccup's own answer to the benchmark request.
taskset -c "$SERVER_CPU" "$HICCUP_BIN" serve bench/peers/gemini_stream.json --port $port >/dev/null 2>&1 &
probe=$!
servers+=($probe)
wait_ready $port
curl -s -X POST "http://127.0.0.1:$port$target" -d "$request_body" -o "$work/stream.sse"
kill -INT $probe; wait $probe 2>/dev/null || true
port=$((port + 1))

results=$work/results.tsv
: >"$results"
measure() {  # LABEL PID PORT CONNECTIONS [cut|close]: with "cut", answers cut short by the server
             # (wrk's read errors) count as requests: a FIN mid-stream is the answer under test;
             # with "close", every request asks for "Connection: close"
  local label=$1 pid=$2 p=$3 conns=$4 out=$work/wrk.txt t0 t1 n rps p99 errors script=$work/post.lua
  [ "${5:-}" != close ] || script=$work/post_close.lua
  taskset -c "$WRK_CPU" wrk -t1 -c"$conns" -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$p" >/dev/null
  t0=$(cpu_ticks "$pid")
  taskset -c "$WRK_CPU" wrk -t1 -c"$conns" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$p" >"$out"
  t1=$(cpu_ticks "$pid")
  n=$(awk '/requests in/ {print $1}' "$out")
  rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$out")
  if [ "${5:-}" = cut ]; then
    n=$((n + $(awk '/Socket errors/ {gsub(",", ""); print $6}' "$out")))
    rps=$(awk -v n="$n" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }')
    label="$label (answers = wrk read errors)"
  fi
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  errors=$(awk '/Socket errors/ {gsub(",", ""); printf "connect %s read %s write %s timeout %s", $4, $6, $8, $10}' "$out")
  [ -n "$errors" ] || errors="none"
  local non2xx
  non2xx=$(awk '/Non-2xx/ {print $5}' "$out")
  [ -z "$non2xx" ] || errors="$errors; non-2xx $non2xx"
  local cpu_us
  cpu_us=$(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", (n > 0) ? (d * 1e6 / hz / n) : 0 }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$conns" "$rps" "$p99" "$cpu_us" "$(rss_mb "$pid")" "$errors" >>"$results"
  echo "peers: $label, $conns connections: $rps req/s, p99 $p99 ms, $cpu_us µs CPU/request" >&2
}

start_hiccup() {  # SCENARIO → sets pid
  taskset -c "$SERVER_CPU" "$HICCUP_BIN" serve "$1" --port $port >/dev/null 2>"$work/hiccup.err" &
  pid=$!
  servers+=($pid)
  wait_ready $port
}
stop_hiccup() {  # reports how long Ctrl-C took
  local t0 t1
  t0=$(date +%s%N)
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  t1=$(date +%s%N)
  echo "peers: hiccup stopped $(( (t1 - t0) / 1000000 )) ms after SIGINT" >&2
  stop_times+=("$(( (t1 - t0) / 1000000 ))")
  port=$((port + 1))
}
stop_times=()

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

start_hiccup bench/peers/gemini_stream.json
for c in 16 64 256; do measure "hiccup serve" "$pid" $port $c; done
measure "hiccup serve, Connection: close on every request" "$pid" $port 16 close
stop_hiccup
start_hiccup bench/peers/gemini_stream_malformed.json
measure "hiccup, malformed frame on every request" "$pid" $port 16
stop_hiccup
start_hiccup bench/peers/gemini_stream_disconnect.json
measure "hiccup, FIN mid-stream on every request" "$pid" $port 16 cut
stop_hiccup
start_hiccup bench/peers/gemini_stream_cut.json
measure "hiccup, frame cut then FIN on every request" "$pid" $port 16 cut
stop_hiccup
start_hiccup bench/peers/gemini_stream_reset.json
measure "hiccup, RST mid-stream on every request (idle 0)" "$pid" $port 16 cut
stop_hiccup
start_hiccup bench/peers/gemini_status_503.json
measure "hiccup, 503 on every request" "$pid" $port 16
stop_hiccup

mkdir -p "$work/wiremock/mappings" "$work/wiremock/__files"
python3 -c 'import json, sys
body = open(sys.argv[1], encoding="utf-8").read()
json.dump({"request": {"method": "ANY", "urlPattern": ".*"},
           "response": {"status": 200, "headers": {"Content-Type": "text/event-stream"}, "body": body}},
          open(sys.argv[2], "w"))' "$work/stream.sse" "$work/wiremock/mappings/stream.json"
wiremock_version=$(basename "$wiremock_jar" .jar | sed 's/wiremock-standalone-//')
taskset -c "$SERVER_CPU" java -jar "$wiremock_jar" --port $port --root-dir "$work/wiremock" --no-request-journal \
  --disable-request-logging --disable-banner >"$work/wiremock.log" 2>&1 &
pid=$!
servers+=($pid)
wait_ready $port
WARMUP=$((WARMUP < 10 ? 10 : WARMUP)) measure "WireMock $wiremock_version, inline body, journal and logging off" "$pid" $port 16  # JIT warm-up
kill "$pid"; wait "$pid" 2>/dev/null || true
port=$((port + 1))

mockttp_version=$(node -p "require('$peers/node_modules/mockttp/package.json').version")
NODE_PATH=$peers/node_modules taskset -c "$SERVER_CPU" node bench/peers/mockttp_server.js $port "$work/stream.sse" >/dev/null 2>&1 &
pid=$!
servers+=($pid)
wait_ready $port
measure "mockttp $mockttp_version, recordTraffic off" "$pid" $port 16
kill "$pid"; wait "$pid" 2>/dev/null || true
port=$((port + 1))

taskset -c "$SERVER_CPU" node bench/peers/node_server.js $port "$work/stream.sse" >/dev/null 2>&1 &
pid=$!
servers+=($pid)
wait_ready $port
measure "Node $(node --version) http, 6 writes" "$pid" $port 16
kill "$pid"; wait "$pid" 2>/dev/null || true
port=$((port + 1))

taskset -c "$SERVER_CPU" "$CEILING_BIN" $port "$work/stream.sse" >/dev/null 2>&1 &
pid=$!
servers+=($pid)
wait_ready $port
measure "ceiling: epoll, one prebuilt answer (bench/ceiling_server.cpp)" "$pid" $port 16
kill "$pid"; wait "$pid" 2>/dev/null || true

load_after=$(cut -d' ' -f1-3 /proc/loadavg)

hiccup_rps=$(awk -F'\t' '$1 == "hiccup serve" && $2 == 16 {print $3}' "$results")
echo
echo "Side by side, $(nproc) cores, wrk -t1 on CPU $WRK_CPU, server on CPU $SERVER_CPU, ${WARMUP}s warm-up + ${DURATION}s;"
echo "stream of $(wc -c <"$work/stream.sse") bytes; load average before: $load_before, after: $load_after"
echo
echo "| server | connections | req/s | p99 ms | CPU µs/request | RSS MB | hiccup ÷ this (req/s, 16 conns) | wrk socket errors |"
echo "|---|---|---|---|---|---|---|---|"
awk -F'\t' -v h="$hiccup_rps" '{
  ratio = ($3 > 0) ? sprintf("%.2f", h / $3) : "-"
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, ratio, $7 }' "$results"
echo
echo "hiccup stopped after SIGINT in: ${stop_times[*]} ms"
