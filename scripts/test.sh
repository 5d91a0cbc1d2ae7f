#!/usr/bin/env bash
# All tests: set up (packages, build), then every ctest entry: unit tests, loopback integration
# tests, RapidCheck properties, the suite's kill matrix and the exploration kill matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j2 --timeout 600 "$@"
