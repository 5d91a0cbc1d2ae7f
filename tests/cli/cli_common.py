"""What the CLI test scripts share (tests/cli/*.py, tests/reports/check_reports.py and
check_browser.py import it): the command line every one takes,

    SCRIPT --hiccup BINARY [--source SRC] --work DIR [CHECK]

a fresh folder per check, and running one check of a checker object by name, with the exit code
ctest reads (0 passed, 1 a check failed, 2 no such check).
"""
import argparse
import os
import shutil
import traceback


def parse_args(source=True, check=True, fresh=False, check_choices=None):
    """The script's arguments, with --hiccup, --source and --work made absolute. `source`: the
    script takes --source; `check`: it takes a CHECK; `fresh`: --work is emptied first (else only
    made). The --work folder exists on return."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True, help="the hiccup binary under test")
    if source:
        ap.add_argument("--source", required=True, help="the source tree (scenarios, test agents)")
    ap.add_argument("--work", required=True, help="a scratch folder of this test's own")
    if check:
        ap.add_argument("check", choices=check_choices, help="which check to run")
    a = ap.parse_args()
    a.hiccup = os.path.abspath(a.hiccup)
    a.work = os.path.abspath(a.work)
    if source:
        a.source = os.path.abspath(a.source)
    if fresh:
        shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    return a


def fresh_dir(parent, name):
    """PARENT/NAME, emptied: each check starts from nothing left by an earlier run."""
    d = os.path.join(parent, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


class CheckerBase:
    """A checker's paths (absolute) and its fresh folders; subclasses define check_NAME methods."""

    def __init__(self, hiccup, source, work):
        self.hiccup = hiccup
        self.source = source
        self.work = work

    def dir(self, name):
        return fresh_dir(self.work, name)


def run_check(checker, check, prefix="check_"):
    """Runs checker.PREFIX<check with - as _>() and returns the exit code: 0 when it returned, 1
    when an assertion failed (the traceback and `FAIL CHECK: why` printed), 2 when there is no
    such check."""
    method = getattr(checker, prefix + check.replace("-", "_"), None)
    if method is None:
        print(f"unknown check {check}")
        return 2
    try:
        method()
    except AssertionError as e:
        traceback.print_exc()
        print(f"FAIL {check}: {e}")
        return 1
    print(f"ok {check}")
    return 0
