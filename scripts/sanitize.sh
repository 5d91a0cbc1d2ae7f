#!/usr/bin/env bash
# Sanitizer runs (part of scripts/test.sh), each in its own build directory, with clang:
#   asan  build-fuzz: AddressSanitizer + UndefinedBehaviorSanitizer, the whole ctest except the
#         labels agents (real agent CLIs from npm), sdk (Node SDK clients) and browser (headless
#         Chromium): those drive external programs against the same hiccup code the rest covers,
#         and take most of the plain run's time; the plain build in scripts/test.sh runs them.
#   tsan  build-tsan: ThreadSanitizer on the HTTP and concurrency tests (the mock server on
#         loopback, the runtime's HTTP transport, runs and explorations over HTTP, the soak test).
# The ASan+UBSan tree is the one scripts/fuzz.sh builds its targets in (same flags, so the
# fuzz targets reuse its objects: one instrumented build instead of two).
# A finding fails the test that hit it (UBSan does not recover; ASan/TSan abort the test binary).
#   scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)

packages=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "sanitize: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

configure() {  # DIR SANITIZERS
  CC=clang CXX=clang++ cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DHICCUP_SANITIZE="$2" >/dev/null
}

# The HTTP and concurrency tests (ctest -R): loopback server, HTTP transport, runs over HTTP, soak.
tsan_tests='HTTP|http|server|keep-alive|stop returns|slowloris|never reads|100 MB|1 MB header|hundred thousand|start throws|disconnect closes|reset aborts|cut sends|generateContent with|soak'

for mode in "${modes[@]}"; do
  case "$mode" in
    asan)
      scripts/fuzz.sh --configure-only
      ninja -C build-fuzz -j"${JOBS:-2}"
      (cd build-fuzz &&
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j2 --timeout 900 -LE 'agents|sdk|browser')
      ;;
    tsan)
      configure build-tsan thread
      ninja -C build-tsan -j"${JOBS:-2}" mock_server_tests runtime_tests harness_tests mock_server_soak_tests
      (cd build-tsan &&
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --output-on-failure -j2 --timeout 900 -L 'mock_server|runtime|harness|soak' -R "$tsan_tests")
      ;;
    *) echo "usage: scripts/sanitize.sh [asan|tsan]..." >&2; exit 2 ;;
  esac
done
