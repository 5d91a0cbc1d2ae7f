#!/usr/bin/env bash
# ctest package.install-runs: installs BUILD into SCRATCH/root with `cmake --install --prefix /usr`
# (DESTDIR, as the Debian package lays it out), then runs the installed hiccup from the installed
# files only: env -i, PATH = the installed bin and the system's, the working folder in SCRATCH.
#
# usage: tests/package/install_runs.sh BUILD SCRATCH
set -euo pipefail
build="$1"
scratch="$2"
fail() { echo "package.install-runs: $*" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch/home"
DESTDIR="$scratch/root" cmake --install "$build" --prefix /usr >"$scratch/install.log" ||
  { cat "$scratch/install.log" >&2; fail "cmake --install failed"; }
usr="$scratch/root/usr"
data="$usr/share/hiccup"
for f in bin/hiccup share/hiccup/recipes/gemini-cli.json share/hiccup/known-failures.json \
         share/hiccup/schema/scenario.schema.json share/doc/hiccup/README.md share/doc/hiccup/docs/CONTROL-API.md; do
  [[ -e "$usr/$f" ]] || fail "the install lacks $f (log: $scratch/install.log)"
done
run() { (cd "$scratch" && env -i HOME="$scratch/home" PATH="$usr/bin:/usr/bin:/bin" "$@"); }

# The installed binary, found on PATH, reads its data from the install, not the source tree.
[[ "$(run sh -c 'command -v hiccup')" == "$usr/bin/hiccup" ]] || fail "hiccup on PATH is not the installed one"
version="$(run hiccup --version)"
echo "$version"
[[ "$version" =~ ^hiccup\ [0-9]+\.[0-9]+\.[0-9]+$'\n'data:\ "$data"\  ]] ||
  fail "hiccup --version should name the installed data folder $data, printed: $version"

scenario="$data/examples/scenarios/deploy-disconnect-after-call.json"
run hiccup lint "$scenario" || fail "hiccup lint $scenario failed"
run hiccup run "$scenario" --report-dir "$scratch/report" || fail "hiccup run $scenario failed"
[[ -f "$scratch/report/summary.json" ]] || fail "hiccup run wrote no $scratch/report/summary.json"

# hiccup serve with the scenario at the root, one streamed Chat Completions request: the deploy call.
# Not through run(): a backgrounded function runs in a process of its own whose subshell then forks
# hiccup, so $! would not be hiccup and the kill below would leave `hiccup serve` running. exec
# makes the backgrounded subshell hiccup itself.
(cd "$scratch" && exec env -i HOME="$scratch/home" PATH="$usr/bin:/usr/bin:/bin" hiccup serve "$scenario") \
  >"$scratch/serve.out" 2>"$scratch/serve.err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [[ -s "$scratch/serve.out" ]] && break
  sleep 0.05
done
url="$(head -1 "$scratch/serve.out")"
[[ "$url" == http://127.0.0.1:* ]] || fail "hiccup serve printed no base URL: $(cat "$scratch/serve.out" "$scratch/serve.err")"
answer="$(curl -sS --max-time 10 "$url/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Deploy the staging build."}]}' || true)"
grep -q '"name":"deploy"' <<<"$answer" || fail "hiccup serve's answer holds no deploy call: $answer"
kill "$pid"
wait "$pid" || true
trap - EXIT
echo "package.install-runs: the install in $scratch/root ran --version, lint, run and serve"
