#!/usr/bin/env python3
"""`hiccup explore --agent-cmd` against harness/agents/testdata/fake_agent.py, a small Gemini agent
loop (no npm install needed). One check per ctest entry:

    explore_agent_cli.py --hiccup build/hiccup --source SRC --work DIR CHECK

finds-duplicate: the agent with a seeded bug (FAKE_AGENT_MODE=duplicate: it runs a call from a
    failed attempt and again from its retry, as gemini-cli 0.61.0 does) is explored with a small
    --cases, a fixed --seed and --shrink-budget 30: the duplicate execution is found, confirmed (both re-runs), grouped
    as one distinct failure, shrunk to at most 2 turns and written as a counterexample that fails
    again on the agent (`hiccup run --agent-cmd`) and passes on the reference runtime; summary.json
    follows docs/summary.schema.json.
correct-is-clean: the correct agent explores clean (exit 0), twice, with the same generated cases
    (the digest and case list of the same seed agree).
shrink-budget-kept: an agent that never answers (`sleep 30`, killed after --agent-timeout 4) is
    shrunk with --shrink-budget 5: the first candidate's runs take 4 s each, the second's get the
    1 s left and show nothing, so shrinking ends near 5 s, not at 8 (a second whole candidate).
never-reached-is-no-failure: the seeded-bug agent given by a relative path (it runs in a scratch
    folder, so python3 cannot open it and exits 2 before any request) is no confirmed failure: every
    case is reported as one that could not run (exit 1), with the agent's output on one console
    line, and nothing is shrunk; an agent that exits 0 without a request (`true`) still fails.

BUG_MODE in the environment replaces the seeded bug's mode (BUG_MODE=correct: the first check must
then fail, which shows it can), CLEAN_MODE the correct agent's (CLEAN_MODE=duplicate: the second
must then fail).
"""
import json
import re
import os
import subprocess
import sys
import time
from cli_common import CheckerBase, parse_args, run_check

SEED = "1"
CASES = "3"


