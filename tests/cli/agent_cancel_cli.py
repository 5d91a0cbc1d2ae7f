#!/usr/bin/env python3
"""`hiccup run --agent RECIPE.json` with the user's cancel (issue 36), no npm install: a recipe of
the test's own around harness/agents/testdata/cancel_agent.py (a Gemini agent that takes SIGINT and
resumes its saved conversation). One check per ctest entry:

    agent_cancel_cli.py --hiccup build/hiccup --source SRC --work DIR CHECK

passes: SIGINT at the held event, the resume command with the next prompt; PASS, exit 0, and the
    report keeps each prompt's output and the cancel.
retry-caught: an agent whose pending request fires after the cancel fails no-request-after-cancel
    (exit 1).
no-cancel-not-playable: a recipe without `cancel` cannot play the scenario: exit 3, naming the
    recipe field.
no-cancel-skips-in-folder: given a folder, a recipe without `cancel` skips the scenario with the
    interrupt (a note naming why) and plays the others: PASS, exit 0.
"""
import json
import os
import subprocess
import sys
from cli_common import parse_args

SCENARIO = {
    "schema": 1, "name": "cancel-fake-while-text", "prompt": "Tell a story.",
    "session": [{"prompt": "Just say bye."}],
    "interrupt": {"turn": 0, "attempt": 0, "after_event": 0},
    "turns": [{"attempts": [
        {"events": [{"text": "Once upon"}, {"text": " a time"}, {"finish": "stop"}]},
        {"events": [{"text": "Bye."}, {"finish": "stop"}]}]}],
    "expect": {"outcome": "completed", "final_text": "Bye.", "executions": []},
}
PLAIN = {
    "schema": 1, "name": "cancel-fake-plain", "prompt": "Say hello.",
    "turns": [{"attempts": [{"events": [{"text": "Hello."}, {"finish": "stop"}]}]}],
    "expect": {"outcome": "completed", "executions": []},
}


def main():
    a = parse_args(fresh=True)
    agent = os.path.join(a.source, "harness/agents/testdata/cancel_agent.py")
    recipe = {"name": "cancel-fake", "provider": "gemini", "argv": [sys.executable, agent], "timeout_s": 30,
              "env": {"CANCEL_AGENT_MODE": "retry" if a.check == "retry-caught" else "correct"}}
    if not a.check.startswith("no-cancel-"):
        recipe["cancel"] = {"method": "sigint", "resume_argv": [sys.executable, agent, "resume"], "exit_wait_s": 5,
                            "why": "the test agent exits 130 on SIGINT and resumes its saved conversation"}
    recipe_path = os.path.join(a.work, "cancel-fake.json")
    scenario_path = os.path.join(a.work, "cancel-fake-while-text.json")
    with open(recipe_path, "w") as f:
        json.dump(recipe, f)
    with open(scenario_path, "w") as f:
        json.dump(SCENARIO, f)
    target = scenario_path
    if a.check == "no-cancel-skips-in-folder":
        target = os.path.join(a.work, "folder")
        os.makedirs(target)
        for doc in (SCENARIO, PLAIN):
            with open(os.path.join(target, doc["name"] + ".json"), "w") as f:
                json.dump(doc, f)
    report = os.path.join(a.work, "report")
    p = subprocess.run([a.hiccup, "run", "--agent", recipe_path, target, "--report-dir", report],
                       capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    print(out)
    failures = []
    if a.check == "passes":
        if p.returncode != 0 or "PASS cancel-fake-while-text" not in out:
            failures.append(f"expected PASS and exit 0, got exit {p.returncode}")
        case_dir = os.path.join(report, "agents", "cancel-fake", "cancel-fake-while-text")
        for f in ("stdout", "stdout.1"):
            if not os.path.exists(os.path.join(case_dir, f)):
                failures.append(f"the report keeps no {f} in {case_dir}")
        if os.path.exists(os.path.join(case_dir, "stdout.1")) and "Bye." not in open(os.path.join(case_dir, "stdout.1")).read():
            failures.append("the resumed prompt's output does not show Bye.")
        summary = json.load(open(os.path.join(report, "summary.json")))
        text = json.dumps(summary)
        if '"cancel"' not in text or '"SIGINT"' not in text:
            failures.append("summary.json does not say which prompt was cancelled")
    elif a.check == "retry-caught":
        if p.returncode != 1 or "no-request-after-cancel" not in out:
            failures.append(f"expected no-request-after-cancel and exit 1, got exit {p.returncode}")
    elif a.check == "no-cancel-not-playable":
        if p.returncode != 3 or "/interrupt: agent cancel-fake's recipe declares no cancel method" not in out:
            failures.append(f"expected exit 3 naming the missing cancel, got exit {p.returncode}")
    elif a.check == "no-cancel-skips-in-folder":
        skipped = os.path.join(target, "cancel-fake-while-text.json")
        note = f"note: {skipped}: skipped, not playable by agent cancel-fake: "
        if p.returncode != 0 or "PASS cancel-fake-plain" not in out:
            failures.append(f"expected the other scenario to PASS and exit 0, got exit {p.returncode}")
        if note not in out or "/interrupt: agent cancel-fake's recipe declares no cancel method" not in out:
            failures.append("expected a note skipping the interrupt scenario and naming the missing cancel")
        if "cancel-fake-while-text" in p.stdout:
            failures.append("the skipped scenario appears in the run's report lines")
    else:
        failures.append("unknown check " + a.check)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
