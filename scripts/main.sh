#!/usr/bin/env bash
# The main job: set up, run the bundled scenario suite over HTTP on 127.0.0.1 (with its kill
# matrix) in each of the four wire formats and the WebSocket scenarios over the WebSocket mode, then a property-based exploration over HTTP with the
# provider drawn per case; reports go to reports/suite/PROVIDER and reports/explore. Extra
# arguments go to `hiccup explore` (e.g. --defect keep-calls-on-retry, --provider anthropic).
#
# It ends with one line per run saying how it ended and what that means. With --defect the
# exploration is expected to fail: that failure is the expected catch (the defect found and shrunk
# to a counterexample), and an exploration that passes is the surprise. Exit 0 when every run
# ended as expected (the suites passed; the exploration passed, or with --defect caught it), else
# the first unexpected exit code (1 when a --defect exploration passed).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit $?

status=0
summary=()
unexpected() {  # CODE LINE: a run that did not end as expected
  ((status != 0)) || status=$1
  summary+=("$2")
}

for provider in gemini openai-chat openai-responses anthropic; do
  echo "== scenario suite as $provider (reports/suite/$provider) =="
  build/hiccup run scenarios --catches --provider "$provider" --report-dir "reports/suite/$provider"
  rc=$?
  if ((rc == 0)); then
    summary+=("suite as $provider: passed")
  elif ((rc == 1)); then
    unexpected "$rc" "suite as $provider: FAILED (reports/suite/$provider/summary.md)"
  else
    unexpected "$rc" "suite as $provider: ended with exit $rc (2 usage, 3 invalid input, 5 internal error)"
  fi
done

# The WebSocket mode's own scenarios, with the kill matrix of the defects whose site is the
# WebSocket transport (replay-lost-context), which the runs above skip.
echo "== WebSocket scenarios over --transport websocket (reports/suite/websocket) =="
build/hiccup run scenarios/websocket --catches --transport websocket --report-dir reports/suite/websocket
rc=$?
if ((rc == 0)); then
  summary+=("websocket suite: passed")
elif ((rc == 1)); then
  unexpected "$rc" "websocket suite: FAILED (reports/suite/websocket/summary.md)"
else
  unexpected "$rc" "websocket suite: ended with exit $rc (2 usage, 3 invalid input, 5 internal error)"
fi

# The defects the exploration switches on (--defect NAME or --defect=NAME, repeatable).
defects=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --defect) ((i + 1 < ${#args[@]})) && defects+=("${args[i + 1]}") ;;
    --defect=*) defects+=("${args[i]#--defect=}") ;;
  esac
done

echo "== exploration over HTTP: 1000 generated cases, seed 1 (reports/explore) =="
build/hiccup explore --transport http --cases 1000 --seed 1 --check-determinism --report-dir reports/explore "$@"
rc=$?
no_verdict="which is no verdict (2 usage, 3 invalid input, 4 determinism, 5 internal error)"
if ((${#defects[@]} == 0)); then
  if ((rc == 0)); then
    summary+=("exploration: passed")
  elif ((rc == 1)); then
    unexpected "$rc" "exploration: FAILED (reports/explore/summary.md)"
  else
    unexpected "$rc" "exploration: ended with exit $rc, $no_verdict"
  fi
else
  what="exploration with defect${defects[1]+s} ${defects[*]}"
  if ((rc == 1)); then
    found=$(ls reports/explore/counterexamples/*.json 2>/dev/null | head -n 1)
    summary+=("$what: failed, as expected: this failure is the expected catch, the defect was found and shrunk to ${found:-a counterexample in reports/explore/counterexamples/} (replay: build/hiccup run ${found:-FILE})")
  elif ((rc == 0)); then
    unexpected 1 "$what: passed, NOT as expected: the defect survived 1000 cases (README \"Exploration and the kill matrix\" says which defects every seed catches)"
  else
    unexpected "$rc" "$what: ended with exit $rc, $no_verdict"
  fi
fi

echo "== main.sh: how each run ended =="
for line in "${summary[@]}"; do echo "  $line"; done
if ((status == 0)); then
  echo "main.sh: every run ended as expected"
else
  echo "main.sh: some run did not end as expected (exit $status)"
fi
exit $status
