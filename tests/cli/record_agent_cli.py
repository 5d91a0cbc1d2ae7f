#!/usr/bin/env python3
"""`hiccup record --agent NAME`: the agent launched from its recipe, as `hiccup run --agent` launches
it, pointed at the recording proxy; the upstream is `hiccup serve` playing a scenario. One check per
ctest entry:

    record_agent_cli.py --hiccup build/hiccup --source SRC --work DIR CHECK

recipe (label cli, no npm): a recipe of the test's own (a .json path) whose binary wraps
    harness/agents/testdata/fake_agent.py: the agent gets the recipe's settings file in a scratch
    HOME, hiccup's value of the variable the recipe sets to the placeholder key, hiccup's working
    directory; the recording lints clean, is tagged with the recipe's name, holds no key, and
    replays under `hiccup run --agent RECIPE`, also with a fault added (a disconnect right after
    the call of turn 0's first attempt), which the journal shows and the verdict judges.
usage (label cli): --agent without --prompt, with --agent-cmd, an unknown recipe, and a recipe
    whose binary is missing (exit 3 with the message `hiccup run --agent` gives, naming the
    install command).
AGENT, e.g. codex (label agents; the real CLI from scripts/install_agents.sh): a session of
    AGENT recorded over `hiccup serve` playing scenarios/agents/AGENT/AGENT-tool-round-trip.json
    lints clean and replays under `hiccup run --agent AGENT` (PASS); with AGENT-fin-after-call's
    fault added (a disconnect after the call) it gets the verdict `hiccup matrix` pins for the
    bundled AGENT-fin-after-call (harness/agents/known-failures.json; for codex none, so PASS),
    the disconnect in its journal. ctest runs codex (the quickest: about 15 s); claude-code,
    gemini-cli, qwen-code and opencode run the same way by hand.
"""
import glob
import json
import os
import signal
import subprocess
from cli_common import CheckerBase, parse_args

SECRET = "sk-hiccup-recipe-secret-7373"
KEY_VARIABLE = "FAKE_RECIPE_API_KEY"

SCENARIO = {
    "schema": 1,
    "name": "record-agent-upstream",
    "provider": "gemini",
    "prompt": "Record one entry in the ledger.",
    "turns": [
        {"attempts": [{"events": [{"call": {"name": "run_shell_command", "args": {"command": "{{ledger}}"}}},
                                  {"finish": "stop"}]}]},
        {"attempts": [{"events": [{"text": "Recorded."}, {"finish": "stop"}]}]},
    ],
}

# The recipe's binary: notes what it was given, sends the key the way a real client does, then is
# the fake Gemini agent.
WRAPPER = """#!/usr/bin/env python3
import http.client, json, os, runpy
home = os.environ["HOME"]
with open(os.path.join(home, ".fake", "settings.json")) as f:
    settings = json.load(f)
with open("seen.json", "w") as f:
    json.dump({{"cwd": os.getcwd(), "home": home, "key": os.environ.get({var!r}), "settings": settings,
               "argv_prompt": os.environ.get("FAKE_PROMPT_ARG")}}, f)
orig = http.client.HTTPConnection.request
def request(self, method, url, body=None, headers={{}}, **kw):
    return orig(self, method, url, body, dict(headers, **{{"x-goog-api-key": os.environ[{var!r}]}}), **kw)
http.client.HTTPConnection.request = request
runpy.run_path({fake!r}, run_name="__main__")
"""


def recipe(binary, name="fake-recipe"):
    return {
        "name": name,
        "version": "0.0.1",
        "description": "the fake Gemini agent as a recipe (tests/cli/record_agent_cli.py)",
        "provider": "gemini",
        "install": "scripts/install_agents.sh " + name,
        "binary": binary,
        "argv": ["{binary}", "{prompt}"],
        "model": "gemini-2.5-flash",
        "env": {KEY_VARIABLE: "hiccup-not-a-key", "FAKE_PROMPT_ARG": "{prompt}"},
        "home_files": {".fake/settings.json": {"base_url": "{base_url}", "model": "{model}"}},
        "tool": {"name": "run_shell_command", "command_arg": "command"},
        "timeout_s": 60,
    }


def add_fault(scenario, delay_ms=200):
    """A disconnect (FIN, `delay_ms` later) right after the first call of turn 0's first attempt, as
    a new first attempt: the recorded attempt becomes the retry (the shape of the bundled
    AGENT-fin-after-call scenarios)."""
    faulted = json.loads(json.dumps(scenario))
    first = faulted["turns"][0]["attempts"][0]
    k = next(i for i, e in enumerate(first["events"]) if "call" in e)
    cut = {"events": first["events"][:k + 1],
           "fault": {"kind": "disconnect", "after_event": k + 1, "delay_ms": delay_ms}}
    faulted["turns"][0]["attempts"].insert(0, cut)
    faulted["name"] = scenario["name"] + "-fin-after-call"
    return faulted


