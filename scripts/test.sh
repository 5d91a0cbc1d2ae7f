#!/usr/bin/env bash
# All tests, as CI runs them (.ci/run): set up (packages, build into build/), then every ctest entry
# (unit tests, loopback integration tests, RapidCheck properties, the suite's and the exploration's
# kill matrices, agents, sdk, browser, ...). Then, each in its own clang build directory and only
# when asked (not yet in CI: neither has been run to completion within CI's 20-minute budget, see
# docs/ROBUSTNESS.md "CI's time budget"):
#   - SANITIZE=1: scripts/sanitize.sh, the ctest under ASan + UBSan (build-fuzz/, all labels but
#     agents, sdk and browser) and the HTTP and concurrency tests under TSan (build-tsan/);
#   - FUZZ_SECONDS=N: scripts/fuzz.sh, each libFuzzer target for N seconds, two at a time, in the
#     ASan + UBSan tree.
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
phase "setup and build" scripts/setup.sh
phase ctest bash -c 'cd build && ctest --output-on-failure -j2 --timeout 600 "$@"' ctest "$@"
if [ "${SANITIZE:-0}" != 0 ]; then
  phase "asan+ubsan build and ctest" scripts/sanitize.sh asan
  phase "tsan build and ctest" scripts/sanitize.sh tsan
fi
if [ "${FUZZ_SECONDS:-0}" != 0 ]; then
  phase "fuzz build and ${FUZZ_SECONDS} s per target" scripts/fuzz.sh "${FUZZ_SECONDS}"
fi
