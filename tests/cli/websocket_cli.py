#!/usr/bin/env python3
"""The Responses API's WebSocket mode end to end: suite scenarios played with
`hiccup run --provider openai-responses --transport websocket` get the same verdict per case as
over HTTP with SSE (`--transport http`), and the scenarios of tests/cli/websocket/ (close codes,
the string-typed in-band error, a malformed frame, a refused upgrade) pass over both.

usage: websocket_cli.py --hiccup PATH --source DIR --work DIR
"""
import json
import os
import subprocess
import sys
from cli_common import parse_args

# Faults, statuses, endings, content filters (the connection kept after response.incomplete),
# call ids (continuation only when the runtime sends back what the server holds), non-streaming
# requests (over HTTP), tool turns (continued with previous_response_id).
FOLDERS = ["scenarios/mid-stream", "scenarios/http-status", "scenarios/incomplete-stream",
           "scenarios/content-filter", "scenarios/call-ids", "scenarios/output", "scenarios/tools",
           "tests/cli/websocket"]


def run(hiccup, source, work, transport):
    out = os.path.join(work, transport)
    args = [hiccup, "run", "--provider", "openai-responses", "--transport", transport, "--report-dir", out]
    args += [os.path.join(source, f) for f in FOLDERS]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    return p.returncode, summary, p.stdout + p.stderr


def main():
    a = parse_args(check=False)
    rc_http, http, _ = run(a.hiccup, a.source, a.work, "http")
    rc_ws, ws, out_ws = run(a.hiccup, a.source, a.work, "websocket")
    failures = []
    if ws.get("transport") != "websocket":
        failures.append("summary.json transport is %r, expected \"websocket\"" % ws.get("transport"))
    verdict_http = {c["name"]: c["passed"] for c in http["cases"]}
    verdict_ws = {c["name"]: c["passed"] for c in ws["cases"]}
    if set(verdict_http) != set(verdict_ws):
        failures.append("different cases: %s" % sorted(set(verdict_http) ^ set(verdict_ws)))
    for name in sorted(verdict_http):
        if name in verdict_ws and verdict_http[name] != verdict_ws[name]:
            failures.append("%s: %s over http, %s over websocket" % (
                name, "pass" if verdict_http[name] else "FAIL", "pass" if verdict_ws[name] else "FAIL"))
    if rc_ws != 0 or rc_http != 0:
        failures.append("exit codes: http %d, websocket %d" % (rc_http, rc_ws))
    for name in ("ws-close-1011-then-string-error-then-completes", "ws-upgrade-426-falls-back", "ws-malformed-frame-retried"):
        if verdict_ws.get(name) is not True:
            failures.append("%s did not pass over websocket" % name)
    if verdict_ws.get("ws-stall-then-end-retried") is not True:
        failures.append("ws-stall-then-end-retried did not pass over websocket")
    # An `end` closes with 1000, the WebSocket's clean end: an incomplete stream as over HTTP, so the
    # run (it met an idle timeout) is compared with its in-memory run and agrees with it.
    if "ws-stall-then-end-retried: over websocket its transcript differs" in out_ws:
        failures.append("ws-stall-then-end-retried differs from its in-memory run over websocket")
    if "ws-cut-then-close-1000-retried: over websocket its transcript differs" in out_ws:
        failures.append("ws-cut-then-close-1000-retried differs from its in-memory run over websocket")
    # The kill matrix of the WebSocket transport's own defects: caught over websocket, skipped
    # (no site) over http.
    for transport, expect in (("websocket", "catches replay-lost-context"), ("http", "SKIP websocket-forgotten-response-after-call catches replay-lost-context: no site over http")):
        out = os.path.join(a.work, "catches-" + transport)
        p = subprocess.run([a.hiccup, "run", "--transport", transport, "--catches", "--report-dir", out,
                            os.path.join(a.source, "scenarios/websocket")], capture_output=True, text=True, timeout=600)
        if p.returncode != 0 or expect not in p.stdout:
            failures.append("run scenarios/websocket --catches over %s: exit %d, %r not in:\n%s" % (
                transport, p.returncode, expect, p.stdout[-2000:]))
    if len(verdict_ws) < 50:
        failures.append("only %d cases ran" % len(verdict_ws))
    if failures:
        print(out_ws[-4000:])
        print("\n".join(failures))
        return 1
    print("websocket: %d cases, same verdict as over http" % len(verdict_ws))
    return 0


if __name__ == "__main__":
    sys.exit(main())
