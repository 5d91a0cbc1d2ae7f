#!/usr/bin/env bash
# All tests, as CI runs them (.ci/run): set up (packages, build into build/), then every ctest entry
# (unit tests, loopback integration tests, RapidCheck properties, the suite's and the exploration's
# kill matrices, agents, sdk, browser, ...). Then, each in its own clang build directory and only
# when asked:
#   - SANITIZE=asan, tsan, or 1 for both (what CI sets, .ci/run): scripts/sanitize.sh, the ctest
#     under ASan + UBSan (build-asan/, all labels but agents, sdk, browser, reports, docs,
#     examples, minimal, clients and package) and the HTTP and concurrency tests under TSan (build-tsan/, first: its
#     ctest waits on real-time timeouts while the ASan tree builds), the repetition-heavy entries (soak, kill
#     matrices, HTTP against memory, merge against unsharded) on a tenth of their seeds, requests
#     or cases (HICCUP_TEST_SCALE, tests/test_scale.h; 1 runs them whole);
#   - FUZZ_SECONDS=N (CI: 2): scripts/fuzz.sh, each libFuzzer target for N seconds, two at a
#     time, ASan + UBSan with coverage: in build-asan/ (edge counters only) when SANITIZE runs
#     asan, else (or with FUZZ_TREE=own) in a tree of its own (build-fuzz/, with comparison tracing).
# The sanitizer and fuzz trees are built in the background from the start, one after another, at
# idle CPU priority (chrt --idle: they get a core only when nothing else wants it): they take up
# what the foreground leaves idle (little in the plain build; much in the plain ctest and the TSan
# ctest, which wait on real-time retries and timeouts), and each test phase then waits
# for its tree, which then has both cores (docs/ROBUSTNESS.md, "CI's time budget", stop 24).
# Their logs: build-logs/TREE.log.
# Each phase prints its wall time. Arguments go to the plain ctest run only.
#   scripts/test.sh [CTEST_ARGS...]        e.g. SANITIZE=1 FUZZ_SECONDS=30 scripts/test.sh -LE agents
set -euo pipefail
cd "$(dirname "$0")/.."
phase() {  # NAME COMMAND...: runs COMMAND, then prints how long it took; returns COMMAND's status
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "test.sh: $name took $((SECONDS - start)) s"
  return "$rc"
}
case "${SANITIZE:-0}" in
  0 | "") sanitizers=() ;;
  1 | all) sanitizers=(asan tsan) ;;
  *) read -r -a modes <<<"${SANITIZE//,/ }"
     sanitizers=()
     for mode in "${modes[@]}"; do  # each once, in the order given
       [[ " ${sanitizers[*]} " == *" $mode "* ]] || sanitizers+=("$mode")
     done ;;
esac
if [[ ${SANITIZE:-} == *,* && ",$SANITIZE," == *,,* ]]; then
  echo "test.sh: SANITIZE=$SANITIZE has an empty entry (lists name asan and tsan: asan,tsan)" >&2; exit 2
fi
for mode in "${sanitizers[@]}"; do
  case "$mode" in
    asan | tsan) ;;
    0 | 1 | all) echo "test.sh: SANITIZE=$SANITIZE: '$mode' stands alone, not in a list (lists name asan and tsan)" >&2; exit 2 ;;
    *) echo "test.sh: SANITIZE must be 0, 1, all, asan, tsan or asan,tsan; found '$mode' in SANITIZE=$SANITIZE" >&2; exit 2 ;;
  esac