class Checker(CheckerBase):

    def write_json(self, name, value):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            json.dump(value, f, indent=2)
        return path

    def run(self, *args, timeout=300, env=None):
        p = subprocess.run([self.hiccup, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, cwd=self.work, env=env)
        print("$ hiccup " + " ".join(args) + f"  → exit {p.returncode}\n{p.stdout}")
        return p.returncode, p.stdout

    def record(self, scenario_path, out, agent, prompt, env=None):
        """`hiccup record --agent` over `hiccup serve SCENARIO`; returns (exit, output, proxy URL)."""
        serve = subprocess.Popen([self.hiccup, "serve", scenario_path, "--port", "0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().strip()
        try:
            p = subprocess.run([self.hiccup, "record", "--upstream", url, "--out", out, "--agent", agent,
                                "--prompt", prompt, "--agent-timeout", "120"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                               cwd=self.work, env=env)
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=30)
        print(f"$ hiccup record --agent {agent}  → exit {p.returncode}\n{p.stdout}{p.stderr}")
        return p.returncode, p.stdout + p.stderr, p.stdout.splitlines()[0] if p.stdout else ""

    def verdict(self, scenario_path, agent, report):
        """`hiccup run SCENARIO --agent AGENT`: (exit, the case's summary entry, its journal)."""
        rc, text = self.run("run", scenario_path, "--agent", agent, "--report-dir", os.path.join(self.work, report))
        with open(os.path.join(self.work, report, "summary.json")) as f:
            summary = json.load(f)
        cases = summary["cases"]
        assert len(cases) == 1, summary
        journals = glob.glob(os.path.join(self.work, report, "agents", "*", "*", "journal.json"))
        assert len(journals) == 1, journals
        with open(journals[0]) as f:
            journal = json.load(f)
        return rc, cases[0], journal

    def lint(self, path):
        rc, text = self.run("lint", path)
        assert rc == 0, f"hiccup lint {path} exited {rc}"

    def sizes(self, path):
        with open(path) as f:
            rec = json.load(f)
        per_turn = [len(json.dumps(t, indent=2)) for t in rec["turns"]]
        print(f"recording {os.path.basename(path)}: {os.path.getsize(path)} bytes, {len(per_turn)} turn(s), "
              f"bytes per turn (JSON, indent 2): {per_turn}")
        return rec

    def recipe_check(self):
        wrapper = os.path.join(self.work, "fake-recipe-agent.py")
        with open(wrapper, "w") as f:
            f.write(WRAPPER.format(var=KEY_VARIABLE,
                                   fake=os.path.join(self.source, "harness/agents/testdata/fake_agent.py")))
        os.chmod(wrapper, 0o755)
        recipe_path = self.write_json("fake-recipe.json", recipe(wrapper))
        upstream = self.write_json("upstream.json", SCENARIO)
        out = os.path.join(self.work, "rec.json")
        env = dict(os.environ, **{KEY_VARIABLE: SECRET})
        rc, text, url = self.record(upstream, out, recipe_path, SCENARIO["prompt"], env=env)
        assert rc == 0, f"hiccup record exited {rc}"
        with open(os.path.join(self.work, "seen.json")) as f:
            seen = json.load(f)
        print("the agent saw:", seen)
        assert seen["key"] == SECRET, "the placeholder key did not take hiccup's value"
        assert os.path.realpath(seen["cwd"]) == os.path.realpath(self.work), seen
        assert seen["settings"] == {"base_url": url, "model": "gemini-2.5-flash"}, (seen, url)
        assert seen["argv_prompt"] == SCENARIO["prompt"], seen
        assert not os.path.exists(seen["home"]), "the scratch HOME was left behind"
        assert os.path.exists(out + ".agent-stdout.log") and os.path.exists(out + ".agent-stderr.log")
        with open(out) as f:
            raw = f.read()
        assert SECRET not in raw, "the API key reached the recording"
        rec = self.sizes(out)
        assert rec["tags"] == ["recorded", "fake-recipe"], rec["tags"]
        assert rec["prompt"] == SCENARIO["prompt"], rec["prompt"]
        assert [len(t["attempts"]) for t in rec["turns"]] == [1, 1], rec
        self.lint(out)

        rc, case, journal = self.verdict(out, recipe_path, "replay")
        assert rc == 0 and case["passed"], case
        faulted = self.write_json("rec-fin-after-call.json", add_fault(rec))
        self.lint(faulted)
        rc, case, journal = self.verdict(faulted, recipe_path, "replay-faulted")
        print("journal:", json.dumps(journal)[:2000])
        assert rc == 0 and case["passed"], case
        models = [e for e in journal if e.get("turn") is not None]
        assert [(e["turn"], e["attempt"]) for e in models][:3] == [(0, 0), (0, 1), (1, 0)], models
        assert "disconnect" in json.dumps(models[0]), models[0]
        assert case["ledger"] == ["hiccup:t0:a1:c0"], case["ledger"]

        # A broken agent is judged: the fake agent's duplicate mode keeps the cut attempt's call.
        # (A recipe's agent gets the recipe's environment, not hiccup's: a variant of the recipe.)
        duplicate = recipe(wrapper)
        duplicate["env"]["FAKE_AGENT_MODE"] = "duplicate"
        rc, text = self.run("run", faulted, "--agent", self.write_json("fake-recipe-duplicate.json", duplicate),
                            "--report-dir", os.path.join(self.work, "replay-duplicate"))
        assert rc == 1 and "at-most-once" in text, "the duplicate execution was not judged"

    def usage(self):
        upstream = "http://127.0.0.1:9"
        rc, text = self.run("record", "--upstream", upstream, "--agent", "qwen-code")
        assert rc == 2 and "--agent NAME needs --prompt TEXT" in text, text
        rc, text = self.run("record", "--upstream", upstream, "--agent", "qwen-code", "--agent-cmd", "true",
                            "--prompt", "x")
        assert rc == 2 and "give --agent or --agent-cmd, not both" in text, text
        rc, text = self.run("record", "--upstream", upstream, "--agent", "no-such-agent", "--prompt", "x")
        assert rc == 3 and "no-such-agent" in text and "qwen-code" in text, text
        missing = self.write_json("missing.json", recipe(os.path.join(self.work, "not-there", "agent"), "missing"))
        out = os.path.join(self.work, "never.json")
        rc, text = self.run("record", "--upstream", upstream, "--out", out, "--agent", missing, "--prompt", "x")
        needle = "agent missing is not installed: " + os.path.join(self.work, "not-there", "agent") + \
            " is missing or not executable; run scripts/install_agents.sh missing"
        assert rc == 3 and needle in text and not os.path.exists(out), text
        rc, run_text = self.run("run", self.write_json("s.json", SCENARIO), "--agent", missing, "--report-dir",
                                os.path.join(self.work, "reports-missing"))
        assert needle in run_text, "`hiccup run --agent` words it differently:\n" + run_text
        rc, text = self.run("record", "--help")
        assert rc == 0 and "--agent NAME" in text, text

    def real_cli(self, agent):
        """A session of the real CLI `agent` recorded over `hiccup serve` playing its bundled
        AGENT-tool-round-trip, replayed, then replayed with AGENT-fin-after-call's fault added."""
        bundled = os.path.join(self.source, "scenarios/agents", agent)
        upstream = os.path.join(bundled, agent + "-tool-round-trip.json")
        with open(upstream) as f:
            prompt = json.load(f)["prompt"]
        out = os.path.join(self.work, agent + "-session.json")
        rc, text, _ = self.record(upstream, out, agent, prompt)
        assert rc == 0, f"hiccup record exited {rc}"
        rec = self.sizes(out)
        assert agent in rec["tags"] and rec["prompt"] == prompt, rec
        assert len(rec["turns"]) == 2, rec
        self.lint(out)
        rc, case, _ = self.verdict(out, agent, "replay")
        assert rc == 0 and case["passed"], case
        with open(os.path.join(bundled, agent + "-fin-after-call.json")) as f:
            fault = json.load(f)["turns"][0]["attempts"][0]["fault"]
        faulted = self.write_json(agent + "-session-fin-after-call.json", add_fault(rec, fault["delay_ms"]))
        self.lint(faulted)
        rc, case, journal = self.verdict(faulted, agent, "replay-faulted")
        models = [e for e in journal if e.get("turn") is not None]
        assert models[0]["fault"] == "disconnect" and models[0]["delivered_calls"], models[0]
        # What `hiccup matrix` holds the agent to on the equivalent bundled scenario: its pinned
        # known failure (the exact invariants violated, or one of its also_violates sets), or none
        # (PASS). A recording has no `expect`: the pin's expect.* invariants cannot show, and the
        # outcome is judged against the reference runtime's alone (outcome-agreement), so both
        # are left out of the comparison.
        with open(os.path.join(self.source, "harness/agents/known-failures.json")) as f:
            pins = json.load(f)["agents"][agent]["known_failures"]
        pin = pins.get(agent + "-fin-after-call", {})

        def comparable(names):
            return sorted(n for n in names if not n.startswith("expect.") and n != "outcome-agreement")

        allowed = [comparable(pin.get("violates", []))] + [comparable(a) for a in pin.get("also_violates", [])]
        if pin.get("flaky"):
            allowed.append([])  # the matrix accepts a pass of a flaky pin too
        got = violated(case)
        print(f"replayed recording with the fault: {got or 'PASS'}; matrix pin for {agent}-fin-after-call: "
              f"{pin.get('violates') or 'PASS'}")
        assert comparable(got) in allowed, (got, allowed, case)
        if not pin:
            assert rc == 0 and case["passed"], case


def violated(case):
    """The invariants a case violated, as `hiccup matrix` compares them with its pins (policy
    differences included)."""
    names = {v["invariant"] for v in case.get("violations", [])}
    names |= {v["invariant"] for v in case.get("extra", case).get("differences", [])}
    return sorted(names)


def main():
    a = parse_args(fresh=True)
    c = Checker(a.hiccup, a.source, a.work)
    if a.check in ("recipe", "usage"):
        {"recipe": c.recipe_check, "usage": c.usage}[a.check]()
    else:
        c.real_cli(a.check)
    print("ok")


if __name__ == "__main__":
    main()
