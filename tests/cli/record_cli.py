#!/usr/bin/env python3
"""`hiccup record` as a user meets it: the upstream is `hiccup serve` playing a scenario with
faults, the agent harness/agents/testdata/fake_agent.py (a small Gemini agent loop, no npm). One
check per ctest entry:

    record_cli.py --hiccup build/hiccup --source SRC --work DIR CHECK

records-and-replays: `hiccup record --agent-cmd` writes a scenario that lints clean, holds the
    upstream's 503 and cut as the faults they were, holds no credential the agent sent, and passes
    under `hiccup run --agent-cmd` with the same agent, as the original does.
unmatched-replay-fails: replaying a recording that lacks a turn the agent asks for fails (exit 1)
    naming the request and the missing /turns/N, never with a guessed answer.
stop-ends-agent: SIGINT while the agent still runs ends the agent (its own process group) and
    writes what was recorded, exit 0.
oversize: a recording over 16 MiB is written, exit 3, with its size, the limit and that it was written anyway
    (it said only the loader's "the file is N bytes", as if nothing had been written).
usage: --help (names docs/RECORDING.md), a bad --upstream URL (exit 2), an unwritable --out (a missing
folder, /proc/x.json: exit 2, before the proxy starts), nothing recorded (exit 1).
"""
import json
import os
import signal
import subprocess
import sys
import time
from cli_common import CheckerBase, parse_args, run_check

SECRET = "sk-hiccup-test-secret-4242"

SCENARIO = {
    "schema": 1,
    "name": "record-upstream",
    "provider": "gemini",
    "prompt": "Record one entry in the ledger.",
    "turns": [
        {"attempts": [
            {"status": 503, "retry_after_s": 0.01},
            {"events": [{"call": {"name": "run_shell_command", "args": {"command": "{{ledger}}"}}}, {"finish": "stop"}],
             "fault": {"kind": "cut", "after_event": 1, "bytes": 9}},
            {"events": [{"call": {"name": "run_shell_command", "args": {"command": "{{ledger}}"}}}, {"finish": "stop"}]},
        ]},
        {"attempts": [{"events": [{"text": "Recorded."}, {"finish": "stop"}]}]},
    ],
    "expect": {"outcome": "completed", "final_text": "Recorded.",
               "executions": [{"name": "run_shell_command", "count": 1}]},
}

# The fake agent, sending an API key the way a real client does (header and query).
AGENT = """#!/usr/bin/env python3
import http.client, os, runpy
orig = http.client.HTTPConnection.request
def request(self, method, url, body=None, headers={{}}, **kw):
    headers = dict(headers, **{{"x-goog-api-key": {secret!r}}})
    return orig(self, method, url + "&key=" + {secret!r}, body, headers, **kw)
http.client.HTTPConnection.request = request
runpy.run_path({fake!r}, run_name="__main__")
"""

# The agent, then one request more for a turn the recording does not hold.
DEPARTING = """#!/usr/bin/env python3
import http.client, json, os, subprocess, sys, urllib.parse
rc = subprocess.run([sys.executable, {agent!r}]).returncode
base = urllib.parse.urlparse(os.environ["HICCUP_BASE_URL"])
conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
history = [{{"role": "user", "parts": [{{"text": os.environ["HICCUP_PROMPT"]}}]}},
           {{"role": "model", "parts": [{{"text": "a"}}]}}, {{"role": "user", "parts": [{{"text": "more"}}]}},
           {{"role": "model", "parts": [{{"text": "b"}}]}}, {{"role": "user", "parts": [{{"text": "more"}}]}}]
conn.request("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", json.dumps({{"contents": history}}),
             {{"Content-Type": "application/json"}})
print("extra request answered", conn.getresponse().status, file=sys.stderr)
sys.exit(rc)
"""


