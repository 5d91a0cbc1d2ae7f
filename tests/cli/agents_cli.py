#!/usr/bin/env python3
"""`hiccup run --agent` as a user meets it, with a stand-in for gemini-cli (a wrapper around
harness/agents/testdata/fake_agent.py that prints gemini-cli's stream-json), so no npm install is
needed. One check per ctest entry:

    agents_cli.py --hiccup build/hiccup --source SRC --work DIR CHECK

agent-cache: the binary finds a pinned agent in $HICCUP_AGENT_CACHE, as scripts/install_agents.sh
    installs it there, and in SRC/.cache/npm/ when the variable is unset or empty; an agent missing
    from the cache is an error naming the path looked at and the install command for that cache.
run-skips-other-agents: a scenario named or tagged for another agent is skipped with a note (as
    `hiccup matrix` does), a scenario for this agent or for none is played, and a run left with
    nothing to play is an error.
replay-lines-run: the replay lines of `run --agent` and `matrix` name the binary and the scenario by
    absolute paths and run when pasted in another folder.
"""
import json
import os
import shutil
import subprocess
import sys
from cli_common import CheckerBase, parse_args, run_check

BINARY = "gemini-cli-0.61.0/node_modules/.bin/gemini"  # the recipe's binary under .cache/npm/

FAKE_GEMINI = """#!/usr/bin/env python3
# A stand-in for gemini-cli: records its argv, runs the fake Gemini agent, prints its text the way
# gemini-cli's stream-json does (the recipe's output.shown_text).
import json, os, subprocess, sys
with open({marker!r}, "a") as m:
    m.write(json.dumps(sys.argv[1:]) + "\\n")
p = subprocess.run([sys.executable, {fake!r}], env=dict(os.environ, FAKE_AGENT_JSONL="1"),
                   stdout=subprocess.PIPE, text=True)
for line in p.stdout.splitlines():
    print(json.dumps({{"type": "message", "role": "assistant", "content": json.loads(line)["text"]}}), flush=True)
sys.exit(p.returncode)
"""


