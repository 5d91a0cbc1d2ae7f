#!/usr/bin/env bash
# The main job: set up, run the bundled scenario suite over HTTP on 127.0.0.1 (with its kill
# matrix) in each of the four wire formats, then a property-based exploration over HTTP with the
# provider drawn per case; reports go to reports/suite/PROVIDER and reports/explore. Extra
# arguments go to `hiccup explore` (e.g. --defect keep-calls-on-retry, --provider anthropic).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit $?

status=0
for provider in gemini openai-chat openai-responses anthropic; do
  echo "== scenario suite as $provider (reports/suite/$provider) =="
  build/hiccup run scenarios --catches --provider "$provider" --report-dir "reports/suite/$provider" || status=$?
done
echo "== exploration over HTTP: 1000 generated cases, seed 1 (reports/explore) =="
build/hiccup explore --transport http --cases 1000 --seed 1 --check-determinism --report-dir reports/explore "$@" || status=$?
exit $status
