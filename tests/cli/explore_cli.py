#!/usr/bin/env python3
"""What `hiccup explore` tells a user beyond its exit code: lines that reach a pipe as they are
written (a run killed by a CI timeout leaves its log). One check per ctest entry:

    explore_cli.py --hiccup build/hiccup --work DIR CHECK
"""
import argparse
import os
import select
import shutil
import subprocess
import sys


class Checker:
    def __init__(self, hiccup, work):
        self.hiccup = hiccup
        self.work = work

    def dir(self, name):
        d = os.path.join(self.work, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def hiccup_run(self, args, expect_rc):
        p = subprocess.run([self.hiccup] + args, capture_output=True, text=True, cwd=self.work, timeout=600)
        if p.returncode != expect_rc:
            raise AssertionError(f"hiccup {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                 f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
        return p

    def check_lines_reach_a_pipe(self):
        """explore's first line reaches a pipe while it still runs: a block-buffered stdout kept it
        in the buffer until exit (or lost it, killed by a CI timeout)."""
        d = self.dir("pipe")
        p = subprocess.Popen([self.hiccup, "explore", "--cases", "1000000", "--seed", "1", "--report-dir", d],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=self.work)
        try:
            ready, _, _ = select.select([p.stdout], [], [], 30)
            assert ready, "no line on the pipe 30 s into a run of 1,000,000 cases: stdout is not flushed per line"
            line = p.stdout.readline().decode()
            assert line.startswith("explore: seed 1, 1000000 cases"), f"first line {line!r}"
            assert p.poll() is None, "explore ended before its first line was read: the check shows nothing"
        finally:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("check")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    checker = Checker(os.path.abspath(a.hiccup), os.path.abspath(a.work))
    method = getattr(checker, "check_" + a.check.replace("-", "_"), None)
    if method is None:
        print(f"unknown check {a.check}")
        return 2
    try:
        method()
    except AssertionError as e:
        print(f"FAIL {a.check}: {e}")
        return 1
    print(f"ok {a.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
