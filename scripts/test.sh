#!/usr/bin/env bash
# All tests, as CI runs them (.ci/run): set up (packages, build into build/), then every ctest entry
# (unit tests, loopback integration tests, RapidCheck properties, the suite's and the exploration's
# kill matrices, agents, sdk, browser, ...). Then, each in its own clang build directory and only
# when asked:
#   - SANITIZE=asan, tsan, or 1 for both (what CI sets, .ci/run): scripts/sanitize.sh, the ctest
#     under ASan + UBSan (build-asan/, all labels but agents, sdk and browser) and the HTTP and
#     concurrency tests under TSan (build-tsan/), the repetition-heavy entries (soak, kill
#     matrices, HTTP against memory, merge against unsharded) on a quarter of their seeds, requests
#     or cases (HICCUP_TEST_SCALE, tests/test_scale.h; 1 runs them whole);
#   - FUZZ_SECONDS=N (CI: 30): scripts/fuzz.sh, each libFuzzer target for N seconds, two at a
#     time, ASan + UBSan with coverage (build-fuzz/).
# Each phase prints its wall time. Arguments go to the plain ctest run only.
#   scripts/test.sh [CTEST_ARGS...]        e.g. SANITIZE=1 FUZZ_SECONDS=30 scripts/test.sh -LE agents
set -euo pipefail
cd "$(dirname "$0")/.."
phase() {  # NAME COMMAND...: runs COMMAND, then prints how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}
case "${SANITIZE:-0}" in
  0 | "") sanitizers=() ;;
  1 | all) sanitizers=(asan tsan) ;;
  *) read -r -a sanitizers <<<"${SANITIZE//,/ }" ;;
esac
for mode in "${sanitizers[@]}"; do
  [[ $mode == asan || $mode == tsan ]] ||
    { echo "test.sh: SANITIZE must be 0, 1, all, asan, tsan or asan,tsan; found '$mode'" >&2; exit 2; }
done
phase "setup and build" scripts/setup.sh
# Three entries at a time on CI's 2 cores: the agent CLIs' matrices (started early, by COST) spend
# about half their wall time waiting on the CLIs' real-time retries and timeouts (qwen-code and
# opencode side by side: 193 s wall, 209 CPU s). CTEST_JOBS sets another number.
phase ctest bash -c 'cd build && ctest --output-on-failure -j"${CTEST_JOBS:-3}" --timeout 600 "$@"' ctest "$@"
for mode in "${sanitizers[@]}"; do
  case "$mode" in
    asan) phase "asan+ubsan build and ctest" scripts/sanitize.sh asan ;;
    tsan) phase "tsan build and ctest" scripts/sanitize.sh tsan ;;
  esac
done
if [ "${FUZZ_SECONDS:-0}" != 0 ]; then
  phase "fuzz build and ${FUZZ_SECONDS} s per target" scripts/fuzz.sh "${FUZZ_SECONDS}"
fi
