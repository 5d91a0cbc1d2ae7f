#!/usr/bin/env bash
# All tests: set up (packages, build), then every ctest entry: unit tests, loopback integration
# tests, RapidCheck properties, the suite's kill matrix and the exploration kill matrix. Then, in
# their own build directories (clang): the ctest under ASan+UBSan and the HTTP and concurrency
# tests under TSan (scripts/sanitize.sh), and each libFuzzer target for FUZZ_SECONDS (default 30;
# scripts/fuzz.sh). Arguments go to the plain ctest run. SANITIZE=0 or FUZZ_SECONDS=0 skips those.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j2 --timeout 600 "$@")
if [ "${SANITIZE:-1}" != 0 ]; then
  scripts/sanitize.sh
fi
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
fi
