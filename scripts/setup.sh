#!/usr/bin/env bash
# Installs what is missing from Debian's packages, then configures and builds hiccup into build/.
# Safe to run again: installs nothing when everything is present, rebuilds incrementally.
# HICCUP_BUILD_ONLY=1 installs only what building needs, not what the tests use (chromium, python
# modules): for CI jobs that only run hiccup, e.g. examples/ci/github-actions.yml.
# --install-only installs and stops (scripts/test.sh, before its background builds start).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config catch2 nlohmann-json3-dev libcpp-httplib-dev librapidcheck-dev
  zlib1g-dev  # CRC32 of the AWS event stream (mock_server/eventstream, runtime_under_test)
  libgoogle-perftools-dev  # tcmalloc_minimal: the allocator (CMakeLists.txt, HICCUP_MALLOC)
  libssl-dev)  # libcrypto's SHA-1: the WebSocket handshake (mock_server/websocket/, runtime_under_test/ws_transport.cpp)
if [ "${HICCUP_BUILD_ONLY:-0}" != 1 ]; then
  # python3-pip, python3-setuptools: `pip install ./clients/python` (scripts/install_python_client.sh)
  packages+=(python3-jsonschema python3-yaml python3-pytest python3-httpx python3-pip python3-setuptools chromium)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" != --install-only ] || exit 0

# HICCUP_DEBUG_INFO (default -g) is the debug-info flag of the RelWithDebInfo build: CI (.ci/run)
# uses -g1 (functions and line tables, enough for backtraces; about 30% less compile time than -g).
# The test sources (HICCUP_TEST_OPT) at -O0, those of the soak and the 1-minimality tests, whose
# test code does the heavy work, at -O1 (HICCUP_HEAVY_TEST_OPT), with hiccup's libraries linked
# ahead of the test objects (HICCUP_TEST_LIBS_FIRST, CMakeLists.txt: the libraries keep their own
# copies of the templates they share with the tests); hiccup and its libraries are built at
# HICCUP_OPT (default -O3). Against the test sources at -O1: 420 against 468 compile seconds (the
# latter in a CI run), and the ctest without the agents, sdk, examples and browser labels the same
# CPU time (108 against 107 s). -O3 against -O2 (stop 28): `explore --cases 5000` 0.95x the wall
# time (farm-bench, 7 pairs), the two largest library batches 3% and 25% longer to compile.
# CI (.ci/run) builds this tree at HICCUP_OPT=-O1: there it only runs the entries that drive
# external programs (scripts/test.sh), and the largest library batch took 72 CPU s at -O1 against
# 124 at -O3 (stop 49). Linked with lld when it is installed (scripts/sanitize.sh installs it):
# ld.bfd took about four times its CPU time for a test binary. HICCUP_UNITY_BATCH (default 8): the
# sources in a unity batch; CI, which builds the tree once, uses 16 (CMakeLists.txt says why).
linker=()
! command -v ld.lld >/dev/null || linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${linker[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${HICCUP_OPT:--O3} ${HICCUP_DEBUG_INFO:--g} -DNDEBUG" -DHICCUP_TEST_OPT="${HICCUP_TEST_OPT:--O0}" \
  -DHICCUP_HEAVY_TEST_OPT="${HICCUP_HEAVY_TEST_OPT:--O1}" -DHICCUP_TEST_LIBS_FIRST=ON \
  -DHICCUP_UNITY_BATCH="${HICCUP_UNITY_BATCH:-8}" >/dev/null
# HICCUP_PLAIN_TARGETS (ninja targets; default all): scripts/test.sh sets `unsanitized` when the
# ASan tree runs the other entries (CI): hiccup and the test binaries of scripts/unsanitized_labels.
# shellcheck disable=SC2086  # a list of target names
ninja -C build -j"${JOBS:-2}" ${HICCUP_PLAIN_TARGETS:-}
