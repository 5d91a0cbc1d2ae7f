#!/usr/bin/env python3
"""Renders a failing run's report.html in headless Chromium (Debian's `chromium`): the DOM after the
page's script ran must hold the timeline lanes, the fault, the pinned violations and their text, and
a screenshot (report.png) is saved beside report.html. No chromium fails with a message.

    check_browser.py --hiccup build/hiccup --source . --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

FAILING = "scenarios/mid-stream/midstream-reset-after-call.json"


def fail(msg):
    print(f"FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def chromium_cmd():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            cmd = [path, "--headless", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]
            if os.geteuid() == 0:
                cmd.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
            return cmd
    fail("chromium is not installed: run scripts/setup.sh (it installs Debian's chromium) "
         "or apt-get install chromium; this test needs a real browser and is never skipped")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = subprocess.run([a.hiccup, "run", os.path.join(a.source, FAILING), "--defect", "keep-calls-on-retry",
                        "--report-dir", work], capture_output=True, text=True, timeout=300)
    if p.returncode != 1:
        fail(f"hiccup run: exit {p.returncode}, expected 1 (a failing case)\n{p.stdout}\n{p.stderr}")
    html = os.path.join(work, "report.html")
    if not os.path.isfile(html) or os.path.getsize(html) == 0:
        fail(f"{html}: missing or empty")
    url = "file://" + html
    base = chromium_cmd()
    profile = os.path.join(work, "chromium-profile")
    base.append(f"--user-data-dir={profile}")

    d = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    dom = d.stdout
    if d.returncode != 0 or not dom.strip():
        fail(f"chromium --dump-dom: exit {d.returncode}, no DOM\n{d.stderr[-3000:]}")
    want = [
        ('data-ready="yes"', "the page's script ran (DOMContentLoaded handler)"),
        ('class="timeline"', "the timeline"),
        ('class="lane-label">requests &amp; attempts', "the requests lane"),
        ('class="lane-label">tool executions', "the tool executions lane"),
        ('class="lane-label">runtime retries &amp; waits', "the runtime lane"),
        ('class="box request faulted violated"', "request 0 drawn with its fault and a violation"),
        ("cut short by the injected fault (reset)", "how request 0 ended, in words"),
        ("retried: connection lost", "the runtime's retry"),
        ("ran 2 times for one intended call", "the violation's message"),
        ("what it means:", "the invariant's meaning"),
        ('<button class="copy"', "the replay command's copy button"),
        (os.path.realpath(a.hiccup) + " run ", "the replay command (the running binary by its absolute path)"),
    ]
    missing = [f"{what} ({needle!r})" for needle, what in want if needle not in dom]
    if missing:
        fail("the rendered DOM lacks:\n  " + "\n  ".join(missing))
    pins = dom.count('<div class="pin">violation ')
    if pins != 2:
        fail(f"expected 2 violation pins on requests (the duplicate names requests 0 and 1), saw {pins}")

    png = os.path.join(work, "report.png")
    s = subprocess.run(base + [f"--screenshot={png}", "--window-size=1280,2000", "--hide-scrollbars", url],
                       capture_output=True, text=True, timeout=120)
    if not os.path.isfile(png) or os.path.getsize(png) == 0:
        fail(f"{png}: chromium wrote no screenshot (exit {s.returncode})\n{s.stderr[-3000:]}")
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail(f"{png}: not a PNG")
    shutil.rmtree(profile, ignore_errors=True)
    print(f"ok: report.html {os.path.getsize(html)} bytes, DOM {len(dom)} chars, screenshot {png} "
          f"({os.path.getsize(png)} bytes)")


if __name__ == "__main__":
    main()
