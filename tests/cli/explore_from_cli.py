#!/usr/bin/env python3
"""`hiccup explore --from FILE` (issue 38): failures drawn onto a bundled scenario find a seeded
defect; the counterexample keeps the base's provider, texts and call arguments (it may delete what
the failure does not need, never rewrite it); the same seed gives the same counterexample; without
the defect every drawn case passes; --from with --provider is a usage error. The counterexample
keeps every turn of the base, each ending with the base's answer unchanged. A base with a field
the oracle does not predict under drawn failures (interrupt, session, the continue design,
max_virtual_s, timing, an event's delay_s) is refused with its pointer and why (exit 3); a base
with several is refused with every one, a line each.

usage: explore_from_cli.py --hiccup PATH --source DIR --work DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
from cli_common import parse_args

BASE = "scenarios/tools/tools-same-call-in-two-turns.json"
DEFECT = "keep-calls-on-retry"


def texts_and_args(scenario):
    texts, args = [], []
    for turn in scenario["turns"]:
        for attempt in turn["attempts"]:
            for event in attempt.get("events", []):
                if "text" in event:
                    texts.append(event["text"])
                if "call" in event:
                    args.append(json.dumps(event["call"].get("args", {}), sort_keys=True))
    return texts, args


def explore(hiccup, work, name, *extra):
    report = os.path.join(work, name)
    shutil.rmtree(report, ignore_errors=True)
    p = subprocess.run([hiccup, "explore", *extra, "--report-dir", report], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    found = sorted(glob.glob(os.path.join(report, "counterexamples", "*.json")))
    return p.returncode, p.stdout, found


def main():
    a = parse_args(check=False)
    base_path = os.path.join(a.source, BASE)
    with open(base_path) as f:
        base = json.load(f)
    base_texts, base_args = texts_and_args(base)
    assert base_texts, "the base must hold a text"

    args = ["--from", base_path, "--seed", "5", "--cases", "30", "--defect", DEFECT]
    rc, out, found = explore(a.hiccup, a.work, "first", *args)
    print(out)
    assert rc == 1, f"expected the defect to be found (exit 1), got {rc}"
    assert f'from {base_path} ("{base["name"]}")' in out, out
    assert len(found) == 1, found
    with open(found[0]) as f:
        text = f.read()
    shrunk = json.loads(text)
    assert shrunk["provider"] == base["provider"], shrunk
    assert shrunk["runtime"].get("defects") == [DEFECT], shrunk
    texts, call_args = texts_and_args(shrunk)
    # The base's final answer stays as recorded; nothing is rewritten to "ok" or {}.
    assert base_texts[-1] in texts, (texts, base_texts)
    assert all(t in base_texts for t in texts), (texts, base_texts)
    assert call_args and all(c in base_args for c in call_args), (call_args, base_args)
    # What was drawn onto it: a failing attempt before some turn's answer (minimization may have
    # reduced it to a stream without its finish).
    assert any(len(got["attempts"]) > len(want["attempts"]) for got, want in zip(shrunk["turns"], base["turns"])), shrunk
    # The conversation stays: every turn, each ending with the base's answer unchanged.
    assert len(shrunk["turns"]) == len(base["turns"]), shrunk
    for got, want in zip(shrunk["turns"], base["turns"]):
        assert got["attempts"][-1] == want["attempts"][-1], (got, want)
    # The counterexample replays: the defect fails it, the reference runtime passes it.
    p = subprocess.run([a.hiccup, "run", found[0], "--report-dir", os.path.join(a.work, "replay")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 1, p.stdout

    # Same seed, same result.
    rc2, out2, found2 = explore(a.hiccup, a.work, "second", *args)
    assert rc2 == 1 and len(found2) == 1, out2
    with open(found2[0]) as f:
        assert f.read() == text, "the same seed gave another counterexample"

    # Without the defect every case drawn onto the base passes.
    rc3, out3, found3 = explore(a.hiccup, a.work, "clean", "--from", base_path, "--seed", "5", "--cases", "30")
    assert rc3 == 0 and not found3, out3

    # --from fixes the provider.
    p = subprocess.run([a.hiccup, "explore", "--from", base_path, "--provider", "anthropic"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 2 and "--from and --provider exclude each other" in p.stdout, p.stdout

    # Bases whose fields the oracle does not predict under drawn failures are refused with their
    # pointer (exit 3): explored, they made a correct runtime fail (stop 48's newcomer).
    # Each field is named with its pointer and why: an interrupt, a session (several prompts), the
    # continue design, the time cap, the scenario's timing, and an event's delay_s without it.
    timed_path = os.path.join(a.source, "tests/schema/valid/event-timing.json")
    with open(timed_path) as f:
        delayed = json.load(f)
    del delayed["timing"]
    delayed_path = os.path.join(a.work, "event-delay-only.json")
    with open(delayed_path, "w") as f:
        json.dump(delayed, f)
    for path, pointer, why in (
            (os.path.join(a.source, "scenarios/cancellation/cancel-during-backoff.json"), "/interrupt",
             "the user's interrupt lands at a point that the drawn failures move"),
            (os.path.join(a.source, "scenarios/sessions/session-two-prompts-one-history.json"), "/session",
             "later prompts continue a history the drawn failures change"),
            (os.path.join(a.source, "scenarios/continue/continue-cut-mid-arguments.json"), "/runtime/recovery",
             "under the continue design a kept cut turn adds a turn the file does not script"),
            (os.path.join(a.source, "scenarios/mid-stream/midstream-stall-forever.json"), "/max_virtual_s",
             "the oracle does not model the run's time cap"),
            (timed_path, "/timing", "the oracle does not model event timing"),
            (delayed_path, "/turns/0/attempts/0/events/0/delay_s",
             "the oracle does not model event timing (record without --timing to explore)")):
        report = os.path.join(a.work, "refused")
        shutil.rmtree(report, ignore_errors=True)
        p = subprocess.run([a.hiccup, "explore", "--from", path, "--cases", "3", "--report-dir", report],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        want = f"error: {path}: {pointer}: explore --from cannot draw failures onto this scenario yet: {why}"
        assert p.returncode == 3 and want in p.stdout, (path, p.returncode, p.stdout)
        # Refused before anything ran: no report was written.
        assert not os.path.exists(os.path.join(report, "summary.json")), path

    # A base with several such fields is refused with every one, a line each, in the order above.
    with open(os.path.join(a.source, "scenarios/cancellation/cancel-during-backoff.json")) as f:
        several = json.load(f)
    several["max_virtual_s"] = 600
    several["turns"][0]["attempts"][-1]["events"][0]["delay_s"] = 0.5
    several_path = os.path.join(a.work, "several-reasons.json")
    with open(several_path, "w") as f:
        json.dump(several, f)
    last = len(several["turns"][0]["attempts"]) - 1
    p = subprocess.run([a.hiccup, "explore", "--from", several_path, "--cases", "3"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    lines = [line for line in p.stderr.splitlines() if "explore --from cannot draw failures" in line]
    pointers = [line.split(": ")[2] for line in lines]
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert pointers == ["/interrupt", "/session", "/max_virtual_s", f"/turns/0/attempts/{last}/events/0/delay_s"], p.stderr
    assert all(line.startswith(f"error: {several_path}: ") for line in lines), p.stderr
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
