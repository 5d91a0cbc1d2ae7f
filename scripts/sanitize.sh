#!/usr/bin/env bash
# Sanitizer runs (part of scripts/test.sh), each in its own build directory, with clang at -O1:
#   asan  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer, the whole ctest except the
#         labels in scripts/unsanitized_labels: agents (real agent CLIs from npm), sdk (Node SDK clients) and browser (headless
#         Chromium): those drive external programs against the same hiccup code the rest covers,
#         and take most of the plain run's time; the plain build in scripts/test.sh runs them.
#         Since stop 45 also reports, docs and examples (Python and Node scripts that drive the
#         hiccup command and read what it writes: 150 of the 707 s the entries took under ASan,
#         while the C++ they reach is the harness label's too) and minimal (the 1-minimal kill
#         matrix and its replays, 73 s there: the explorer and minimizer run under ASan in the
#         harness label's exploration entries; its binary is not built in sanitizer trees), to
#         keep CI within 25 minutes.
#         Likewise clients (the pytest plugin and the npm helper, issue 40) and package (an install
#         of the plain build into a scratch root).
#         Allocation stacks are kept 8 frames deep (ASAN_OPTIONS malloc_context_size=8, default 30):
#         recording them was a third of the time of the longest entry, the 1-minimal kill matrix
#         (158 s -> 117 s); where a bad access happens is still unwound in full.
#   tsan  build-tsan: ThreadSanitizer on the HTTP and concurrency tests (the mock server on
#         loopback, the runtime's HTTP transport, runs and explorations over HTTP, the soak test).
#         scripts/tsan.supp suppresses one false report from the uninstrumented libcpp-httplib.so
#         (its static std::regex objects; the file says why).
# The fuzz targets have a tree of their own (build-fuzz, scripts/fuzz.sh): its coverage
# instrumentation made this ctest about 20% slower, and it builds only the libraries and targets.
# Both runs set HICCUP_TEST_SCALE=0.1 (unless it is set already; 0.25 until stop 56): the soak, the
# kill matrices, the JSON reader's mutations and the HTTP-against-memory cases run a tenth of their
# requests, mutations or seeds (at least one seed, at least 250 cases), every entry still runs.
# A finding fails the test that hit it (UBSan does not recover; ASan/TSan abort the test binary).
# ASAN_OPTIONS, UBSAN_OPTIONS and TSAN_OPTIONS from the environment come after these, so they win.
# --install-only installs what is missing and stops; --build-only configures and builds the trees
# without running ctest (scripts/test.sh builds them in the background that way).
#   scripts/sanitize.sh [--install-only|--build-only] [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
step=all
case "${1:-}" in
  --install-only) step=install; shift ;;
  --build-only) step=build; shift ;;
esac
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)

packages=(clang libclang-rt-14-dev lld)  # lld: links a test binary in 1.9 CPU s where ld.bfd took 7.1
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
[ "$step" != install ] || exit 0

