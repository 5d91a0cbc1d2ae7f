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
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SCENARIO = {
    "schema": 1, "name": "cancel-fake-while-text", "prompt": "Tell a story.",
    "session": [{"prompt": "Just say bye."}],
    "interrupt": {"turn": 0, "attempt": 0, "after_event": 0},
    "turns": [{"attempts": [
        {"events": [{"text": "Once upon"}, {"text": " a time"}, {"finish": "stop"}]},
        {"events": [{"text": "Bye."}, {"finish": "stop"}]}]}],
    "expect": {"outcome": "completed", "final_text": "Bye.", "executions": []},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("check")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    agent = os.path.join(a.source, "harness/agents/testdata/cancel_agent.py")
    recipe = {"name": "cancel-fake", "provider": "gemini", "argv": [sys.executable, agent], "timeout_s": 30,
              "env": {"CANCEL_AGENT_MODE": "retry" if a.check == "retry-caught" else "correct"}}
    if a.check != "no-cancel-not-playable":
        recipe["cancel"] = {"method": "sigint", "resume_argv": [sys.executable, agent, "resume"], "exit_wait_s": 5,
                            "why": "the test agent exits 130 on SIGINT and resumes its saved conversation"}
    recipe_path = os.path.join(a.work, "cancel-fake.json")
    scenario_path = os.path.join(a.work, "cancel-fake-while-text.json")
    with open(recipe_path, "w") as f:
        json.dump(recipe, f)
    with open(scenario_path, "w") as f:
        json.dump(SCENARIO, f)
    report = os.path.join(a.work, "report")
    p = subprocess.run([a.hiccup, "run", "--agent", recipe_path, scenario_path, "--report-dir", report],
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
    else:
        failures.append("unknown check " + a.check)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
