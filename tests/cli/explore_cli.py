#!/usr/bin/env python3
"""What `hiccup explore` and `hiccup run` tell a user beyond their exit codes: lines that reach a
pipe as they are written (a run killed by a CI timeout leaves its log), progress lines on a stderr
that is not a terminal, an agent that dies with the run that a signal stops, --max-shrinks 0 keeping the
failing case as generated, and a counterexample found with a seeded defect that says so, in its
description and when `hiccup run` replays it (its header names the defect), and a run whose answer
the token limit cut that says so when it passes, and explorations over the network transports
(websocket, bedrock, vertex, foundry) that say so and still find a seeded defect. One check per
ctest entry:

    explore_cli.py --hiccup build/hiccup --work DIR CHECK
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from cli_common import CheckerBase, parse_args, run_check


class Checker(CheckerBase):
    def __init__(self, hiccup, work):
        super().__init__(hiccup, None, work)

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

    def check_progress_lines(self):
        """With stderr not a terminal, explore writes a progress line there every --progress-every
        seconds: a long green run in a CI log shows how far it got (it printed nothing until the end)."""
        d = self.dir("progress")
        p = subprocess.Popen([self.hiccup, "explore", "--cases", "1000000", "--seed", "1", "--progress-every", "1",
                              "--report-dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.work)
        try:
            ready, _, _ = select.select([p.stderr], [], [], 30)
            assert ready, "no progress line on stderr 30 s into a run of 1,000,000 cases"
            line = p.stderr.readline().decode()
            assert line.startswith("explore: ") and " of 1000000 cases, 0 failed, " in line, f"first line {line!r}"
            assert p.poll() is None, "explore ended before its progress line was read: the check shows nothing"
        finally:
            p.kill()
            p.wait()

    def check_agent_dies_with_run(self):
        """`hiccup run --agent-cmd` stopped by SIGTERM (a CI timeout) takes its agent's process group
        with it: the agent, in a group of its own, stayed running under init."""
        marker = f"777.{os.getpid()}"  # a sleep no other process runs
        scenario = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios",
                                "mid-stream", "midstream-reset-after-call.json")
        p = subprocess.Popen([self.hiccup, "run", scenario, "--agent-cmd", f"sleep {marker}",
                              "--report-dir", self.dir("agent")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=self.work)

        def agents():
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                except OSError:
                    continue
                if argv[:2] == [b"sleep", marker.encode()]:
                    found.append(int(pid))
            return found

        try:
            deadline = time.monotonic() + 30
            while not agents() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert agents(), "the agent never started: the check shows nothing"
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
            deadline = time.monotonic() + 5
            while agents() and time.monotonic() < deadline:
                time.sleep(0.05)
            left = agents()
            assert not left, f"agent processes {left} still run after hiccup run was stopped by SIGTERM"
        finally:
            for pid in agents():
                os.kill(pid, signal.SIGKILL)
            if p.poll() is None:
                p.kill()
                p.wait()

    def check_max_shrinks_0(self):
        """--max-shrinks 0 neither shrinks nor minimizes: the counterexample is the failing case as
        generated, and no candidate run is spent."""
        d = self.dir("no-shrinks")
        p = self.hiccup_run(["explore", "--cases", "200", "--seed", "1", "--defect", "keep-calls-on-retry",
                             "--max-shrinks", "0", "--report-dir", d], 1)
        assert "not shrunk (--max-shrinks 0)" in p.stdout, p.stdout[-3000:]
        # The replay line carries the option: without it the replayed exploration would shrink.
        replay = [l for l in p.stdout.splitlines() if l.strip().startswith("explore: ") and " explore --seed " in l]
        assert replay and all(" --max-shrinks 0" in l for l in replay), replay or p.stdout[-3000:]
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        broken = [c for c in s["cases"] if "counterexample" in c]
        assert broken, "no property names the counterexample"
        for c in broken:
            what = f"property {c['property']}"
            assert c["shrink_tries"] == 0 and c["minimize_tries"] == 0, \
                f"{what}: {c['shrink_tries']} shrink tries, {c['minimize_tries']} minimize tries"
            assert c["shrunk_size"] == c["original_size"], f"{what}: {c['original_size']} -> {c['shrunk_size']}"
        files = os.listdir(os.path.join(d, "counterexamples"))
        assert len(files) == 1, files
        # It replays: the failing case as generated, with its defect in runtime.defects.
        self.hiccup_run(["run", os.path.join(d, "counterexamples", files[0]), "--transport", "memory",
                         "--report-dir", self.dir("no-shrinks-run")], 1)

    def check_replay_line_runs(self):
        """The replay line explore prints runs when pasted into a shell in another folder: it names
        the running binary by its absolute path (it said `build/hiccup`, found only from the source
        tree's root)."""
        self.dir("replay-line")
        # A report folder relative to hiccup's working folder (self.work): the counterexample's path
        # in the line is absolute too (it was relative: a newcomer's paste failed, stop 49).
        p = self.hiccup_run(["explore", "--cases", "200", "--seed", "1", "--defect", "keep-calls-on-retry",
                             "--max-shrinks", "0", "--report-dir", "replay-line"], 1)
        replay = [l.split("replay:", 1)[1].strip() for l in p.stdout.splitlines() if l.strip().startswith("replay:")]
        assert replay, p.stdout[-3000:]
        binary = os.path.realpath(self.hiccup)
        assert replay[0].startswith(binary + " run "), (replay[0], binary)
        explore = [l for l in p.stdout.splitlines() if l.strip().startswith("explore: ") and " explore --seed " in l]
        assert explore and all(binary + " explore --seed " in l for l in explore), explore
        elsewhere = self.dir("replay-line-elsewhere")
        q = subprocess.run(replay[0], shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=120)
        # The counterexample fails as it did (exit 1): the command ran (a missing binary is 127).
        assert q.returncode == 1, f"`{replay[0]}` in {elsewhere}: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"

    def check_run_replay_line_runs(self):
        """The replay line `hiccup run` writes for a failing case (summary.json, summary.md) names
        the running binary and the scenario by absolute paths: pasted in another folder it runs
        and fails as the case did (it said `build/hiccup run FILE`, found only from the source
        tree's root, with FILE as given)."""
        d = self.dir("run-replay")
        scenario = {"schema": 1, "name": "wrong-final-text", "provider": "gemini", "prompt": "Say hello.",
                    "turns": [{"attempts": [{"events": [{"text": "Hello."}, {"finish": "stop"}]}]}],
                    "expect": {"outcome": "completed", "final_text": "Goodbye."}}
        with open(os.path.join(d, "wrong.json"), "w") as f:
            json.dump(scenario, f)
        # The file and the report folder relative to hiccup's working folder (self.work).
        self.hiccup_run(["run", os.path.join("run-replay", "wrong.json"), "--transport", "memory",
                         "--report-dir", os.path.join("run-replay", "reports")], 1)
        with open(os.path.join(d, "reports", "summary.json")) as f:
            replay = json.load(f)["cases"][0]["replay"]
        binary = os.path.realpath(self.hiccup)
        assert replay == f"{binary} run {os.path.join(d, 'wrong.json')} --transport memory", (replay, binary)
        with open(os.path.join(d, "reports", "summary.md")) as f:
            assert f"- replay: `{replay}`" in f.read()
        elsewhere = self.dir("run-replay-elsewhere")
        q = subprocess.run(replay, shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=120)
        assert q.returncode == 1 and "FAIL wrong-final-text" in q.stdout, \
            f"`{replay}` in {elsewhere}: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"

    def check_counterexample_names_its_defects(self):
        """A counterexample found with --defect names the defect in its description, and `hiccup
        run` on it says the file switches the defect on itself (so it fails without --defect)."""
        d = self.dir("defect")
        self.hiccup_run(["explore", "--cases", "200", "--seed", "1", "--defect", "keep-calls-on-retry",
                         "--report-dir", d], 1)
        files = os.listdir(os.path.join(d, "counterexamples"))
        assert len(files) == 1, files
        path = os.path.join(d, "counterexamples", files[0])
        with open(path) as f:
            ce = json.load(f)
        assert ce["runtime"]["defects"] == ["keep-calls-on-retry"], ce["runtime"]
        assert "found with defect keep-calls-on-retry" in ce["description"], ce["description"]
        p = self.hiccup_run(["run", path, "--transport", "memory", "--report-dir", self.dir("defect-run")], 1)
        note = f"note: {ce['name']} switches on defect keep-calls-on-retry itself (runtime.defects of {path})"
        assert note in p.stdout, p.stdout
        # The header names the defects the run switches on, the file's own among them, and whose.
        header = p.stdout.splitlines()[0]
        assert header == ("hiccup run: seed 1, transport memory, defects keep-calls-on-retry "
                          "(runtime.defects of the scenario file)"), header
        # With --defect naming it too, once.
        p = self.hiccup_run(["run", path, "--transport", "memory", "--defect", "keep-calls-on-retry",
                             "--report-dir", self.dir("defect-run-2")], 1)
        assert note in p.stdout, p.stdout
        assert p.stdout.splitlines()[0] == "hiccup run: seed 1, transport memory, defects keep-calls-on-retry", p.stdout

    def check_run_says_truncated(self):
        """A passing run whose answer a max_tokens finish ended says so on its console line and in
        summary.json (it said so only in the transcript, kept for failures or with --transcripts),
        and a whole answer's line does not."""
        scenarios = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios")
        cut = os.path.join(scenarios, "truncation", "truncation-final-answer.json")
        whole = os.path.join(scenarios, "mid-stream", "midstream-reset-after-call.json")
        d = self.dir("truncated")
        p = self.hiccup_run(["run", cut, whole, "--transport", "memory", "--report-dir", d], 0)
        lines = {l.split()[1]: l for l in p.stdout.splitlines() if l.startswith("PASS ")}
        assert len(lines) == 2, p.stdout
        cut_line = [l for n, l in lines.items() if "truncation" in n]
        assert cut_line and "(answer truncated at the token limit)" in cut_line[0], p.stdout
        whole_line = [l for n, l in lines.items() if "midstream" in n]
        assert whole_line and "truncated" not in whole_line[0], p.stdout
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        flags = {c["name"]: c.get("truncated") for c in s["cases"]}
        assert flags == {"truncation-final-answer": True, "midstream-reset-after-call": None}, flags

    # --- explore over the network transports (issue 37) ---------------------------------------

    def explore_over(self, transport, provider, extra, expect_rcs):
        """`explore --cases 30 --seed 1 --transport TRANSPORT` plus `extra`: the header and summary.json
        name the transport, every case is in `provider` (drawn so, no --provider given). Returns
        (completed process, summary)."""
        d = self.dir(f"over-{transport}-{len(extra)}" + "".join("-" + a.strip("-") for a in extra[1:2]))
        p = subprocess.run([self.hiccup, "explore", "--cases", "30", "--seed", "1", "--transport", transport,
                            "--report-dir", d] + extra, capture_output=True, text=True, cwd=self.work, timeout=600)
        assert p.returncode in expect_rcs, f"exit {p.returncode}, expected {expect_rcs}\n{p.stdout[-3000:]}{p.stderr[-2000:]}"
        first = p.stdout.splitlines()[0]
        assert first.startswith(f"explore: seed 1, 30 cases, transport {transport}"), first
        line = [l for l in p.stdout.splitlines() if l.startswith("per provider:")]
        assert line and re.fullmatch(rf"per provider: {provider} \d+( \(\d+ failed\))?", line[0]), line or p.stdout[-2000:]
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        assert s["transport"] == transport and s["provider"] == provider, (s["transport"], s["provider"])
        return p, s

    def check_over_cloud(self, transport, provider="anthropic"):
        """Over a cloud path every case is drawn in anthropic (over websocket in openai-responses)
        and run on a real server: a correct runtime explores clean, judging each case as in memory,
        and a seeded defect is found, its counterexample replayed over the same transport."""
        _, clean = self.explore_over(transport, provider, [], (0,))
        assert clean["failed"] == 0, clean["failing_cases"]
        p, s = self.explore_over(transport, provider, ["--defect", "keep-calls-on-retry"], (1,))
        assert any("at-most-once" in names for _, names in s["failing_cases"]), s["failing_cases"]
        assert f" --provider {provider} --transport {transport}" in p.stdout, p.stdout[-2000:]
        replay = [l.split("replay:", 1)[1].strip() for l in p.stdout.splitlines() if l.strip().startswith("replay:")]
        assert replay and replay[0].endswith(f" --transport {transport}"), replay or p.stdout[-3000:]
        q = subprocess.run(replay[0] + " --report-dir " + self.dir(f"over-{transport}-replay"), shell=True,
                           cwd=self.work, capture_output=True, text=True, timeout=120)
        assert q.returncode == 1 and q.stdout.startswith(f"hiccup run: seed 1, transport {transport}"), \
            f"`{replay[0]}`: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"

    def check_over_bedrock(self):
        self.check_over_cloud("bedrock")

    def check_over_vertex(self):
        self.check_over_cloud("vertex")

    def check_over_foundry(self):
        self.check_over_cloud("foundry")

    def check_over_websocket(self):
        """Over websocket (openai-responses only) a correct runtime explores clean: a fault placed
        after a response's terminal event (a malformed frame, a reset) lands between two cycles of
        the kept connection, and made 2 to 10 of these 30 cases fail by timing before the runtime
        reconnected past a connection found dead before its next response began (issue 37)."""
        self.check_over_cloud("websocket", "openai-responses")
        # The server forgets a response there (websocket.forget_response, drawn over websocket
        # only): a runtime that sends the continuation's new items again without the lost
        # context is found, and its counterexample replays over websocket.
        p, s = self.explore_over("websocket", "openai-responses", ["--defect", "replay-lost-context"], (1,))
        assert s["failing_cases"], p.stdout[-3000:]
        replay = [l.split("replay:", 1)[1].strip() for l in p.stdout.splitlines() if l.strip().startswith("replay:")]
        assert replay and replay[0].endswith(" --transport websocket"), replay or p.stdout[-3000:]
        q = subprocess.run(replay[0] + " --report-dir " + self.dir("over-websocket-replay-lost-context"), shell=True,
                           cwd=self.work, capture_output=True, text=True, timeout=120)
        assert q.returncode == 1, f"`{replay[0]}`: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"

    def check_over_any(self):
        """`--transport any` draws each case's transport among those its format plays: every one
        of the five is used, a correct runtime explores clean, and a seeded defect's counterexample
        replays over the transport its case ran on."""
        d = self.dir("over-any")
        p = subprocess.run([self.hiccup, "explore", "--cases", "100", "--seed", "1", "--transport", "any",
                            "--report-dir", d], capture_output=True, text=True, cwd=self.work, timeout=600)
        assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-2000:]}"
        assert p.stdout.splitlines()[0].startswith("explore: seed 1, 100 cases, transport any"), p.stdout[:300]
        line = [l for l in p.stdout.splitlines() if l.startswith("per transport:")]
        assert line, p.stdout[-2000:]
        counts = dict((k, int(v)) for k, v in re.findall(r" (\w+) (\d+)", line[0]))
        assert set(counts) == {"http", "websocket", "bedrock", "vertex", "foundry"} and sum(counts.values()) == 100, line
        with open(os.path.join(d, "summary.json")) as f:
            assert json.load(f)["transport"] == "any"
        d = self.dir("over-any-defect")
        p = subprocess.run([self.hiccup, "explore", "--cases", "200", "--seed", "1", "--transport", "any",
                            "--defect", "keep-calls-on-retry", "--report-dir", d],
                           capture_output=True, text=True, cwd=self.work, timeout=600)
        assert p.returncode == 1, f"exit {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-2000:]}"
        assert " --transport any" in p.stdout, p.stdout[-2000:]
        replay = [l.split("replay:", 1)[1].strip() for l in p.stdout.splitlines() if l.strip().startswith("replay:")]
        assert replay, p.stdout[-3000:]
        q = subprocess.run(replay[0] + " --report-dir " + self.dir("over-any-replay"), shell=True,
                           cwd=self.work, capture_output=True, text=True, timeout=120)
        ran_over = re.search(r"transport (\w+)", q.stdout.splitlines()[0] if q.stdout else "")
        # The case's own transport (named in its FAIL line) is the one the replay runs over.
        case_over = re.search(r"^FAIL case \d+ \(seed 1, over (\w+)\)", p.stdout, re.M)
        assert case_over, p.stdout[-3000:]
        assert q.returncode == 1 and ran_over and ran_over.group(1) == case_over.group(1), \
            f"`{replay[0]}`: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"

    def check_transport_needs_provider(self):
        """A transport that plays one format refuses another --provider (a usage error)."""
        for transport, provider in (("vertex", "openai-responses"), ("bedrock", "openai-responses")):
            p = subprocess.run([self.hiccup, "explore", "--transport", transport, "--provider", provider],
                               capture_output=True, text=True, cwd=self.work, timeout=60)
            assert p.returncode == 2 and f"--transport {transport} plays" in p.stderr, (p.returncode, p.stderr)


def main():
    a = parse_args(source=False)
    return run_check(Checker(a.hiccup, a.work), a.check)


if __name__ == "__main__":
    sys.exit(main())
