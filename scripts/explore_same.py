#!/usr/bin/env python3
"""Checks that two hiccup builds explore identically: same cases, verdicts, case digests, run digest,
coverage and counterexamples for a fixed set of explorations (memory and HTTP, with and without a
defect, providers drawn and fixed). Meant for performance work, where behaviour must not change.

usage: scripts/explore_same.py BASELINE_HICCUP CANDIDATE_HICCUP [--quick] [--work DIR]

Each exploration's summary.json is compared after dropping the fields that vary from run to run by
design (wall_ms, shrink_ms, arrived_ms, answered_ms, command_line) and replacing the report directory with REPORT_DIR; every
counterexample file is compared byte for byte. Exit codes: 0 identical, 1 a difference (printed
with the first differing JSON pointer), 3 bad arguments or a build that cannot be run.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# (name, explore arguments). HTTP runs use --jobs so they stay short on a loaded 2-core machine.
RUNS = [
    ("mem-drawn", ["--cases", "1500", "--seed", "1", "--transport", "memory"]),
    ("mem-gemini-s7", ["--cases", "600", "--seed", "7", "--transport", "memory", "--provider", "gemini"]),
    ("mem-anthropic-s3", ["--cases", "600", "--seed", "3", "--transport", "memory", "--provider", "anthropic"]),
    ("mem-defect-keepgoing", ["--cases", "800", "--seed", "2", "--transport", "memory",
                              "--defect", "keep-partial-text", "--keep-going"]),
    ("mem-defect-calls", ["--cases", "400", "--seed", "1", "--transport", "memory",
                          "--defect", "keep-calls-on-retry"]),
    ("mem-defect-responses", ["--cases", "400", "--seed", "5", "--transport", "memory",
                              "--provider", "openai-responses", "--defect", "no-pairing-guard", "--keep-going"]),
    ("mem-transcripts", ["--cases", "150", "--seed", "4", "--transport", "memory", "--transcripts",
                         "--check-determinism", "all"]),
    ("http-drawn", ["--cases", "200", "--seed", "1", "--transport", "http"]),
    ("http-defect", ["--cases", "200", "--seed", "1", "--transport", "http", "--defect", "keep-calls-on-retry"]),
    ("http-chat", ["--cases", "150", "--seed", "6", "--transport", "http", "--provider", "openai-chat",
                   "--defect", "keep-partial-text", "--keep-going"]),
]
QUICK = {"mem-drawn", "mem-defect-keepgoing", "mem-defect-calls", "http-defect"}
VOLATILE = {"wall_ms", "shrink_ms", "command_line", "arrived_ms", "answered_ms"}  # timings, by design


def normalise(value, report_dir, hiccup):
    """`value` without timings, its report directory and the binary's path (replay lines name both)."""
    if isinstance(value, dict):
        return {k: normalise(v, report_dir, hiccup) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalise(v, report_dir, hiccup) for v in value]
    if isinstance(value, str):
        return value.replace(report_dir, "REPORT_DIR").replace(hiccup, "HICCUP")
    return value


def first_difference(a, b, pointer=""):
    if type(a) is not type(b):
        return pointer or "/"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{pointer}/{k}"
            d = first_difference(a[k], b[k], f"{pointer}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{pointer} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{pointer}/{i}")
            if d:
                return d
        return None
    return None if a == b else (pointer or "/")


def explore(hiccup, args, report_dir):
    proc = subprocess.run([hiccup, "explore", *args, "--report-dir", report_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(os.path.join(report_dir, "summary.json")) as f:
        summary = normalise(json.load(f), report_dir, hiccup)
    ce_dir = os.path.join(report_dir, "counterexamples")
    ces = {}
    if os.path.isdir(ce_dir):
        for name in sorted(os.listdir(ce_dir)):
            with open(os.path.join(ce_dir, name)) as f:
                ces[name] = f.read()
    return proc.returncode, summary, ces


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    quick = "--quick" in argv
    work = None
    if "--work" in argv:
        work = argv[argv.index("--work") + 1]
        args.remove(work)
    if len(args) != 2 or any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip(), file=sys.stderr)
        return 3
    for h in args:
        if not os.access(h, os.X_OK):
            print(f"error: {h}: not an executable hiccup", file=sys.stderr)
            return 3
    work = work or tempfile.mkdtemp(prefix="explore-same-")
    different = 0
    for name, run_args in RUNS:
        if quick and name not in QUICK:
            continue
        results = []
        for side, hiccup in (("a", args[0]), ("b", args[1])):
            d = os.path.join(work, name, side)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            results.append(explore(hiccup, run_args, os.path.abspath(d)))
        (rc_a, sum_a, ce_a), (rc_b, sum_b, ce_b) = results
        problems = []
        if rc_a != rc_b:
            problems.append(f"exit code {rc_a} vs {rc_b}")
        diff = first_difference(sum_a, sum_b)
        if diff:
            problems.append(f"summary.json differs at {diff}")
        if ce_a != ce_b:
            problems.append(f"counterexamples differ: {sorted(ce_a)} vs {sorted(ce_b)}")
        status = "SAME" if not problems else "DIFFERENT: " + "; ".join(problems)
        print(f"{name:24} exit {rc_a}  digest {sum_a.get('digest')}  failed {sum_a.get('failed')}  {status}")
        different += bool(problems)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