class Checker(CheckerBase):
    def __init__(self, hiccup, source, work):
        super().__init__(hiccup, source, work)
        self.scenario = os.path.join(source, "scenarios/agents/gemini-cli/gemini-cli-tool-round-trip.json")

    def install_fake(self, cache, marker):
        path = os.path.join(cache, BINARY)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fake = os.path.join(self.source, "harness/agents/testdata/fake_agent.py")
        with open(path, "w") as f:
            f.write(FAKE_GEMINI.format(marker=marker, fake=fake))
        os.chmod(path, 0o755)

    def hiccup_run(self, args, expect_rc, env_changes, cwd=None):
        env = dict(os.environ)
        for k, v in env_changes.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        p = subprocess.run([self.hiccup] + args, capture_output=True, text=True, cwd=cwd or self.work,
                           env=env, timeout=300)
        if p.returncode != expect_rc:
            raise AssertionError(f"{env_changes} hiccup {' '.join(args)}: exit {p.returncode}, expected {expect_rc}\n"
                                 f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
        return p

    def runs(self, marker):
        if not os.path.exists(marker):
            return []
        with open(marker) as f:
            return [json.loads(line) for line in f]

    def check_agent_cache(self):
        d = self.dir("cache")
        cache = os.path.join(d, "shared-cache")
        marker = os.path.join(d, "runs.jsonl")
        run = ["run", "--agent", "gemini-cli", self.scenario, "--report-dir", os.path.join(d, "reports")]

        # Nothing installed in the cache: the error names where hiccup looked and how to install there.
        p = self.hiccup_run(run, 1, {"HICCUP_AGENT_CACHE": cache})
        want = (f"agent gemini-cli is not installed: {cache}/{BINARY} is missing or not executable; "
                f"run HICCUP_AGENT_CACHE={cache} scripts/install_agents.sh gemini-cli")
        assert want in p.stdout + p.stderr, f"expected {want!r} in:\n{p.stdout}\n{p.stderr}"

        # Installed there: found, run and judged (a correct agent passes).
        self.install_fake(cache, marker)
        p = self.hiccup_run(run, 0, {"HICCUP_AGENT_CACHE": cache})
        assert "PASS gemini-cli-tool-round-trip" in p.stdout, p.stdout
        assert len(self.runs(marker)) == 1, self.runs(marker)
        assert self.runs(marker)[0][:2] == ["-p", "Record one entry in the ledger."], self.runs(marker)

        # A relative cache is relative to the folder hiccup starts in, as it is for the script.
        p = self.hiccup_run(run, 0, {"HICCUP_AGENT_CACHE": "shared-cache"}, cwd=d)
        assert "PASS gemini-cli-tool-round-trip" in p.stdout, p.stdout
        assert len(self.runs(marker)) == 2

        # Unset or empty: the source tree's .cache/npm/ (HICCUP_ROOT stands in for the source tree).
        root = os.path.join(d, "root")
        os.makedirs(root)
        os.symlink(os.path.join(self.source, "harness"), os.path.join(root, "harness"))
        for value in (None, ""):
            p = self.hiccup_run(run, 1, {"HICCUP_ROOT": root, "HICCUP_AGENT_CACHE": value})
            want = (f"agent gemini-cli is not installed: {root}/.cache/npm/{BINARY} is missing or not executable; "
                    f"run scripts/install_agents.sh gemini-cli")
            assert want in p.stdout + p.stderr, f"HICCUP_AGENT_CACHE={value!r}: expected {want!r} in:\n{p.stdout}"
        self.install_fake(os.path.join(root, ".cache/npm"), marker)
        p = self.hiccup_run(run, 0, {"HICCUP_ROOT": root, "HICCUP_AGENT_CACHE": None})
        assert "PASS gemini-cli-tool-round-trip" in p.stdout, p.stdout
        assert len(self.runs(marker)) == 3

    def check_run_skips_other_agents(self):
        d = self.dir("skip")
        cache = os.path.join(d, "cache")
        marker = os.path.join(d, "runs.jsonl")
        self.install_fake(cache, marker)
        with open(self.scenario) as f:
            base = json.load(f)
        folder = os.path.join(d, "scenarios")
        os.makedirs(folder)

        def write(name, tags):
            s = dict(base, name=name, tags=tags)
            with open(os.path.join(folder, name + ".json"), "w") as f:
                json.dump(s, f)

        # All four speak gemini with gemini-cli's shell tool: only ownership tells them apart.
        write("qwen-code-round-trip", ["agents"])      # named for qwen-code
        write("tagged-round-trip", ["agents", "codex"])  # tagged for codex
        write("gemini-cli-round-trip", ["agents"])     # named for gemini-cli
        write("plain-round-trip", ["agents"])          # for no agent in particular
        p = self.hiccup_run(["run", "--agent", "gemini-cli", folder, "--report-dir", os.path.join(d, "reports")], 0,
                            {"HICCUP_AGENT_CACHE": cache})
        played = sorted(line.split()[1] for line in p.stdout.splitlines() if line.startswith(("PASS ", "FAIL ")))
        assert played == ["gemini-cli-round-trip", "plain-round-trip"], p.stdout
        assert len(self.runs(marker)) == 2, self.runs(marker)
        for name, why in (("qwen-code-round-trip", "written for agent qwen-code (named qwen-code-…), not for gemini-cli"),
                          ("tagged-round-trip", "written for agent codex (tagged codex), not for gemini-cli")):
            note = f"note: {os.path.join(folder, name)}.json: skipped, {why}"
            assert note in p.stderr, f"expected {note!r} in stderr:\n{p.stderr}"
        assert p.stdout.rstrip().endswith("2 passed, 0 failed"), p.stdout

        # --agent-cmd is no agent of its own: it plays what it is given.
        p = self.hiccup_run(["run", "--agent-cmd", "true", os.path.join(folder, "qwen-code-round-trip.json"),
                             "--report-dir", os.path.join(d, "reports-cmd")], 1, {})
        assert "FAIL qwen-code-round-trip" in p.stdout and "skipped" not in p.stderr, p.stdout + p.stderr

        # Nothing left to play is an error, not a green run of nothing.
        p = self.hiccup_run(["run", "--agent", "gemini-cli", os.path.join(folder, "qwen-code-round-trip.json"),
                             "--report-dir", os.path.join(d, "reports-none")], 3, {"HICCUP_AGENT_CACHE": cache})
        assert "error: --agent gemini-cli: no scenario to play" in p.stderr, p.stderr
        assert len(self.runs(marker)) == 2

    def check_replay_lines_run(self):
        """The replay lines `run --agent` and `matrix` write (summary.json, summary.md) name the
        running binary and the scenario by absolute paths, so they run when pasted in another
        folder (they said `build/hiccup run --agent NAME scenarios/…`, found only from the source
        tree's root), as explore's do (cli.explore-replay-line-runs)."""
        d = self.dir("replay")
        cache = os.path.join(d, "cache")
        marker = os.path.join(d, "runs.jsonl")
        self.install_fake(cache, marker)
        # The scenario by a path relative to the folder hiccup runs in.
        os.makedirs(os.path.join(d, "mine"))
        shutil.copy(self.scenario, os.path.join(d, "mine", "gemini-cli-tool-round-trip.json"))
        rel = os.path.join("mine", "gemini-cli-tool-round-trip.json")
        absolute = os.path.join(d, rel)
        binary = os.path.realpath(self.hiccup)
        env = {"HICCUP_AGENT_CACHE": cache}
        self.hiccup_run(["run", "--agent", "gemini-cli", rel, "--report-dir", "run-reports"], 0, env, cwd=d)
        self.hiccup_run(["matrix", "--agent", "gemini-cli", rel, "--report-dir", "matrix-reports"], 0, env, cwd=d)
        elsewhere = self.dir("replay-elsewhere")
        for reports in ("run-reports", "matrix-reports"):
            with open(os.path.join(d, reports, "summary.json")) as f:
                cases = json.load(f)["cases"]
            assert len(cases) == 1, cases
            replay = cases[0].get("replay", "")
            assert replay == f"{binary} run --agent gemini-cli {absolute}", (reports, replay, binary)
            with open(os.path.join(d, reports, "summary.md")) as f:
                md = f.read()
            # summary.md lists failing cases only; a passing run has no replay line there.
            assert "build/hiccup" not in md, md
            q = subprocess.run(replay, shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, **env))
            # The pasted line ran the same case (a missing binary or file is 127 or 3) and it passed.
            assert q.returncode == 0, f"`{replay}` in {elsewhere}: exit {q.returncode}\n{q.stdout[-2000:]}{q.stderr[-2000:]}"
            assert "PASS gemini-cli-tool-round-trip" in q.stdout, q.stdout
        # --agent-cmd with --provider: the line plays the file in the format the run played it in
        # (it said no --provider, so the file's own format; a newcomer's finding, stop 56).
        self.hiccup_run(["run", "--agent-cmd", "exit 1", "--provider", "openai-chat", rel, "--report-dir", "cmd-reports"],
                        1, env, cwd=d)
        with open(os.path.join(d, "cmd-reports", "summary.json")) as f:
            replay = json.load(f)["cases"][0].get("replay", "")
        assert replay == f"{binary} run --agent-cmd 'exit 1' --provider openai-chat {absolute}", replay


def main():
    a = parse_args()
    return run_check(Checker(a.hiccup, a.source, a.work), a.check)


if __name__ == "__main__":
    sys.exit(main())
