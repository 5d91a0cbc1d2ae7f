#!/usr/bin/env python3
"""A scripted ledger command (issue 35, "Built-in tools too"; SCENARIO-FORMAT.md "Scripted ledger
commands"): a scenario's `tools` entry named like the shell tool makes each execution of the
ledger command slow, failing or hanging, and `hiccup run --agent-cmd` plays it against the fake
agent (harness/agents/testdata/fake_agent.py, no npm). Three turns each run the shell tool once:

- execution 0 has `duration_s` 0.4: the agent's next request comes at least 0.4 s after the answer
  that carried the call, and its function response is the plain "ok";
- execution 1 has `is_error` with a result text: the command exits 1 printing it, and the agent
  sends that text and exit code back;
- execution 2 (and later: the last call repeats) has `hang`: the command never returns, the agent's
  own tool timeout (FAKE_AGENT_TOOL_TIMEOUT_S=1) kills it and says so;

every execution leaves its ledger line, the hung one too (the line is written first). A `tools`
entry with a behaviour only MCP has (`reply_lost`) cannot be played by a shell command: the run is
refused with the entry's pointer (exit 3).

usage: ledger_tool_script_cli.py --hiccup PATH --source DIR --work DIR
"""
import json
import os
import subprocess
import sys
import time
from cli_common import parse_args


def call_turn():
    return {"attempts": [{"events": [{"call": {"name": "run_shell_command", "args": {"command": "{{ledger}}"}}},
                                     {"finish": "stop"}]}]}


SCENARIO = {
    "schema": 1,
    "name": "ledger-tool-script",
    "provider": "gemini",
    "prompt": "Deploy three times.",
    "turns": [call_turn(), call_turn(), call_turn(),
              {"attempts": [{"events": [{"text": "Deployed."}, {"finish": "stop"}]}]}],
    "tools": [{"name": "run_shell_command",
               "calls": [{"duration_s": 0.4}, {"is_error": True, "result": "disk full"}, {"hang": True}]}],
}


def function_response(entry):
    """The function response of the last user content of a journal entry's history."""
    parts = entry["contents"][-1]["parts"]
    return [p["functionResponse"]["response"] for p in parts if "functionResponse" in p][-1]


def main():
    a = parse_args(check=False, fresh=True)
    fake = os.path.join(a.source, "harness/agents/testdata/fake_agent.py")
    path = os.path.join(a.work, SCENARIO["name"] + ".json")
    with open(path, "w") as f:
        json.dump(SCENARIO, f)
    report = os.path.join(a.work, "report")
    started = time.monotonic()
    p = subprocess.run([a.hiccup, "run", path, "--agent-cmd", f"FAKE_AGENT_TOOL_TIMEOUT_S=1 exec {sys.executable} {fake}",
                        "--report-dir", report], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    print(p.stdout, p.stderr)
    out = os.path.join(report, "agents", "agent-cmd", SCENARIO["name"])
    with open(os.path.join(out, "journal.json")) as f:
        journal = json.load(f)
    with open(os.path.join(out, "ledger")) as f:
        ledger = f.read().split()
    # Every execution left its line, the hung one too.
    assert ledger == ["hiccup:t0:a0:c0", "hiccup:t1:a0:c0", "hiccup:t2:a0:c0"], ledger
    assert len(journal) == 4, [e["index"] for e in journal]
    # Execution 0: slow, then the plain result.
    assert function_response(journal[1]) == {"output": "ok"}, journal[1]["contents"]
    waited_ms = journal[1]["arrived_ms"] - journal[0]["answered_ms"]
    assert waited_ms >= 400, f"the 0.4 s command took {waited_ms:.0f} ms"
    # Execution 1: exits 1 printing its result.
    assert function_response(journal[2]) == {"error": "disk full", "exit_code": 1}, journal[2]["contents"]
    # Execution 2: hangs until the agent's tool timeout kills it.
    assert function_response(journal[3]) == {"error": "timed out after 1 s"}, journal[3]["contents"]
    assert journal[3]["arrived_ms"] - journal[2]["answered_ms"] >= 1000
    assert journal[3]["completed"], journal[3]
    assert took < 60, f"the run took {took:.1f} s"

    # What only MCP can do is refused for the ledger command, with the entry's pointer.
    refused = dict(SCENARIO, name="ledger-tool-script-refused")
    refused["tools"] = [{"name": "run_shell_command", "calls": [{"duration_s": 0.1}, {"reply_lost": True}]}]
    refused_path = os.path.join(a.work, refused["name"] + ".json")
    with open(refused_path, "w") as f:
        json.dump(refused, f)
    p = subprocess.run([a.hiccup, "run", refused_path, "--agent-cmd", f"exec {sys.executable} {fake}",
                        "--report-dir", os.path.join(a.work, "refused")], capture_output=True, text=True, timeout=60)
    both = p.stdout + p.stderr
    assert p.returncode == 3, (p.returncode, both)
    assert "/tools/0/calls/1: run_shell_command runs the ledger command" in both, both
    assert "reply_lost" in both, both
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