class Checker(CheckerBase):
    def __init__(self, hiccup, source, work):
        super().__init__(hiccup, source, work)
        self.scenario = os.path.join(work, "original.json")
        with open(self.scenario, "w") as f:
            json.dump(SCENARIO, f, indent=2)
        self.agent = os.path.join(work, "agent.py")
        with open(self.agent, "w") as f:
            f.write(AGENT.format(secret=SECRET, fake=os.path.join(source, "harness/agents/testdata/fake_agent.py")))
        self.agent_cmd = f"{sys.executable} {self.agent}"

    def run(self, *args, timeout=120):
        p = subprocess.run([self.hiccup, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, cwd=self.work)
        return p.returncode, p.stdout

    def serve(self):
        p = subprocess.Popen([self.hiccup, "serve", self.scenario, "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        return p, p.stdout.readline().strip()

    def record(self, out):
        serve, url = self.serve()
        try:
            return self.run("record", "--upstream", url, "--out", out, "--agent-cmd", self.agent_cmd,
                            "--prompt", SCENARIO["prompt"])
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)

    def records_and_replays(self):
        out = os.path.join(self.work, "rec.json")
        rc, text = self.record(out)
        print(text)
        assert rc == 0, f"hiccup record exited {rc}"
        with open(out) as f:
            raw = f.read()
        assert SECRET not in raw, "the API key reached the recording"
        rec = json.loads(raw)
        print(json.dumps(rec, indent=1))
        assert rec["provider"] == "gemini" and rec["prompt"] == SCENARIO["prompt"], rec
        attempts = rec["turns"][0]["attempts"]
        assert attempts[0]["status"] == 503, attempts
        assert attempts[1]["fault"] == {"kind": "cut", "after_event": 1, "bytes": 9}, attempts
        assert "fault" not in attempts[2], attempts
        assert rec["turns"][1]["attempts"][0]["events"] == [{"text": "Recorded."}, {"finish": "stop"}], rec
        rc, text = self.run("lint", out)
        print(text)
        assert rc == 0, f"hiccup lint exited {rc}"
        for path in (self.scenario, out):
            rc, text = self.run("run", path, "--agent-cmd", self.agent_cmd, "--report-dir",
                                os.path.join(self.work, "reports-" + os.path.basename(path)))
            print(text)
            assert rc == 0, f"hiccup run {path} exited {rc}"

    def stop_ends_agent(self):
        # The agent records its session, then hangs; the user's Ctrl-C (SIGINT to hiccup only: the
        # agent has a process group of its own) ends it and the session is written.
        done = os.path.join(self.work, "agent-done")
        out = os.path.join(self.work, "rec.json")
        serve, url = self.serve()
        try:
            rec = subprocess.Popen([self.hiccup, "record", "--upstream", url, "--out", out, "--agent-cmd",
                                    f"{self.agent_cmd}; touch {done}; sleep 300", "--prompt", SCENARIO["prompt"]],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.work)
            for _ in range(600):  # the agent's session, at most 60 s
                if os.path.exists(done) or rec.poll() is not None:
                    break
                time.sleep(0.1)
            assert os.path.exists(done), "the agent did not finish its session"
            rec.send_signal(signal.SIGINT)
            text, _ = rec.communicate(timeout=30)  # hung before: the agent's 600 s timeout
            print(text)
            assert rec.returncode == 0, f"hiccup record exited {rec.returncode}"
            assert "stopping: ending the agent" in text, text
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
        with open(out) as f:
            assert json.load(f)["turns"], "nothing recorded"

    def unmatched_replay_fails(self):
        out = os.path.join(self.work, "rec.json")
        rc, text = self.record(out)
        assert rc == 0, text
        # At replay the agent departs from the recording: after its last turn it asks for one
        # more (a history with two model turns), which no recorded turn answers.
        departing = os.path.join(self.work, "departing.py")
        with open(departing, "w") as f:
            f.write(DEPARTING.format(agent=self.agent))
        rc, text = self.run("run", out, "--agent-cmd", f"{sys.executable} {departing}", "--report-dir",
                            os.path.join(self.work, "reports-departing"))
        print(text)
        assert rc == 1, f"expected exit 1, got {rc}"
        assert "turn 2 is past the script's last turn (2 turns): no /turns/2 to play" in text, text
        assert "request 4" in text, text

    def proxy_cut(self):
        """`hiccup proxy` applies a cut after event 1 to the live answers of `hiccup serve` playing
        the same scenario without it: the agent retries and completes, the call runs once, as
        `hiccup run --agent-cmd` judges the faulted scenario under serve (PASS)."""
        call = {"call": {"name": "run_shell_command", "args": {"command": "echo run >> ledger.txt"}}}
        faulted = {"schema": 1, "name": "proxy-cut", "provider": "gemini", "prompt": "Run it.",
                   "turns": [{"attempts": [{"events": [call, {"finish": "stop"}], "fault": {"kind": "cut", "after_event": 1, "bytes": 9}},
                                           {"events": [call, {"finish": "stop"}]}]},
                             {"attempts": [{"events": [{"text": "Done."}, {"finish": "stop"}]}]}],
                   "expect": {"outcome": "completed", "final_text": "Done.", "executions": [{"name": "run_shell_command", "count": 1}]}}
        live = json.loads(json.dumps(faulted))
        live["name"] = "proxy-live"
        live["turns"][0]["attempts"] = live["turns"][0]["attempts"][1:]
        paths = {}
        for s in (faulted, live):
            paths[s["name"]] = os.path.join(self.work, s["name"] + ".json")
            with open(paths[s["name"]], "w") as f:
                json.dump(s, f)
        serve_journal = os.path.join(self.work, "serve-journal.json")
        serve = subprocess.Popen([self.hiccup, "serve", paths["proxy-live"], "--journal", serve_journal],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().strip()
        journal = os.path.join(self.work, "proxy-journal.jsonl")
        proxy = subprocess.Popen([self.hiccup, "proxy", "--upstream", url, paths["proxy-cut"], "--journal", journal],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proxy_url = proxy.stdout.readline().strip()
        try:
            agent = subprocess.run([sys.executable, os.path.join(self.source, "harness/agents/testdata/fake_agent.py")],
                                   env=dict(os.environ, HICCUP_BASE_URL=proxy_url, HICCUP_PROMPT="Run it."),
                                   cwd=self.work, stdout=subprocess.PIPE, text=True, timeout=60)
        finally:
            proxy.send_signal(signal.SIGINT)
            rc = proxy.wait(timeout=30)
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
        print(agent.stdout)
        assert rc == 0, f"hiccup proxy exited {rc}"
        with open(journal) as f:
            entries = [json.loads(line) for line in f]
        print(entries)
        assert [e["played"] for e in entries] == ["live+fault", "live", "live"], entries
        assert entries[0]["fault"] == "cut after 1 event(s)", entries
        # The proxy counts requests as serve's journal does (from 0): the upstream's entries for
        # the same three requests carry the same numbers (the proxy counted from 1).
        with open(serve_journal) as f:
            upstream = json.load(f)
        assert [e["index"] for e in upstream] == [0, 1, 2], upstream
        assert [e["request"] for e in entries] == [e["index"] for e in upstream], entries
        assert agent.returncode == 0 and agent.stdout.strip() == "Done.", agent.stdout
        with open(os.path.join(self.work, "ledger.txt")) as f:
            assert f.read() == "run\n", "the call ran more or less than once"
        # Under serve, through `hiccup run`, the call writes the harness's ledger instead.
        judged = json.loads(json.dumps(faulted).replace("echo run >> ledger.txt", "{{ledger}}"))
        with open(paths["proxy-cut"], "w") as f:
            json.dump(judged, f)
        rc, text = self.run("run", paths["proxy-cut"], "--agent-cmd",
                            f"{sys.executable} {os.path.join(self.source, 'harness/agents/testdata/fake_agent.py')}",
                            "--report-dir", os.path.join(self.work, "reports-proxy"))
        print(text)
        assert rc == 0 and "PASS proxy-cut" in text, text

    def oversize(self):
        """A session whose recording is over the 16 MiB a scenario file may hold: written anyway (the
        session is not lost), with an error that names its size and the limit, exit 3, and lint
        refuses the file as the message says."""
        big = "x" * 6_000_000
        scenario = {"schema": 1, "name": "big", "provider": "gemini", "prompt": "Say it.",
                    "turns": [{"attempts": [{"events": [{"text": big}, {"finish": "stop"}]}]}]}
        path = os.path.join(self.work, "big.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        # Three requests for turn 0 (the attempt repeats): three 6 MB answers recorded, 18 MB.
        client = os.path.join(self.work, "three.py")
        with open(client, "w") as f:
            f.write("import http.client, json, os, urllib.parse\n"
                    "base = urllib.parse.urlparse(os.environ['HICCUP_BASE_URL'])\n"
                    "body = json.dumps({'contents': [{'role': 'user', 'parts': [{'text': 'Say it.'}]}]})\n"
                    "for _ in range(3):\n"
                    "    c = http.client.HTTPConnection(base.hostname, base.port, timeout=60)\n"
                    "    c.request('POST', '/v1beta/models/gemini-2.5-flash:generateContent', body,\n"
                    "              {'Content-Type': 'application/json'})\n"
                    "    assert c.getresponse().read()\n")
        serve = subprocess.Popen([self.hiccup, "serve", path, "--port", "0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().strip()
        out = os.path.join(self.work, "big-rec.json")
        try:
            rc, text = self.run("record", "--upstream", url, "--out", out, "--agent-cmd", f"{sys.executable} {client}")
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
        print(text[-2000:])
        size = os.path.getsize(out)  # written: the session is not lost
        assert size > 16 << 20, size
        assert rc == 3, f"hiccup record exited {rc}, expected 3"
        assert f"the recording is {size} bytes, over the 16777216 bytes (16 MiB) a scenario file may hold: written anyway" \
            in text, text[-2000:]
        rc, text = self.run("lint", out)
        assert rc == 3 and "scenario files are limited to 16777216 bytes" in text, text[-2000:]
        rc, text = self.run("record", "--help")
        assert "over 16 MiB" in text, text
        for left in (out, path):  # 24 MB the build folder need not keep
            os.remove(left)

    def usage(self):
        rc, text = self.run("record", "--help")
        assert rc == 0 and "usage: hiccup record" in text and "docs/RECORDING.md" in text, text
        rc, text = self.run("record", "--upstream", "ftp://example.com")
        print(text)
        assert rc == 2 and "expected http://HOST" in text, text
        rc, text = self.run("record")
        assert rc == 2 and "--upstream URL is required" in text, text
        # An --out that cannot be written is a usage error before the proxy starts (it would
        # otherwise run the whole session and lose it): a missing folder, and a folder that exists
        # but takes no files even for root (/proc).
        for bad in ("/nonexistent-dir/x.json", "/proc/x.json"):
            rc, text = self.run("record", "--upstream", "http://127.0.0.1:9", "--out", bad, timeout=10)
            print(text)
            assert rc == 2 and f"--out {bad}: cannot write the recording" in text, text
            assert "127.0.0.1" not in text.split("\n")[0], text  # no proxy address printed
        # An agent that sends nothing: nothing recorded, nothing written, exit 1.
        out = os.path.join(self.work, "empty.json")
        rc, text = self.run("record", "--upstream", "http://127.0.0.1:9", "--out", out, "--agent-cmd", "true")
        print(text)
        assert rc == 1 and "no model request was recorded" in text and not os.path.exists(out), text


def main():
    a = parse_args(fresh=True)
    return run_check(Checker(a.hiccup, a.source, a.work), a.check, prefix="")


if __name__ == "__main__":
    sys.exit(main())
