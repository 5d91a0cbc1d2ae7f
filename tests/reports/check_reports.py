#!/usr/bin/env python3
"""Checks hiccup's reports from real runs: summary.json against docs/summary.schema.json (with
Debian's python3-jsonschema), summary.md and $GITHUB_STEP_SUMMARY, folder scans that skip report
directories, explore's run digest, and no stale counterexamples. One check per ctest entry:

    check_reports.py --hiccup build/hiccup --source . --work DIR CHECK
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import jsonschema
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from cli_common import CheckerBase, parse_args, run_check  # noqa: E402

FAILING = "scenarios/mid-stream/midstream-reset-after-call.json"


def scaled(full):
    """full repetitions times HICCUP_TEST_SCALE (a plain decimal number in (0, 1], default 1; the
    sanitizer runs set 0.1), rounded up, at least 1: as tests/test_scale.h does for the C++ tests,
    accepting exactly the texts it accepts."""
    import math
    import re
    text = os.environ.get("HICCUP_TEST_SCALE", "")
    if not text:
        return full
    scale = float(text) if re.fullmatch(r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?", text, re.ASCII) else 0.0
    if not 0 < scale <= 1:
        raise ValueError(f"HICCUP_TEST_SCALE must be a number in (0, 1]; found '{text}'")
    return max(1, min(full, math.ceil(full * scale)))


class Checker(CheckerBase):
    def __init__(self, hiccup, source, work):
        super().__init__(hiccup, source, work)
        with open(os.path.join(source, "docs/summary.schema.json")) as f:
            self.schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(self.schema)
        self.validator = jsonschema.Draft202012Validator(self.schema)

    # helpers -----------------------------------------------------------------
    def hiccup_run(self, args, expect_rc, env=None, cwd=None):
        p = subprocess.run([self.hiccup] + args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
        if p.returncode != expect_rc:
            raise AssertionError(f"hiccup {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                 f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
        return p

    def load(self, report_dir):
        with open(os.path.join(report_dir, "summary.json")) as f:
            return json.load(f)

    def errors(self, summary):
        return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}"
                for e in self.validator.iter_errors(summary)]

    def valid(self, summary, what):
        errs = self.errors(summary)
        if errs:
            raise AssertionError(f"{what}: summary.json does not follow docs/summary.schema.json:\n  " +
                                 "\n  ".join(errs[:20]))

    def failing_run(self, extra=()):
        d = self.dir("failing-run")
        self.hiccup_run(["run", os.path.join(self.source, FAILING), "--defect", "keep-calls-on-retry",
                         "--report-dir", d] + list(extra), 1)
        return d

    # checks ------------------------------------------------------------------
    def check_schema_run(self):
        s = self.load(self.failing_run())
        self.valid(s, "run with a failing case (http)")
        c = s["cases"][0]
        assert not c["passed"], c
        t = c["transcript"]
        assert len(t["requests"]) == 3, t["requests"]
        r0 = t["requests"][0]
        assert r0["answer"]["ended"] == "fault:reset", r0["answer"]
        assert r0["answer"]["fault"]["fell_after_event"] == 1, r0["answer"]["fault"]
        assert "arrived_ms" in r0 and "answered_ms" in r0, "over http a request carries its real times"
        assert r0["answered_ms"] >= r0["arrived_ms"], r0
        assert t["requests"][1]["virtual_s"] == 10, "the retry is sent after the 10 s backoff"
        assert [e["request"] for e in t["executions"]] == [0, 1], t["executions"]
        assert t["runtime"]["retries"][0]["reason"] == "connection_lost", t["runtime"]["retries"]
        assert t["runtime"]["retries"][0]["wait_s"] == 10, t["runtime"]["retries"]
        twice = [v for v in t["violations"] if v["invariant"] == "at-most-once" and len(v["requests"]) == 2]
        assert twice and twice[0]["requests"] == [0, 1], t["violations"]
        assert twice[0]["index"] in t["requests"][1]["violations"], t["requests"][1]
        assert c["replay"].endswith(FAILING + " --defect keep-calls-on-retry"), c["replay"]

        # Memory transport: no real times; the kill matrix with --transcripts: every case has one.
        d = self.dir("catches")
        self.hiccup_run(["run", os.path.join(self.source, "scenarios/mid-stream"), "--catches", "--transcripts",
                         "--transport", "memory", "--report-dir", d], 0)
        s = self.load(d)
        self.valid(s, "run --catches --transcripts (memory)")
        assert all("transcript" in c for c in s["cases"]), "--transcripts puts a transcript in every case"
        assert any(c["classname"] == "hiccup.kill-matrix" for c in s["cases"])
        for c in s["cases"]:
            for r in c["transcript"]["requests"]:
                assert "arrived_ms" not in r, "in memory there is no real time"
                assert isinstance(r["virtual_s"], (int, float))

        # Without --transcripts a passing case carries none.
        d = self.dir("passing")
        self.hiccup_run(["run", os.path.join(self.source, FAILING), "--transport", "memory", "--report-dir", d], 0)
        s = self.load(d)
        self.valid(s, "passing run")
        assert "transcript" not in s["cases"][0], "a passing case has no transcript without --transcripts"

        # A black-box run (--agent-cmd) still follows the schema.
        d = self.dir("agent-cmd")
        self.hiccup_run(["run", "--agent-cmd", "exit 0", os.path.join(self.source, FAILING), "--report-dir", d], 1)
        s = self.load(d)
        self.valid(s, "run --agent-cmd")
        assert s["seed"] is None and s["agent"] == "agent-cmd", s

    def check_schema_explore(self):
        d = self.dir("explore-defect")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "200", "--report-dir", d], 1)
        s = self.load(d)
        self.valid(s, "explore with a defect")
        failing = [c for c in s["cases"] if not c["passed"]]
        assert failing, "keep-calls-on-retry is found in 200 cases"
        for c in failing:
            o, z = c["original_size"], c["shrunk_size"]
            assert z["attempts"] <= o["attempts"] and z["events"] <= o["events"], (o, z)
            assert c["transcript"]["requests"], c
            # explore's replay line names the running binary by its absolute path (/proc/self/exe).
            binary = os.path.realpath(self.hiccup)
            assert c["replay"].startswith(binary + " run ") and "counterexamples/" in c["replay"], c["replay"]
        cov = s["coverage"]
        assert cov["cases"] == sum(cov["providers"].values()), cov
        assert set(cov["invariants"]) == {c["property"] for c in s["cases"]} - {"expect", "determinism"}, cov
        for c in s["cases"]:
            if c["property"] in cov["invariants"]:
                assert c["exercised"] == cov["invariants"][c["property"]]["cases"], c
        assert s["warnings"] == [w for w in s["warnings"] if any(n in w for n in cov["unexercised"])]
        assert len(s["warnings"]) == len(cov["unexercised"]), s["warnings"]
        d = self.dir("explore-transcripts")
        self.hiccup_run(["explore", "--cases", "30", "--transcripts", "--report-dir", d], 0)
        s = self.load(d)
        self.valid(s, "explore --transcripts")
        assert [e["index"] for e in s["explored"]] == list(range(30)), "every case, in index order"
        d = self.dir("explore-http")
        # A 2,000 ms idle floor, as the explorer's own HTTP tests use: under ASan beside another test
        # on 2 cores, bytes can arrive after the default 500 ms (a CI run saw exit 4, a case whose
        # failure its re-run did not reproduce).
        self.hiccup_run(["explore", "--transport", "http", "--defect", "keep-calls-on-retry",
                         "--cases", "60", "--http-idle-floor-ms", "2000", "--report-dir", d], 1)
        self.valid(self.load(d), "explore over http with a defect")

    def check_schema_rejects(self):
        """The schema is not vacuous: a missing or mistyped field fails, at every level."""
        good = self.load(self.failing_run())
        self.valid(good, "the unmutated summary")
        d = self.dir("explore-for-negative")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--report-dir", d], 1)
        explore = self.load(d)
        self.valid(explore, "the unmutated explore summary")

        def drop(path):
            def f(j):
                *head, last = path
                for k in head:
                    j = j[k]
                del j[last]
            return f

        def put(path, value):
            def f(j):
                *head, last = path
                for k in head:
                    j = j[k]
                j[last] = value
            return f

        req = ["cases", 0, "transcript", "requests", 0]
        mutations = [
            ("top-level seed missing", good, drop(["seed"])),
            ("schema version wrong", good, put(["schema"], 1)),
            ("passed mistyped", good, put(["cases", 0, "passed"], "no")),
            ("violation request mistyped", good, put(["cases", 0, "violations", 0, "request"], "0")),
            ("failing run case without transcript", good, drop(["cases", 0, "transcript"])),
            ("run case without replay", good, drop(["cases", 0, "replay"])),
            ("request answer.ended missing", good, drop(req + ["answer", "ended"])),
            ("request answer.ended not a known ending", good, put(req + ["answer", "ended"], "boom")),
            ("request virtual_s mistyped", good, put(req + ["virtual_s"], "0")),
            ("request history digest not 16 hex digits", good, put(req + ["sent", "history_digest"], "xyz")),
            ("request fault mistyped", good, put(req + ["answer", "fault"], "reset")),
            ("execution without its request", good, drop(["cases", 0, "transcript", "executions", 0, "request"])),
            ("retry wait mistyped", good, put(["cases", 0, "transcript", "runtime", "retries", 0, "wait_s"], "10")),
            ("outcome final_text missing", good, drop(["cases", 0, "transcript", "runtime", "outcome", "final_text"])),
            ("unknown field in a request", good, put(req + ["surprise"], 1)),
            ("unknown top-level field", good, put(["surprise"], 1)),
            ("explore digest missing", explore, drop(["digest"])),
        ]
        fp = next(i for i, c in enumerate(explore["cases"]) if not c["passed"] and c["property"] != "determinism")
        mutations += [
            ("explore shrunk_size missing", explore, drop(["cases", fp, "shrunk_size"])),
            ("explore original_size.events mistyped", explore, put(["cases", fp, "original_size", "events"], 1.5)),
            ("explore failing property without transcript", explore, drop(["cases", fp, "transcript"])),
            ("coverage without invariants", explore, drop(["coverage", "invariants"])),
            ("coverage fault count mistyped", explore, put(["coverage", "faults", "reset"], "3")),
            ("coverage invariant without precondition", explore,
             drop(["coverage", "invariants", "at-most-once", "precondition"])),
            ("warnings mistyped", explore, put(["warnings"], "none")),
        ]
        accepted = []
        for name, base, mutate in mutations:
            j = copy.deepcopy(base)
            mutate(j)
            if not self.errors(j):
                accepted.append(name)
        if accepted:
            raise AssertionError("the schema accepted broken summaries: " + "; ".join(accepted))

    def check_summary_md(self):
        step = os.path.join(self.work, "step_summary.md")
        with open(step, "w") as f:
            f.write("# earlier step\n")
        env = dict(os.environ, GITHUB_STEP_SUMMARY=step)
        d = self.dir("md-run")
        self.hiccup_run(["run", os.path.join(self.source, FAILING), "--defect", "keep-calls-on-retry",
                         "--report-dir", d], 1, env=env)
        with open(os.path.join(d, "summary.md")) as f:
            md = f.read()
        assert md.startswith("### hiccup run: 0 passed, 1 failed\n"), md
        assert "**FAIL** `midstream-reset-after-call`" in md, md
        assert "- **at-most-once** \\[request 1, turn 0, attempt 1\\]: tool \"shell\"" in md, md
        assert "ran 2 times for one intended call" in md, md
        # The replay line names the running binary and the scenario by absolute paths.
        replay = f"- replay: `{os.path.realpath(self.hiccup)} run {os.path.join(os.path.abspath(self.source), FAILING)}"
        assert replay in md and "--defect keep-calls-on-retry`" in md, (replay, md)
        with open(step) as f:
            appended = f.read()
        assert appended.startswith("# earlier step\n"), "appended, not overwritten"
        assert md in appended, "summary.md is appended to $GITHUB_STEP_SUMMARY"

        # explore and a passing run also append; without the variable nothing is appended.
        d = self.dir("md-explore")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--report-dir", d], 1, env=env)
        with open(os.path.join(d, "summary.md")) as f:
            md2 = f.read()
        assert md2.startswith("### hiccup explore: ") and "counterexamples/" in md2, md2
        with open(step) as f:
            assert f.read().endswith(md2 + "\n"), "explore appends its summary.md too"
        env.pop("GITHUB_STEP_SUMMARY")
        size = os.path.getsize(step)
        d = self.dir("md-passing")
        self.hiccup_run(["run", os.path.join(self.source, FAILING), "--report-dir", d], 0, env=env)
        with open(os.path.join(d, "summary.md")) as f:
            assert "No failing case." in f.read()
        assert os.path.getsize(step) == size, "nothing appended when GITHUB_STEP_SUMMARY is unset"

    def check_scan_skips_reports(self):
        d = self.dir("scan")
        shutil.copytree(os.path.join(self.source, "scenarios/mid-stream"), os.path.join(d, "mid-stream"))
        with open(os.path.join(d, "package.json"), "w") as f:
            json.dump({"name": "not-a-scenario"}, f)
        os.makedirs(os.path.join(d, ".cache"))
        with open(os.path.join(d, ".cache", "broken.json"), "w") as f:
            f.write("{ not json")
        n = len([x for x in os.listdir(os.path.join(d, "mid-stream")) if x.endswith(".json")])
        # The default report directory inside the scanned folder: the second run must not read it.
        for i in range(2):
            p = self.hiccup_run(["run", ".", "--transport", "memory"], 0, cwd=d)
            assert p.stdout.rstrip().endswith(f"{n} passed, 0 failed"), p.stdout
            assert "package.json" in p.stderr and "not scenario files" in p.stderr, p.stderr
        assert "reports: skipped" in p.stderr, p.stderr
        # A report directory of another run (here with a counterexample in it) is skipped too.
        other = os.path.join(d, "ci-reports")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--report-dir", other], 1)
        p = self.hiccup_run(["lint", "."], 0, cwd=d)
        assert p.stdout.strip() == f"{n} scenario file(s) valid", p.stdout
        assert "ci-reports: skipped, a report directory" in p.stderr, p.stderr
        # A file named directly is still read as a scenario, whatever it holds.
        self.hiccup_run(["lint", "package.json"], 3, cwd=d)

    def check_explore_digest(self):
        def digest(*args):
            d = self.dir("digest")
            p = subprocess.run([self.hiccup, "explore", "--cases", "40", "--report-dir", d] + list(args),
                               capture_output=True, text=True, timeout=600)
            assert p.returncode in (0, 1), p.stderr
            s = self.load(d)
            self.valid(s, "explore " + " ".join(args))
            digests = {c["digest"] for c in s["cases"]}
            assert digests == {s["digest"]}, "every property carries the run digest"
            return s["digest"]

        a = digest("--seed", "5")
        assert len(a) == 16 and a != "0" * 16, a
        assert digest("--seed", "5") == a, "same seed, same digest"
        assert digest("--seed", "5", "--jobs", "4") == a, "--jobs does not change the digest"
        assert digest("--seed", "6") != a, "another seed, another digest"
        assert digest("--seed", "5", "--defect", "keep-calls-on-retry", "--keep-going") != a, \
            "another defect, another digest"

    def check_stale_counterexamples(self):
        # A counterexample an earlier exploration left in the report directory must not look like
        # this run's finding: explore removes the files it names (explore-sS-cN.json), nothing else.
        d = self.dir("stale")
        cx = os.path.join(d, "counterexamples")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--report-dir", d], 1)
        first = os.listdir(cx)
        assert len(first) == 1 and first[0].startswith("explore-s1-c") and first[0].endswith(".json"), first
        with open(os.path.join(cx, "my-notes.json"), "w") as f:
            f.write("{}\n")
        os.makedirs(os.path.join(cx, "explore-s1-c9.json"))  # not a file: left alone
        with open(os.path.join(cx, "explore-s01-c2.json"), "w") as f:  # not a name explore gives
            f.write("{}\n")
        p = self.hiccup_run(["explore", "--cases", "100", "--report-dir", d], 0)
        assert sorted(os.listdir(cx)) == ["explore-s01-c2.json", "explore-s1-c9.json", "my-notes.json"], os.listdir(cx)
        assert "removed 1 counterexample(s) of an earlier exploration" in p.stderr, p.stderr
        # A later failing run writes its own again, and a run with nothing to remove says nothing.
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--seed", "2",
                         "--report-dir", d], 1)
        assert any(n.startswith("explore-s2-c") for n in os.listdir(cx)), os.listdir(cx)
        p = self.hiccup_run(["explore", "--cases", "20", "--report-dir", self.dir("fresh")], 0)
        assert "removed" not in p.stderr, p.stderr

    def check_shared_report_dir(self):
        # Two explorations into one --report-dir: the second must not remove the first's
        # counterexample (it did, at its start, while the first still ran), and the first's reports
        # must point at files that exist. The first keeps running after its counterexample is
        # written (--keep-going); the second starts then, and is refused with exit 3.
        d = self.dir("shared")
        cx = os.path.join(d, "counterexamples")
        # --max-shrinks 0: the failing cases are kept as generated, so the run's length is the cases'
        # own (shrinking each failure made it 14 s plain and 212 s under ASan); a quarter of the
        # cases under the sanitizers still outlasts the second start by seconds.
        first = subprocess.Popen([self.hiccup, "explore", "--defect", "keep-calls-on-retry", "--keep-going",
                                  "--max-shrinks", "0", "--cases", str(scaled(20000)), "--jobs", "1",
                                  "--progress-every", "0", "--report-dir", d],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        import time
        deadline = time.monotonic() + 300
        while not (os.path.isdir(cx) and os.listdir(cx)) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first.poll() is None, "the first exploration ended before the second started: give it more cases"
        written = os.listdir(cx)
        p = self.hiccup_run(["explore", "--cases", "20", "--report-dir", d], 3)
        assert "another exploration is writing to this report directory" in p.stderr, p.stderr
        assert "pid %d" % first.pid in p.stderr, p.stderr
        out, err = first.communicate(timeout=600)
        assert first.returncode == 1, (first.returncode, out[-2000:], err[-2000:])
        assert os.listdir(cx) == written, (os.listdir(cx), written)
        summary = self.load(d)
        named = [c["counterexample"] for c in summary["cases"] if c.get("counterexample")]
        assert named, "the first exploration's summary names its counterexample"
        for path in named:
            assert os.path.isfile(path), f"summary.json points at {path}, which does not exist"
        with open(os.path.join(d, "summary.md")) as f:
            assert named[0] in f.read(), "summary.md names the counterexample"
        # Once the first has ended the directory is free again: a later exploration replaces its
        # reports, and only then its counterexample.
        p = self.hiccup_run(["explore", "--cases", "20", "--report-dir", d], 0)
        assert os.listdir(cx) == [], os.listdir(cx)
        assert "removed 1 counterexample(s) of an earlier exploration" in p.stderr, p.stderr

    def check_report_command(self):
        d = self.failing_run()
        html_path = os.path.join(d, "report.html")
        with open(html_path) as f:
            written = f.read()
        assert 'class="box request faulted violated"' in written, "run writes report.html with the timeline"
        os.remove(html_path)
        p = self.hiccup_run(["report", d], 0)
        with open(html_path) as f:
            regenerated = f.read()
        assert regenerated == written, "hiccup report DIR regenerates the same report.html from summary.json"
        assert "report.html" in p.stdout, p.stdout
        self.hiccup_run(["report"], 2)
        self.hiccup_run(["report", d, d], 2)
        self.hiccup_run(["report", "--bogus", d], 2)
        empty = self.dir("not-a-report")
        p = self.hiccup_run(["report", empty], 3)
        assert "summary.json" in p.stderr and "cannot read" in p.stderr, p.stderr
        # A folder named summary.json: exit 3, not an internal error (exit 5) from reading it.
        folder = self.dir("summary-is-a-folder")
        os.makedirs(os.path.join(folder, "summary.json"), exist_ok=True)
        p = self.hiccup_run(["report", folder], 3)
        assert "summary.json: not a file" in p.stderr, p.stderr
        with open(os.path.join(empty, "summary.json"), "w") as f:
            f.write("{not json")
        p = self.hiccup_run(["report", empty], 3)
        assert "summary.json: invalid json at byte 3" in p.stderr, p.stderr
        with open(os.path.join(empty, "summary.json"), "w") as f:
            f.write('{"turns": []}')
        p = self.hiccup_run(["report", empty], 3)
        assert "not a hiccup summary" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(empty, "report.html")), "nothing written for invalid input"
        # A summary with a field of the wrong type: exit 3, and the existing page is left as it was.
        s = self.load(d)
        s["cases"][0]["transcript"] = {"requests": "x"}
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f)
        p = self.hiccup_run(["report", d], 3)
        assert "summary.json: /cases/0/transcript/requests: expected an array, found a string" in p.stderr, p.stderr
        with open(html_path) as f:
            assert f.read() == written, "report.html kept when the summary cannot be rendered"
        # Type errors name the JSON pointer and what was expected (they named no field).
        s = self.load(d)
        # A black box's run or matrix writes "seed": null; its folder is re-rendered (it was exit 3).
        unseeded = json.loads(json.dumps(s))
        unseeded["cases"][0].pop("transcript", None)  # left broken by the check above
        unseeded["cases"][0]["passed"] = False
        unseeded["seed"] = None
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(unseeded, f)
        self.hiccup_run(["report", d], 0)
        s["cases"][0]["passed"] = "yes"
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f)
        p = self.hiccup_run(["report", d], 3)
        assert "summary.json: /cases/0/passed: expected true or false, found a string" in p.stderr, p.stderr
        # Values the page shows as text or numbers, of another type (a newcomer's cases: exit 0 before).
        pristine = json.dumps(self.load(d))
        for pointer, value, expected in [(("cases", 0, "violations"), 5, "/cases/0/violations: expected an array, found number 5"),
                                         (("cases", 0, "name"), None, "/cases/0/name: expected a string, found null"),
                                         (("cases", 0, "wall_ms"), "fast", "/cases/0/wall_ms: expected a number, found a string"),
                                         (("seed",), {"a": 1}, "/seed: expected a number or null, found an object"),
                                         (("defects",), "abc", "/defects: expected an array of defect names, found a string")]:
            bad = json.loads(pristine)
            bad["cases"][0]["passed"] = False
            target = bad
            for key in pointer[:-1]:
                target = target[key]
            target[pointer[-1]] = value
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump(bad, f)
            p = self.hiccup_run(["report", d], 3)
            assert "summary.json: " + expected in p.stderr, (expected, p.stderr)
        s["cases"][0]["passed"] = False
        s["cases"][0]["transcript"] = {"requests": [{"answer": {"events_delivered": "2"}}]}
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f)
        p = self.hiccup_run(["report", d], 3)
        assert "summary.json: /cases/0/transcript/requests/0/answer/events_delivered: expected a number, found a string" \
            in p.stderr, p.stderr
        # A number beyond a double's range: exit 3 with the file and pointer (it was exit 5), for
        # report and report merge alike.
        s["wall_ms"] = "__beyond__"
        with open(os.path.join(d, "summary.json"), "w") as f:
            f.write(json.dumps(s).replace('"__beyond__"', "1e999"))
        p = self.hiccup_run(["report", d], 3)
        assert "summary.json: /wall_ms: number 1e999 at byte" in p.stderr and "is out of range" in p.stderr, p.stderr
        p = self.hiccup_run(["report", "merge", os.path.join(self.work, "merged-1e999"), d], 3)
        assert "summary.json: /wall_ms: number 1e999 at byte" in p.stderr and "is out of range" in p.stderr, p.stderr
        # report.html is replaced, never written through a symlink planted in its place.
        d = self.failing_run()
        with open(html_path) as f:
            written = f.read()
        os.remove(html_path)
        target = os.path.join(self.work, "elsewhere.txt")
        with open(target, "w") as f:
            f.write("not hiccup's\n")
        os.symlink(target, html_path)
        self.hiccup_run(["report", d], 0)
        with open(target) as f:
            assert f.read() == "not hiccup's\n", "hiccup report wrote through the symlink"
        assert not os.path.islink(html_path) and os.path.isfile(html_path), "report.html replaced by a file"
        with open(html_path) as f:
            assert f.read() == written
        assert not [n for n in os.listdir(d) if ".tmp-" in n], "no temporary file left behind"
        # explore writes report.html too, and its command line (a path with a space is quoted).
        e = self.dir("explore report")
        self.hiccup_run(["explore", "--defect", "keep-calls-on-retry", "--cases", "100", "--report-dir", e], 1)
        s = self.load(e)
        self.valid(s, "explore with a command line")
        want = f"hiccup explore --defect keep-calls-on-retry --cases 100 --report-dir '{e}'"
        assert s["command_line"] == want, (s.get("command_line"), want)
        with open(os.path.join(e, "report.html")) as f:
            html = f.read()
        assert 'class="box request' in html and "counterexample" in html, "explore's report.html has the timeline"
        assert want.replace("'", "&#39;") in html, "the command line is in the page header"

    # hiccup report merge -------------------------------------------------------------------------
    def explore_into(self, d, args, rcs=(0, 1)):
        p = subprocess.run([self.hiccup, "explore", "--report-dir", d] + list(args),
                           capture_output=True, text=True, timeout=600)
        assert p.returncode in rcs, f"explore {args}: exit {p.returncode}\n{p.stderr[-2000:]}"
        return self.load(d)

    def check_merge(self):
        base = ["--cases", "80", "--seed", "3", "--defect", "keep-calls-on-retry", "--keep-going"]
        whole = self.explore_into(self.dir("whole"), base, (1,))
        shards = []
        for k in (3, 1, 4, 2):  # any order
            d = self.dir(f"shard-{k}")
            s = self.explore_into(d, base + ["--shard", f"{k}/4"])
            assert s["shard"] == {"index": k, "count": 4}, s["shard"]
            self.valid(s, f"shard {k}/4")
            shards.append(d)
        out = os.path.join(self.work, "merged")
        shutil.rmtree(out, ignore_errors=True)
        step = os.path.join(self.work, "step-summary.md")
        open(step, "w").close()
        env = dict(os.environ, GITHUB_STEP_SUMMARY=step)
        p = self.hiccup_run(["report", "merge", out] + shards, 1, env=env)
        assert "merged 4 shard(s)" in p.stdout, p.stdout
        m = self.load(out)
        self.valid(m, "merged report")
        # The merged report is the unsharded run's: same verdicts, same counts, same run digest.
        assert m["digest"] == whole["digest"], (m["digest"], whole["digest"])
        assert m["case_digests"] == whole["case_digests"], "every case once, in index order"
        key = lambda c: (c["name"], c["passed"], c["cases_run"], c.get("failing_case"),
                         [v["invariant"] for v in c["violations"]])
        assert [key(c) for c in m["cases"]] == [key(c) for c in whole["cases"]], \
            ([key(c) for c in m["cases"]], [key(c) for c in whole["cases"]])
        assert (m["passed"], m["failed"]) == (whole["passed"], whole["failed"])
        assert [x["index"] for x in m["shards"]] == [1, 2, 3, 4], m["shards"]
        # The failing property's counterexample was copied into OUT and replays from there.
        failing = [c for c in m["cases"] if not c["passed"] and "counterexample" in c]
        assert failing, "the defect's failure is in the merged report"
        cx = failing[0]["counterexample"]
        assert cx.startswith(os.path.join(out, "counterexamples")) and os.path.exists(cx), cx
        assert cx in failing[0]["replay"], failing[0]["replay"]
        self.hiccup_run(["run", cx, "--transport", "memory", "--report-dir", self.dir("replay")], 1)
        for name in ("junit.xml", "summary.md", "report.html"):
            assert os.path.getsize(os.path.join(out, name)) > 0, name
        with open(os.path.join(out, "report.html")) as f:
            assert 'class="box request' in f.read(), "the merged report.html has the failure's timeline"
        with open(step) as f:
            assert "hiccup explore:" in f.read(), "merge appends summary.md to $GITHUB_STEP_SUMMARY"

        def refused(dirs, *needles):
            o = os.path.join(self.work, "refused")
            shutil.rmtree(o, ignore_errors=True)
            p = self.hiccup_run(["report", "merge", o] + dirs, 3)
            for n in needles:
                assert n in p.stderr, (n, p.stderr)
            assert not os.path.exists(os.path.join(o, "summary.json")), "nothing written when refused"

        by_k = {int(os.path.basename(d).split("-")[1]): d for d in shards}
        refused([by_k[1], by_k[2], by_k[4]], "3/4 missing")
        refused([by_k[1], by_k[2], by_k[3], by_k[4], by_k[2]], "both shard 2/4", "overlap")
        other_seed = self.explore_into(self.dir("other-seed"), ["--cases", "80", "--seed", "4", "--defect",
                                                                 "keep-calls-on-retry", "--keep-going", "--shard", "3/4"])
        assert other_seed["seed"] == 4
        refused([by_k[1], by_k[2], os.path.join(self.work, "other-seed"), by_k[4]], "seed")
        self.explore_into(self.dir("other-defects"), ["--cases", "80", "--seed", "3", "--keep-going", "--shard", "3/4"])
        refused([by_k[1], by_k[2], os.path.join(self.work, "other-defects"), by_k[4]], "defects")
        self.explore_into(self.dir("other-count"), base + ["--shard", "3/5"])
        refused([by_k[1], by_k[2], os.path.join(self.work, "other-count"), by_k[4]], "shard count")
        # Another version: edit a copy of a shard's summary.
        fake = self.dir("other-version")
        shutil.copytree(by_k[3], fake, dirs_exist_ok=True)
        s = self.load(fake)
        s["hiccup_version"] = "0.9.0"
        with open(os.path.join(fake, "summary.json"), "w") as f:
            json.dump(s, f)
        refused([by_k[1], by_k[2], fake, by_k[4]], "0.9.0")
        run_dir = self.failing_run()
        refused([run_dir], "`run` report")
        self.hiccup_run(["report", "merge", out], 2)
        # A hand-edited shard: exit 3 naming the file and pointer, OUT left as it was, no staging left.
        bad = self.dir("bad-types")
        shutil.copytree(by_k[2], bad, dirs_exist_ok=True)
        s = self.load(bad)
        s["cases"][0]["passed"] = "yes"
        with open(os.path.join(bad, "summary.json"), "w") as f:
            json.dump(s, f)
        before = {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)}
        p = self.hiccup_run(["report", "merge", out, by_k[1], bad, by_k[3], by_k[4]], 3)
        assert "bad-types/summary.json: /cases/0/passed: expected true or false" in p.stderr, p.stderr
        assert {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)} == before, "OUT untouched"
        assert not [n for n in os.listdir(self.work) if ".merging-" in n], "no staging directory left behind"
        # A shard's summary nested 100,000 deep: exit 3 naming it (it parsed and then crashed the
        # merge's recursive copy with SIGSEGV, exit 139).
        deep = self.dir("deep")
        shutil.copytree(by_k[2], deep, dirs_exist_ok=True)
        with open(os.path.join(deep, "summary.json")) as f:
            text = f.read().rstrip()
        with open(os.path.join(deep, "summary.json"), "w") as f:
            f.write(text[:-1] + ', "extra": ' + "[" * 100000 + "]" * 100000 + "}")
        p = self.hiccup_run(["report", "merge", out, by_k[1], deep, by_k[3], by_k[4]], 3)
        assert "deep/summary.json: arrays and objects nest deeper than 512" in p.stderr, p.stderr
        # OUT inside a shard directory would write into that shard.
        p = self.hiccup_run(["report", "merge", os.path.join(by_k[1], "merged")] + shards, 3)
        assert "lies inside the shard directory" in p.stderr, p.stderr

    def check_merge_matches_unsharded(self):
        """Merged shards give the unsharded run's verdicts, per property, with and without
        --keep-going (without it, the unsharded run stops at the first failure and so does the merge)."""
        key = lambda c: (c["name"], c["passed"], c["cases_run"], c.get("failing_case"),
                         sorted({v["invariant"] for v in c["violations"]}))
        defects = ("content-filter-as-success", "commit-incomplete-stream", "restart-run-on-failure")
        for defect in defects[:scaled(len(defects))]:
            for extra in ([], ["--keep-going"]):
                base = ["--cases", "150", "--seed", "1", "--defect", defect] + extra
                whole = self.explore_into(self.dir("u-whole"), base, (1,))
                dirs = []
                for k in (2, 4, 1, 3):
                    d = self.dir(f"u-shard-{k}")
                    self.explore_into(d, base + ["--shard", f"{k}/4"])
                    dirs.append(d)
                out = os.path.join(self.work, "u-merged")
                shutil.rmtree(out, ignore_errors=True)
                self.hiccup_run(["report", "merge", out] + dirs, 1)
                m = self.load(out)
                self.valid(m, f"merged {defect} {extra}")
                what = f"{defect} {' '.join(extra) or '(stops at the first failure)'}"
                assert m["digest"] == whole["digest"], f"{what}: digest {m['digest']} != {whole['digest']}"
                assert [key(c) for c in m["cases"]] == [key(c) for c in whole["cases"]], \
                    f"{what}:\n merged  {[key(c) for c in m['cases']]}\n whole   {[key(c) for c in whole['cases']]}"
                assert m["failing_cases"] == whole["failing_cases"], what
                # Every property a case broke fails, whether or not the shrunk counterexample still
                # does (which may break more: it is a case too).
                broken = {("expect" if i.startswith("expect.") else i) for _, names in whole["failing_cases"] for i in names}
                failed = {c["property"] for c in whole["cases"] if not c["passed"]} - {"determinism"}
                assert broken <= failed, f"{what}: broken by some case {sorted(broken)}, failed {sorted(failed)}"

    # examples/ci and examples/kubernetes -----------------------------------------------------------
    def check_examples(self):
        import yaml
        cases = 50

        def sh(script, env, cwd):
            p = subprocess.run(["/bin/sh", "-c", script], env=dict(os.environ, **env), cwd=cwd,
                               capture_output=True, text=True, timeout=600)
            assert p.returncode == 0, f"script exit {p.returncode}:\n{script}\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
            return p

        def covered(merged_dir):
            m = self.load(merged_dir)
            self.valid(m, "merged example report")
            indices = [d[0] for d in m["case_digests"]]
            assert indices == list(range(cases)), f"every case once: {indices}"
            assert m["shard"] == {"index": 1, "count": 1}

        # GitHub Actions: every matrix job's explore step, then the merge job's step.
        with open(os.path.join(self.source, "examples/ci/github-actions.yml")) as f:
            wf = yaml.safe_load(f)
        jobs = wf["jobs"]
        shards = int(wf["env"]["SHARDS"])
        matrix = jobs["explore"]["strategy"]["matrix"]["shard"]
        assert sorted(matrix) == list(range(1, shards + 1)), (matrix, shards)
        assert jobs["merge"]["needs"] == "explore"
        explore_run = next(s["run"] for s in jobs["explore"]["steps"] if "run" in s and "explore" in s["run"])
        upload = next(s for s in jobs["explore"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
        merge_run = next(s["run"] for s in jobs["merge"]["steps"] if "run" in s and "report merge" in s["run"])
        download = next(s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
        # What the local replay below assumes of the actions: v4, one folder per artifact named after it.
        import fnmatch
        assert upload["uses"] == "actions/upload-artifact@v4" and download["uses"] == "actions/download-artifact@v4"
        assert "merge-multiple" not in download["with"], "each artifact must land in its own folder"
        assert "name" not in download["with"], "download every shard's artifact, not one"
        for k in matrix:
            name = upload["with"]["name"].replace("${{ matrix.shard }}", str(k))
            assert fnmatch.fnmatchcase(name, download["with"]["pattern"]), (name, download["with"]["pattern"])
        names = {upload["with"]["name"].replace("${{ matrix.shard }}", str(k)) for k in matrix}
        assert len(names) == len(matrix), "one artifact name per shard"
        ws = self.dir("gha")
        os.makedirs(os.path.join(ws, "build"))
        os.symlink(self.hiccup, os.path.join(ws, "build", "hiccup"))
        env = {"SEED": wf["env"]["SEED"], "CASES": str(cases), "SHARDS": str(shards)}
        for k in matrix:
            sh(explore_run.replace("${{ matrix.shard }}", str(k)).replace("${{ env.SHARDS }}", str(shards)), env, ws)
            # upload-artifact NAME from PATH; download-artifact puts each artifact in PATH/NAME.
            name = upload["with"]["name"].replace("${{ matrix.shard }}", str(k))
            src = os.path.join(ws, upload["with"]["path"].replace("${{ matrix.shard }}", str(k)))
            shutil.copytree(src, os.path.join(ws, download["with"]["path"], name))
        sh(merge_run, env, ws)
        covered(os.path.join(ws, "reports/merged"))

        # Kubernetes: an Indexed Job's pods (JOB_COMPLETION_INDEX 0 … completions-1), then the merge job.
        with open(os.path.join(self.source, "examples/kubernetes/explore-job.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        by_name = {d["metadata"]["name"]: d for d in docs}
        assert by_name["hiccup-results"]["kind"] == "PersistentVolumeClaim"
        job = by_name["hiccup-explore"]
        assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
        container = job["spec"]["template"]["spec"]["containers"][0]
        kenv = {e["name"]: e["value"] for e in container["env"]}
        completions = job["spec"]["completions"]
        assert int(kenv["SHARDS"]) == completions, (kenv["SHARDS"], completions)
        pvc = by_name["hiccup-results"]["metadata"]["name"]
        assert "ReadWriteMany" in by_name["hiccup-results"]["spec"]["accessModes"], "shards on several nodes share it"
        for job_name in ("hiccup-explore", "hiccup-merge"):
            spec = by_name[job_name]["spec"]["template"]["spec"]
            claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]}
            mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
            assert list(claims.values()) == [pvc], (job_name, claims)
            assert list(mounts.values()) == ["/results"] and set(mounts) == set(claims), (job_name, mounts)
        results = self.dir("k8s-results")

        def local(script):
            return script.replace("/hiccup/build/hiccup", self.hiccup).replace("/results", results)

        kenv["CASES"] = str(cases)
        for index in range(completions):
            sh(local(container["args"][0]), dict(kenv, JOB_COMPLETION_INDEX=str(index)), self.work)
        merge = by_name["hiccup-merge"]["spec"]["template"]["spec"]["containers"][0]
        menv = {e["name"]: e["value"] for e in merge["env"]}
        assert int(menv["SHARDS"]) == completions
        sh(local(merge["args"][0]), menv, self.work)
        covered(os.path.join(results, "merged"))
        with open(os.path.join(results, "merged", "verdict")) as f:
            assert f.read().strip() == "passed", "no defect: the merged verdict passes"
        assert sorted(os.listdir(os.path.join(results, "merged", "shards"))) == [f"shard-{k}" for k in range(1, completions + 1)]
        assert not [d for d in os.listdir(results) if d.startswith("shard-")], "a re-run starts from no shards"
        # A second run over the same volume merges only its own shards.
        for index in range(completions):
            sh(local(container["args"][0]), dict(kenv, JOB_COMPLETION_INDEX=str(index)), self.work)
        sh(local(merge["args"][0]), menv, self.work)
        covered(os.path.join(results, "merged"))


def main():
    a = parse_args()
    return run_check(Checker(a.hiccup, a.source, a.work), a.check)


if __name__ == "__main__":
    sys.exit(main())
