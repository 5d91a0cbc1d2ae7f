#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan into build-fuzz/, writes their
# seed corpora from the bundled scenarios (build-fuzz/corpus/seeds/TARGET), then runs each target
# for SECONDS (default 30) on 1 job, two targets at a time (FUZZ_JOBS), and prints, per target, the
# inputs executed, inputs per second and the crashes.
# A crash leaves its input in build-fuzz/crashes/TARGET/ and makes the script exit 1.
# FUZZ_RUNS=N: each target stops after N inputs instead (SECONDS is then ignored). FUZZ_FAST=1: the
# long volume runs, in build-fuzz-fast/: UBSan without ASan, -O2, and no comparison tracing
# (-fno-sanitize-coverage=trace-cmp: over half of a run's time went to it), about 3x the inputs a
# second. A memory error that does not crash goes unseen there, and mutations are no longer guided
# by comparison operands, so the ASan tree's guided runs stay the default.
# Only the fuzz targets and the libraries they link are built here; the ctest under ASan + UBSan has
# a tree without coverage instrumentation (build-asan, scripts/sanitize.sh). --configure-only
# configures this tree and stops; --install-only installs what is missing and stops; --build-only
# builds the targets and stops (scripts/test.sh builds them in the background that way).
# HICCUP_FUZZ_BUILD=DIR builds the ASan tree there instead of build-fuzz/ (not the FUZZ_FAST one).
# HICCUP_FUZZ_TREE=DIR uses a tree configured elsewhere instead, as it is (no configure step): CI's
# build-asan/ with HICCUP_SANITIZE_FUZZ=ON (scripts/sanitize.sh, CMakeLists.txt), whose targets are
# guided by edge counters alone, without comparison tracing.
#   scripts/fuzz.sh [SECONDS] [TARGET...]       e.g. scripts/fuzz.sh 600 fuzz_sse_decoder
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true

packages=(clang libclang-rt-14-dev cmake ninja-build pkg-config nlohmann-json3-dev libcpp-httplib-dev librapidcheck-dev catch2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$seconds" != --install-only ] || exit 0

build=${HICCUP_FUZZ_BUILD:-build-fuzz}
sanitizers=address,undefined
opt="-O1 -gline-tables-only"
if [ "${FUZZ_FAST:-0}" = 1 ]; then
  build=build-fuzz-fast
  sanitizers=undefined
  opt="-O2 -gline-tables-only -fno-sanitize-coverage=trace-cmp"
fi
all_targets=(fuzz_sse_decoder fuzz_eventstream fuzz_scenario_loader fuzz_json_reader fuzz_server_bytes fuzz_ws_frame fuzz_record)
for p in gemini openai-chat openai-responses anthropic; do
  all_targets+=("fuzz_codec_stream_$p" "fuzz_mock_request_$p")
done
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")

if [ -n "${HICCUP_FUZZ_TREE:-}" ]; then
  build=$HICCUP_FUZZ_TREE
  [ -f "$build/build.ninja" ] || { echo "fuzz: HICCUP_FUZZ_TREE=$build is not a configured build tree" >&2; exit 2; }
else
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DHICCUP_FUZZ=ON -DHICCUP_FUZZ_SANITIZERS="$sanitizers" >/dev/null
fi
[ "$seconds" = --configure-only ] && exit 0
ninja -C "$build" -j"${JOBS:-2}" hiccup_fuzz_seeds "${targets[@]}"
[ "$seconds" != --build-only ] || exit 0
rm -rf "$build/corpus/seeds"
ASAN_OPTIONS=detect_leaks=0 "$build/fuzz/hiccup_fuzz_seeds" . "$build/corpus/seeds"

seeds_of() {  # the seed folder of a target
  case "$1" in
    fuzz_sse_decoder) echo sse_decoder ;;
    fuzz_eventstream) echo eventstream ;;
    fuzz_scenario_loader) echo scenario_loader ;;
    fuzz_json_reader) echo scenario_loader ;;  # JSON texts: the scenario files
    fuzz_server_bytes) echo server_bytes ;;
    fuzz_ws_frame) echo ws_frame ;;
    fuzz_record) echo sse_decoder ;;  # SSE streams
    fuzz_codec_stream_*) echo "codec_stream_${1#fuzz_codec_stream_}" ;;
    fuzz_mock_request_*) echo "mock_request_${1#fuzz_mock_request_}" ;;
  esac
}

# Two targets at a time (FUZZ_JOBS, default 2: one per core of CI's machine), each on 1 job; the
# table comes out in target order once all have finished.
run_target() {  # TARGET: runs it, leaves its exit code in $build/fuzz-TARGET.rc
  local t=$1 corpus="$build/corpus/$1" crashes="$build/crashes/$1" rc=0
  mkdir -p "$corpus" "$crashes"
  local limit=(-max_total_time="$seconds")
  [ -z "${FUZZ_RUNS:-}" ] || limit=(-runs="$FUZZ_RUNS")
  "$build/fuzz/$t" "${limit[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "$build/corpus/seeds/$(seeds_of "$t")" \
    >"$build/fuzz-$t.log" 2>&1 || rc=$?
  echo "$rc" >"$build/fuzz-$t.rc"
}
jobs_max="${FUZZ_JOBS:-2}"
running=0
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-$t.rc"
  if ((running >= jobs_max)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

failed=0
printf '%-32s %12s %10s %8s %s\n' target inputs inputs/s crashes seconds
for t in "${targets[@]}"; do
  log="$build/fuzz-$t.log"
  rc=$(cat "$build/fuzz-$t.rc" 2>/dev/null || echo '?')
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1) || true
  rate=$(grep -o 'exec/s: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1) || true
  found=$(find "$build/crashes/$t" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*$' | tail -1) || true
  printf '%-32s %12s %10s %8s %s\n' "$t" "${runs:-?}" "${rate:-?}" "$found" "${took:-$seconds}"
  if [ "$rc" != 0 ] || ((found > 0)); then
    failed=1
    echo "fuzz: $t failed (exit $rc); log $log, inputs in $build/crashes/$t" >&2
    grep -m5 -E 'ERROR|SUMMARY|runtime error' "$log" >&2 || true
  fi
done
exit "$failed"