done
if [[ ${SANITIZE:-0} != 0 && ${SANITIZE:-} != "" && ${#sanitizers[@]} -eq 0 ]]; then
  echo "test.sh: SANITIZE=$SANITIZE names no sanitizer (0, 1, all, asan, tsan or asan,tsan)" >&2; exit 2
fi
# Installs first, one apt at a time; then the background builds; then the plain build.
scripts/setup.sh --install-only
((${#sanitizers[@]} == 0)) || scripts/sanitize.sh --install-only
[ "${FUZZ_SECONDS:-0}" = 0 ] || scripts/fuzz.sh --install-only
# TSan first (stop 50): its tree is the smaller (the HTTP and concurrency tests only) and its ctest
# waits on real-time I/O timeouts for most of its wall time, so it runs right after the plain ctest
# while the ASan tree's build takes the idle core, instead of last with little to overlap it (stop
# 49's order, asan then tsan, left the TSan build and ctest alone at the end of the run).
ordered=()
[[ " ${sanitizers[*]} " != *" tsan "* ]] || ordered+=(tsan)
[[ " ${sanitizers[*]} " != *" asan "* ]] || ordered+=(asan)
sanitizers=("${ordered[@]}")
trees=("${sanitizers[@]}")
# With the ASan tree too, the fuzz targets are built in it (HICCUP_SANITIZE_FUZZ: edge counters on
# every source, CMakeLists.txt) and no fuzz tree is built: the sanitizer trees built one after
# another are CI's critical path, and the fuzz tree compiled the ASan tree's sources again. Stop 45
# tried this once and the entry "an answer larger than the socket buffers waits for a slow reader
# while others are served" hung until ctest's timeout on a machine loaded by three other builds;
# stop 46 ran it 7 times in such a tree under a build (4.0-5.1 s each, no hang) and tries CI again
# (docs/ROBUSTNESS.md, "CI's time budget"). FUZZ_TREE=own keeps the fuzz tree of its own.
fuzz_tree=""
if [ "${FUZZ_SECONDS:-0}" != 0 ]; then
  if [[ " ${sanitizers[*]} " == *" asan "* && ${FUZZ_TREE:-asan} != own ]]; then
    export HICCUP_SANITIZE_FUZZ=1
    fuzz_tree=build-asan
  else
    trees+=(fuzz)
  fi
fi

logs=build-logs
background=""
if ((${#trees[@]})); then
  mkdir -p "$logs"
  for t in "${trees[@]}"; do rm -f "$logs/$t.done"; done
  idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  # A process group of their own, which the trap below ends with the script; not a session of their
  # own (setsid): with the kernel's autogroups (sched_autogroup_enabled, on in Debian's kernels) a
  # new session is scheduled as a group of its own, as heavy as the foreground's, and got half the
  # CPU whatever its priority.
  # Each TREE.done holds "EXIT SECONDS RUN": RUN (this script's pid) tells this run's from one
  # left by an earlier run that was killed before its trap could end its builds; it is written
  # whole (mv) so that a poll never reads half of it.
  perl -e 'setpgrp(0, 0); exec @ARGV or die "test.sh: cannot run @ARGV: $!\n"' -- "${idle[@]}" bash -c '
    logs=$1 run=$2
    shift 2
    for t in "$@"; do
      start=$SECONDS rc=0
      case "$t" in
        fuzz) scripts/fuzz.sh --build-only ;;
        *) scripts/sanitize.sh --build-only "$t" ;;
      esac >"$logs/$t.log" 2>&1 || rc=$?
      echo "$rc $((SECONDS - start)) $run" >"$logs/$t.done.tmp"
      mv "$logs/$t.done.tmp" "$logs/$t.done"
    done' background-builds "$logs" "$$" "${trees[@]}" &
  background=$!
  # Output into a pipe that closes early (scripts/test.sh | head) would kill the script with
  # SIGPIPE before its EXIT trap could end the builds: a SIGPIPE exits through the trap instead,
  # which ignores further ones (its own writes, bash -x's trace) so that the kill always runs.
  trap 'exit 141' PIPE
  trap 'trap "" PIPE; [ -z "$background" ] || kill -- -"$background" 2>/dev/null || true' EXIT
  echo "test.sh: building ${trees[*]} in the background at idle priority (logs in $logs/)"
fi
await_tree() {  # TREE: waits for its background build; a failed one is rebuilt in the foreground
  local rc='?' took='?' run=''
  done_here() { { read -r rc took run <"$logs/$1.done"; } 2>/dev/null && [ "$run" = "$$" ]; }
  # The leader (until it has made its process group) or the whole group: the leader may be gone
  # while a build it started is still running.
  alive() { kill -0 "$background" 2>/dev/null || kill -0 -- -"$background" 2>/dev/null; }
  until done_here "$1"; do
    alive || { done_here "$1" || run=''; break; }
    sleep 1
  done
  if [ "$run" != "$$" ]; then
    # The builds ended without this tree's: nothing of them may still write into its directory.
    kill -- -"$background" 2>/dev/null || true
    while alive; do sleep 1; done
    rc='?' took='?'
  fi
  echo "test.sh: the $1 tree's background build took $took s (exit $rc; $logs/$1.log)"
  [ "$rc" = 0 ] || tail -20 "$logs/$1.log" >&2 || true
}
after_tree() {  # TREE COMMAND...: waits for TREE's background build, then runs COMMAND
  await_tree "$1"
  shift
  "$@"
}
# With the ASan tree in the run, the plain tree builds and runs only what the sanitizer trees leave
# out (scripts/unsanitized_labels, and the `plain` label: checks of the plain build itself): every
# other entry runs once, under ASan + UBSan, instead of twice. At stop 46 those entries were 328 of
# the plain ctest's 945 test-seconds and their test binaries about 250 of the plain build's
# compile-seconds, in a run that kept both cores busy throughout. HICCUP_PLAIN_ALL=1, or ctest
# arguments, build and run the whole plain ctest as without sanitizers.
plain_labels=()
if [[ " ${sanitizers[*]} " == *" asan "* && ${HICCUP_PLAIN_ALL:-0} != 1 && $# -eq 0 ]]; then
  export HICCUP_PLAIN_TARGETS=unsanitized
  plain_labels=(-L "$(<scripts/unsanitized_labels)|^plain\$")
  echo "test.sh: the plain tree builds and runs the labels ${plain_labels[1]} only; the ASan + UBSan tree runs every other entry"
fi
phase "setup and build" scripts/setup.sh
# Three entries at a time on CI's 2 cores: the agent CLIs' matrices (started early, by COST) spend
# about half their wall time waiting on the CLIs' real-time retries and timeouts (qwen-code and
# opencode side by side: 193 s wall, 209 CPU s). CTEST_JOBS sets another number.
phase ctest bash -c 'cd build && ctest --output-on-failure -j"${CTEST_JOBS:-3}" --timeout 600 "$@"' ctest "${plain_labels[@]}" "$@"
for mode in "${sanitizers[@]}"; do
  case "$mode" in
    asan) phase "asan+ubsan build (the rest) and ctest" after_tree asan scripts/sanitize.sh asan ;;
    tsan) phase "tsan build (the rest) and ctest" after_tree tsan scripts/sanitize.sh tsan ;;
  esac
done
fuzz_rc=0
if [ -n "$fuzz_tree" ]; then
  phase "fuzz: ${FUZZ_SECONDS} s per target in $fuzz_tree" env HICCUP_FUZZ_TREE="$fuzz_tree" scripts/fuzz.sh "${FUZZ_SECONDS}" || fuzz_rc=$?
elif [ "${FUZZ_SECONDS:-0}" != 0 ]; then
  phase "fuzz build (the rest) and ${FUZZ_SECONDS} s per target" after_tree fuzz scripts/fuzz.sh "${FUZZ_SECONDS}" || fuzz_rc=$?
fi
[ "$fuzz_rc" = 0 ] || exit "$fuzz_rc"
# CPU time of the whole run (user, then system: this script, then every process it waited for, the
# background builds included): what the run asked of the machine's cores, which another load on the
# machine changes far less than the wall times above.
[ -z "$background" ] || { wait "$background" 2>/dev/null || true; }
echo "test.sh: CPU time (user system; the first line this script, the second its children):"
times  # not in $(...): a subshell would count only itself
