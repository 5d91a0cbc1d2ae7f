#!/usr/bin/env python3
"""`hiccup serve SCENARIO --journal FILE` always leaves FILE a complete JSON array and exits with
its documented code (label `hostile`): after the default session was deleted over the control API
(SIGINT then aborted with `terminate called without an active exception`, the file held "["), and
when the port is taken (exit 134 instead of 3, same file)."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def request(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    scenario = os.path.join(args.work, "clean.json")
    with open(scenario, "w") as f:
        json.dump({"schema": 1, "name": "clean", "provider": "gemini", "prompt": "Deploy.",
                   "turns": [{"attempts": [{"events": [{"text": "Done."}, {"finish": "stop"}]}]}]}, f)
    failures = []

    # The default session deleted while serving: SIGINT still writes the whole journal, exit 0.
    journal = os.path.join(args.work, "deleted-default.json")
    p = subprocess.Popen([args.hiccup, "serve", scenario, "--port", "0", "--journal", journal],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = p.stdout.readline().strip()
    prompt = {"contents": [{"role": "user", "parts": [{"text": "Deploy."}]}]}
    for _ in range(2):
        request(base + GEMINI, "POST", prompt)
    request(base + "/_hiccup/sessions/default", "DELETE")
    started = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    took = time.monotonic() - started
    entries = None
    try:
        with open(journal) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        failures.append(f"deleted default session: {journal} is not a JSON array: {e}")
    if p.returncode != 0 or took > 1.0:
        failures.append(f"deleted default session: exit {p.returncode} {took:.2f} s after SIGINT, stderr {err[-300:]!r}")
    if entries is not None and len(entries) != 2:
        failures.append(f"deleted default session: expected 2 journal entries, found {len(entries)}")
    print(f"{'ok  ' if not failures else 'FAIL'} deleted default session: exit {p.returncode}, {took:.2f} s")

    # A taken port: exit 3 with the message, and the journal file is an empty array.
    before = len(failures)
    journal = os.path.join(args.work, "port-taken.json")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    r = subprocess.run([args.hiccup, "serve", scenario, "--port", str(port), "--journal", journal],
                       capture_output=True, text=True, timeout=30)
    taken.close()
    if r.returncode != 3 or f"cannot listen on 127.0.0.1:{port}: Address already in use" not in r.stderr:
        failures.append(f"port taken: expected exit 3 and the message, got exit {r.returncode}, stderr {r.stderr[-300:]!r}")
    try:
        with open(journal) as f:
            if json.load(f) != []:
                failures.append(f"port taken: {journal} is not an empty array")
    except (OSError, ValueError) as e:
        failures.append(f"port taken: {journal} is not a JSON array: {e}")
    print(f"{'ok  ' if len(failures) == before else 'FAIL'} port taken: exit {r.returncode}")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
