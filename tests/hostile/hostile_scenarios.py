#!/usr/bin/env python3
"""Hostile scenario files against the real CLI (label `hostile`): arrays nested 100,000 and
1,000,000 deep (plain and after a comment holding a quote), a 100 MB file and invalid UTF-8 each
make `hiccup lint`, `hiccup run` and `hiccup serve` exit 3 with `error: FILE: ...` on stderr, never
a crash. The inputs are generated here, into --work; none is committed."""
import argparse
import os
import subprocess
import sys

BASE = ('{"schema":1,"name":"hostile","prompt":"p","turns":[{"attempts":[{"events":'
        '[{"call":{"name":"f","args":{"x":%s}}},{"finish":"stop"}]}]},'
        '{"attempts":[{"events":[{"text":"t"},{"finish":"stop"}]}]}]}')


def nested(n):
    return "[" * n + "]" * n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cases = {
        "deep-100k.json": (BASE % nested(100_000)).encode(),
        "deep-1m.json": (BASE % nested(1_000_000)).encode(),
        "deep-after-comment.json": ('/* " */ ' + BASE % nested(100_000)).encode(),
        "invalid-utf8.json": (BASE % '"a\xff\xfe"').encode("latin-1"),
    }
    expected = {
        "deep-100k.json": "nest deeper than 512 levels",
        "deep-1m.json": "nest deeper than 512 levels",
        "deep-after-comment.json": "nest deeper than 512 levels",
        "invalid-utf8.json": "ill-formed UTF-8",
        "huge-100mb.json": "scenario files are limited to 16777216 bytes",
    }
    for name, data in cases.items():
        with open(os.path.join(args.work, name), "wb") as f:
            f.write(data)
    huge = os.path.join(args.work, "huge-100mb.json")
    with open(huge, "wb") as f:  # 100 MB of a real JSON string (not sparse: read it if you dare)
        f.write(b'{"schema":1,"name":"huge","prompt":"')
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write(b'","turns":[]}')
    failures = []
    for name, needle in expected.items():
        path = os.path.join(args.work, name)
        for command in (["lint", path], ["run", path, "--report-dir", os.path.join(args.work, "reports")],
                        ["serve", path, "--port", "0"]):
            p = subprocess.run([args.hiccup] + command, capture_output=True, text=True,
                               errors="replace", timeout=120)
            want_prefix = "error: " + path + ": "
            ok = p.returncode == 3 and want_prefix in p.stderr and needle in p.stderr
            print(f"{'ok  ' if ok else 'FAIL'} hiccup {command[0]} {name}: exit {p.returncode}")
            if not ok:
                failures.append(f"hiccup {command[0]} {name}: expected exit 3 and {want_prefix!r}... "
                                f"{needle!r} on stderr, got exit {p.returncode}, stderr {p.stderr[:300]!r}")
    os.remove(huge)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