# The libraries at -O1, the test sources at -O0 (HICCUP_TEST_OPT), but those of the soak and the
# 1-minimality tests, whose test code does the heavy work, at -O1 (HICCUP_HEAVY_TEST_OPT). The
# test binaries load the libraries ahead of the test objects (HICCUP_TEST_LIBS_FIRST): the linker
# keeps the first copy of an inline function or template it meets, and with the test objects
# first the libraries ran the -O0 copies of the RapidCheck generators and JSON code they share
# with the tests (an exploration entry took 95 s for one seed where it had taken 81 s for three).
# Measured side by side on a quiet machine (ASan + UBSan tree, all at -O1 against all test
# sources at -O0 with the libraries first): build 723 against 571 CPU s, ctest 315 against 365
# CPU s (179 against 205 s wall; the soak +40%, the 1-minimal kill matrix +27%, hence HEAVY).
# Linked with lld where it is installed (the packages above): ld.bfd took 7.1 CPU s (4.1 user,
# 3.0 system) to link harness_tests under ASan + UBSan, lld 1.9 (stop 49), and the ASan tree links
# some thirty executables.
linker=()
! command -v ld.lld >/dev/null || linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
# Unity batches of 16 sources (HICCUP_UNITY_BATCH, CMakeLists.txt; 8 in an editing tree): these
# trees are built whole, and a batch's backend compiles each inline function and template it uses
# once (stop 50: 58 CPU s for 16 of mock_server's sources under ASan + UBSan, 78 as two batches).
# UBSan without its vptr check (-fno-sanitize=vptr): it checks the dynamic type behind every call
# and cast on a polymorphic object, which hiccup's code never downcasts (its virtual interfaces
# are called through the base), and it was 11% of a library batch's compile time (42.0 against
# 37.2 CPU s, stop 50). ASan still catches a call on a freed object.
configure() {  # DIR SANITIZERS [CMAKE_ARGS...]
  local extra=""
  [[ $2 != *undefined* ]] || extra=" -fno-sanitize=vptr"
  CC=clang CXX=clang++ cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${linker[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only$extra" -DHICCUP_SANITIZE="$2" \
    -DHICCUP_UNITY_BATCH="${HICCUP_UNITY_BATCH:-16}" \
    -DHICCUP_TEST_OPT=-O0 -DHICCUP_HEAVY_TEST_OPT=-O1 -DHICCUP_TEST_LIBS_FIRST=ON "${@:3}" >/dev/null
}
# The repetition-heavy entries (the soak's requests, the kill matrices' seeds, the JSON reader's
# 200,000 mutations, the 1,000 cases over HTTP and in memory) run a tenth of their repetitions here,
# every one of them in the plain ctest: tests/test_scale.h. HICCUP_TEST_SCALE=1 runs them whole.
# 0.25 until stop 56: the soak's 64 clients now send 100 requests each under ASan and under TSan
# (6,400 faulted requests; 16,000 before), which were 50 s of TSan's ctest and 31 s of ASan's.
export HICCUP_TEST_SCALE="${HICCUP_TEST_SCALE:-0.1}"

# The HTTP and concurrency tests (ctest -R): loopback server, HTTP transport, runs over HTTP, the
# event loop's workers, pipelining and connection limits, the explorer's threads, soak. Left out:
# "an answer larger than the socket buffers waits for a slow reader..." (8 MB read a little at a
# time: over 10 CPU minutes under TSan). The control API's tests (label serve, loopback, 32
# sessions at once) run whole.
tsan_tests='HTTP|http|server|keep-alive|stop returns|slowloris|never reads|100 MB|1 MB header|hundred thousand|start throws|disconnect closes|reset aborts|cut sends|generateContent with|soak|moves to a worker|pipelined|max_connections|number of jobs|100-continue'
# The labels the ASan + UBSan ctest leaves out (the list above; scripts/test.sh runs them in the plain tree).
unsanitized=$(<scripts/unsanitized_labels)
tsan_skip='larger than the socket buffers'
asan_skip='over HTTP and in memory, with identical digests|give the same verdicts and digests over HTTP and in memory|over HTTP a failure is shrunk in memory'
# The tree compiles only the test sources that declare a test these select (CMakeLists.txt,
# HICCUP_TEST_SOURCE_FILTER); the serve label's binary whole.
tsan_labels='mock_server|runtime|harness|soak'

for mode in "${modes[@]}"; do
  case "$mode" in
    asan)
      # HICCUP_SANITIZE_FUZZ=1: the fuzz targets in this tree too (CMakeLists.txt; scripts/test.sh sets it
      # when it fuzzes as well, as CI does).
      # HICCUP_CTEST_PER_SOURCE: one entry per test source (CMakeLists.txt says which keep one per
      # case): a start of a test binary here costs about 0.23 CPU s.
      configure build-asan address,undefined -DHICCUP_SANITIZE_FUZZ="$([ "${HICCUP_SANITIZE_FUZZ:-0}" = 1 ] && echo ON || echo OFF)" \
        -DHICCUP_CTEST_PER_SOURCE=ON
      ninja -C build-asan -j"${JOBS:-2}"
      [ "$step" != build ] || continue
      # Two entries at a time (ASAN_CTEST_JOBS): three did not shorten CI's run (stop 55: 285 s
      # against 283 s; docs/ROBUSTNESS.md), though some entries wait on real time about half their
      # wall time (harness_agents_tests:agent_runner_test: fake Python agents, real Retry-After).
      # Left to the TSan run (asan_skip): the entries that play the whole suite or a thousand
      # generated cases over HTTP to compare them with memory (48 of this ctest's 266 test-seconds
      # at stop 58). They exercise the transport with no input of their own; under ASan + UBSan the
      # HTTP server, client and transport keep their own entries (http_server_test,
      # http_hostile_test, the soak, runtime_tests' transport cases).
      (cd build-asan &&
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:malloc_context_size=8${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
        ctest --output-on-failure -j"${ASAN_CTEST_JOBS:-2}" --timeout 900 -LE "$unsanitized" -E "$asan_skip")
      ;;
    tsan)
      configure build-tsan thread -DHICCUP_TEST_SOURCE_FILTER="$tsan_tests" \
        -DHICCUP_TEST_SOURCE_FILTER_LABELS="$tsan_labels"
      ninja -C build-tsan -j"${JOBS:-2}" mock_server_tests runtime_tests harness_tests mock_server_soak_tests harness_serve_tests
      [ "$step" != build ] || continue
      (cd build-tsan &&
        export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/../scripts/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}" &&
        ctest --output-on-failure -j2 --timeout 900 -L "$tsan_labels" -R "$tsan_tests" -E "$tsan_skip" &&
        ctest --output-on-failure -j2 --timeout 900 -L '^serve$')
      ;;
    *) echo "usage: scripts/sanitize.sh [--install-only|--build-only] [asan|tsan]..." >&2; exit 2 ;;
  esac
done
