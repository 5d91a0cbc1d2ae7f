#!/usr/bin/env bash
# The latency `hiccup record` (the recording proxy) adds per request, against `hiccup serve` direct:
# wrk, C connections for S seconds each, one streamed Gemini answer (a text event and a finish) per
# request. Prints wrk's latency distribution for both and the recording's size per turn.
# usage: bench/record_overhead.sh [HICCUP] [CONNECTIONS] [SECONDS]   (not run in CI)
set -euo pipefail
hiccup=${1:-build/hiccup}
conns=${2:-16}
secs=${3:-5}
work=$(mktemp -d)
trap 'kill $serve_pid $record_pid 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/s.json" <<'JSON'
{"schema": 1, "name": "bench", "provider": "gemini", "prompt": "hi",
 "turns": [{"attempts": [{"events": [{"text": "Hello there, this is a streamed answer."}, {"finish": "stop"}]}]}]}
JSON
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-goog-api-key"] = "bench-key"
wrk.body = '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
LUA
"$hiccup" serve "$work/s.json" >"$work/serve.url" 2>/dev/null &
serve_pid=$!
sleep 0.5
url=$(head -1 "$work/serve.url")
"$hiccup" record --upstream "$url" --out "$work/rec.json" >"$work/record.url" 2>"$work/record.err" &
record_pid=$!
sleep 0.5
proxy=$(head -1 "$work/record.url")
echo "== direct: $url"
wrk -t"$(( conns < 2 ? 1 : 2 ))" -c"$conns" -d"${secs}s" --latency -s "$work/post.lua" "$url" | sed -n '/Latency Distribution/,/requests in/p'
echo "== through hiccup record: $proxy"
wrk -t"$(( conns < 2 ? 1 : 2 ))" -c"$conns" -d"${secs}s" --latency -s "$work/post.lua" "$proxy" | sed -n '/Latency Distribution/,/requests in/p'
kill -INT $record_pid
wait $record_pid || true
cat "$work/record.err" | tail -2
bytes=$(wc -c <"$work/rec.json")
requests=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(t['attempts']) for t in d['turns']))" "$work/rec.json")
echo "recording: $bytes bytes, $requests attempt(s) in 1 turn: $((bytes / requests)) bytes per recorded attempt"