class Checker(CheckerBase):
    def __init__(self, hiccup, source, work):
        super().__init__(hiccup, source, work)
        self.fake = os.path.join(source, "harness/agents/testdata/fake_agent.py")

    def agent_cmd(self, mode):
        return f"FAKE_AGENT_MODE={mode} exec python3 {self.fake}"

    def hiccup_run(self, args, expect_rc):
        start = time.monotonic()
        p = subprocess.run([self.hiccup] + args, capture_output=True, text=True, cwd=self.work, timeout=600)
        took = time.monotonic() - start
        print(f"hiccup {' '.join(args)}: exit {p.returncode} in {took:.1f} s")
        if p.returncode != expect_rc:
            raise AssertionError(f"hiccup {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                 f"stdout:\n{p.stdout[-6000:]}\nstderr:\n{p.stderr[-3000:]}")
        return p

    def explore(self, mode, report_dir, expect_rc, extra=()):
        return self.hiccup_run(["explore", "--agent-cmd", self.agent_cmd(mode), "--seed", SEED, "--cases", CASES,
                                "--jobs", "2", "--time-budget", "40", *extra, "--report-dir", report_dir], expect_rc)

    def summary(self, report_dir):
        with open(os.path.join(report_dir, "summary.json")) as f:
            s = json.load(f)
        try:
            import jsonschema
        except ImportError:  # scripts/setup.sh installs python3-jsonschema; the reports tests need it
            print("note: python3-jsonschema missing: summary.json not validated")
            return s
        with open(os.path.join(self.source, "docs/summary.schema.json")) as f:
            schema = json.load(f)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(s), key=lambda e: list(e.path))
        assert not errors, "summary.json does not follow the schema:\n" + "\n".join(
            f"/{'/'.join(map(str, e.path))}: {e.message[:300]}" for e in errors[:10])
        return s

    def check_finds_duplicate(self):
        mode = os.environ.get("BUG_MODE", "duplicate")
        d = self.dir("duplicate")
        p = self.explore(mode, d, 1, ["--shrink-budget", "30"])
        out = p.stdout
        s = self.summary(d)
        assert s["black_box"]["time_budget_s"] == 40 and s["black_box"]["shrink_budget_s"] == 30, s["black_box"]
        assert "at most 30 s" in out, out[-3000:]
        assert s["command"] == "explore" and s["agent"] == "agent-cmd" and s["seed"] == int(SEED), s
        bb = s["black_box"]
        assert "may vary" in bb["note"] and "may vary" in out, out[-2000:]
        dup = [f for f in bb["distinct_failures"] if "at-most-once" in f["invariants"]]
        assert dup, f"the duplicate execution was not found and confirmed: {json.dumps(bb, indent=1)[:3000]}"
        # Grouped by signature: each signature once, however many cases showed it.
        sigs = [x["signature"] for x in bb["distinct_failures"] + bb["flaky"]]
        assert len(sigs) == len(set(sigs)), sigs
        assert sum(len(x["cases"]) for x in bb["distinct_failures"] + bb["flaky"]) == bb["cases_failed"], bb
        f = dup[0]
        assert f["fault"] != "no fault", f
        # A deterministic bug fails both re-runs, and a third is not started (it could not change
        # the verdict).
        assert f["rate"] == {"failed": 3, "runs": 3}, f
        assert f["shrunk_size"]["turns"] <= 2, f
        assert f["shrunk_size"]["attempts"] < f["original_size"]["attempts"] or f["original_size"]["attempts"] <= 2, f
        assert f["reference_passes"], f
        path = f["counterexample"]
        assert os.path.isfile(path), path
        assert os.path.isfile(path[:-len(".json")] + ".pin.json"), path
        assert "--agent-cmd" in f["replay"], f
        case = next(c for c in s["cases"] if c.get("signature") == f["signature"])
        assert not case["passed"] and case["known_failure_pin"]["agents"]["agent-cmd"]["known_failures"], case
        assert "at-most-once" in case["known_failure_pin"]["agents"]["agent-cmd"]["known_failures"][case["name"]]["violates"]
        assert case["transcript"]["requests"], case
        assert "distinct failure" in out, out[-2000:]
        # A progress line per kept edit of this failure's shrinking, as many as the edits kept, the
        # last one at the result's size.
        start = out.index(f"shrinking case {f['case']} (")
        section = out[start:out.index("  shrunk in ", start) + 40]
        kept = re.findall(r"^  kept: delete .* \(now (\d+) turns?, (\d+) attempts?, (\d+) events?; [0-9.]+ s, \d+ agent runs\)$",
                          section, re.M)
        assert kept, section[-3000:]
        assert f"shrunk in {len(kept)} edit" in section, (len(kept), section[-3000:])
        z = f["shrunk_size"]
        assert kept[-1] == (str(z["turns"]), str(z["attempts"]), str(z["events"])), (kept[-1], z)
        with open(os.path.join(d, "junit.xml")) as j:
            junit = j.read()
        assert 'failures="1"' in junit and "at-most-once" in junit and "may vary" in junit, junit[:2000]
        # summary.md: a row of the failure's shrinking (sizes, time, runs, 1-minimal).
        with open(os.path.join(d, "summary.md")) as m:
            md = m.read()
        o, z = f["original_size"], f["shrunk_size"]
        row = (f"| {o['turns']}/{o['attempts']}/{o['events']} → {z['turns']}/{z['attempts']}/{z['events']} | "
               f"{f['shrink_ms'] / 1000:.1f} s | {f['shrink_runs']} | {f['shrink_ruled_out']} / {f['shrink_repeats']} |")
        assert "case → counterexample" in md and row in md, (row, md[:3000])
        # The counterexample replays: it fails on the agent, and passes on the reference runtime.
        self.hiccup_run(["run", "--agent-cmd", self.agent_cmd(mode), path, "--report-dir", self.dir("replay-agent")], 1)
        self.hiccup_run(["run", path, "--transport", "memory", "--report-dir", self.dir("replay-reference")], 0)
        self.hiccup_run(["lint", path], 0)

    def check_correct_is_clean(self):
        digests = []
        mode = os.environ.get("CLEAN_MODE", "correct")
        for k in range(2):
            d = self.dir(f"correct-{k}")
            p = self.explore(mode, d, 0)
            s = self.summary(d)
            bb = s["black_box"]
            assert not bb["distinct_failures"], json.dumps(bb["distinct_failures"], indent=1)[:3000]
            assert bb["cases_run"] == int(CASES) and bb["cases_errors"] == 0, bb
            assert bb["shrink_budget_s"] == 40, bb  # --time-budget's when --shrink-budget is not given
            assert s["failed"] == 0 and s["passed"] == 1, s
            assert "0 distinct failures" in p.stdout, p.stdout[-2000:]
            digests.append((s["digest"], s["case_digests"]))
        # Same seed, same generated cases, whatever the agent did.
        assert digests[0] == digests[1], digests


    def check_shrink_budget_kept(self):
        d = self.dir("shrink-budget")
        self.hiccup_run(["explore", "--agent-cmd", "sleep 30", "--seed", SEED, "--cases", "1", "--jobs", "2",
                         "--agent-timeout", "4", "--shrink-budget", "5", "--report-dir", d], 1)
        bb = self.summary(d)["black_box"]
        assert len(bb["distinct_failures"]) == 1, bb
        f = bb["distinct_failures"][0]
        assert f["invariants"] == ["liveness"], f
        assert f["rate"] == {"failed": 3, "runs": 3}, f
        # Something was tried after the first candidate (else the budget was never in the way).
        assert f["shrink_runs"] >= 3, f
        assert f["shrink_ms"] < 6500, f  # 5 s and the judging, not a second 4-second candidate

    def check_never_reached_is_no_failure(self):
        d = self.dir("never-reached")
        relative = "FAKE_AGENT_MODE=duplicate exec python3 harness/agents/testdata/fake_agent.py"
        p = self.hiccup_run(["explore", "--agent-cmd", relative, "--seed", SEED, "--cases", CASES, "--jobs", "2",
                             "--report-dir", d], 1)
        bb = self.summary(d)["black_box"]
        assert not bb["distinct_failures"] and not bb["flaky"], json.dumps(bb, indent=1)[:3000]
        assert bb["cases_errors"] == int(CASES) and bb["cases_failed"] == 0, bb
        lines = [l for l in p.stdout.splitlines() if l.startswith("  case ")]
        assert len(lines) == int(CASES), p.stdout[-3000:]
        for line in lines:
            assert "ERROR agent agent-cmd exited 2 before any request to the mock" in line, line
            assert "fake_agent.py" in line and line.endswith(" s)"), line  # its output, on the one line
        assert "shrinking" not in p.stdout, p.stdout[-3000:]
        # A do-nothing agent that says it succeeded is judged, and fails: no pass for nothing.
        d = self.dir("do-nothing")
        self.hiccup_run(["explore", "--agent-cmd", "true", "--seed", SEED, "--cases", "1", "--jobs", "2",
                         "--confirm", "0", "--shrink-budget", "2", "--report-dir", d], 1)
        bb = self.summary(d)["black_box"]
        assert bb["cases_failed"] == 1 and bb["cases_errors"] == 0, bb


def main():
    a = parse_args()
    return run_check(Checker(a.hiccup, a.source, a.work), a.check)


if __name__ == "__main__":
    sys.exit(main())
