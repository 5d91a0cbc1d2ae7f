#!/usr/bin/env bash
# The main job: set up, run the bundled scenario suite over HTTP on 127.0.0.1 (with its kill
# matrix), then a property-based exploration over HTTP; reports go to reports/suite and
# reports/explore. Extra arguments go to `hiccup explore` (e.g. --defect keep-calls-on-retry).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit $?

status=0
echo "== scenario suite (reports/suite) =="
build/hiccup run scenarios --catches --report-dir reports/suite || status=$?
echo "== exploration over HTTP: 1000 generated cases, seed 1 (reports/explore) =="
build/hiccup explore --transport http --cases 1000 --seed 1 --check-determinism --report-dir reports/explore "$@" || status=$?
exit $status
