"""pytest-hiccup against a real `hiccup serve` (ctest clients.pytest-plugin, run with -p pytester).

Each test writes a small test file and runs pytest on it in process (pytester), with the plugin
loaded from its entry point as a user's pytest loads it, and asserts what that user sees: the
agent loop of examples/pytest/agent.py passes, its retry bug fails with at-most-once and the
violations as the message, a folder of scenarios runs one test each.
"""
import pathlib
import shutil

import pytest

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[3]
AGENT_DIR = ROOT / "examples" / "pytest"
SCENARIO = ROOT / "examples" / "scenarios" / "deploy-disconnect-after-call.json"

# The test file header every inner run shares: the examples' agent loop, played on a session.
PLAY = f"""
import sys
import pytest
sys.path.insert(0, {str(AGENT_DIR)!r})
from agent import AgentFailed, run_agent

SCENARIO = {str(SCENARIO)!r}

def play(session, retry_bug=False):
    def deploy(call_id, env):
        session.record_execution("deploy", {{"env": env}}, call_id)
        return "deployed " + env
    try:
        session.completed(run_agent(session.base_url, "Deploy the staging build.", {{"deploy": deploy}},
                                    retry_bug=retry_bug))
    except AgentFailed:
        session.failed()
"""


@pytest.fixture
def run(pytester):
    """Writes `body` (after PLAY) as a test file and runs pytest on it; returns the outcome."""
    def go(body, *args):
        pytester.makepyfile(test_inner=PLAY + body)
        return pytester.runpytest("-p", "no:cacheprovider", "-rf", *args)
    return go


def test_a_correct_loop_passes_and_the_retry_bug_fails_with_at_most_once(run):
    result = run("""
@pytest.mark.hiccup(SCENARIO)
def test_correct_loop(hiccup_session):
    play(hiccup_session)

@pytest.mark.hiccup(SCENARIO)
def test_buggy_loop(hiccup_session):
    play(hiccup_session, retry_bug=True)
""")
    result.assert_outcomes(passed=1, failed=1)
    # What the user sees: the verdict, the harm first, each violation with where it happened, and
    # no traceback into the plugin.
    result.stdout.fnmatch_lines([
        "*_ test_buggy_loop _*",
        "hiccup verdict: fail: at-most-once (+4 more) (session s*, scenario deploy-disconnect-after-call)",
        '  at-most-once: tool "deploy" {"env":"staging"} ran 2 times for one intended call: call 0 of turn 0, '
        "delivered by requests 0, 1 (*) ?request 1, turn 0, attempt 1]",
        "  pairing: the session is dead: the API rejects request 2 (turn 1, rejected)*",
        "  no-rejected-request: *",
        "  outcome-agreement: a correct client completes this scenario; the agent exited 1 (recorded outcome failed)",
        '  expect.executions: expected tool "deploy" {"env":"staging"} to run 1 time(s), it ran 2',
        "recovery design shown: mixed (a call ran from request 0 (turn 0), which was then cut, *)",
        '3 request(s), 2 execution(s) recorded, outcome {"final_text": "", "outcome": "failed"}',
        "*= short test summary info =*",
        "FAILED test_inner.py::test_buggy_loop*",
    ])
    result.stdout.no_fnmatch_line("*plugin.py*")


def test_expect_violations_pins_a_bug_and_fails_when_hiccup_stops_catching_it(run):
    result = run("""
@pytest.mark.hiccup(SCENARIO)
def test_still_caught(hiccup_session):
    hiccup_session.expect_violations("at-most-once", "pairing")
    play(hiccup_session, retry_bug=True)

@pytest.mark.hiccup(SCENARIO)
def test_not_caught(hiccup_session):
    hiccup_session.expect_violations("at-most-once")
    play(hiccup_session)

@pytest.mark.hiccup(SCENARIO, check=False)
def test_left_to_the_test(hiccup_session):
    play(hiccup_session, retry_bug=True)
    assert hiccup_session.verdict().invariants[0] == "at-most-once"
""")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "hiccup did not report the expected violation(s) at-most-once of session s*:",
        "hiccup verdict: pass (session s*, scenario deploy-disconnect-after-call)",
    ])


def test_hiccup_scenarios_runs_one_test_per_scenario_of_a_folder(run, pytester):
    folder = pytester.mkdir("scenarios")
    (folder / "deploy").mkdir()
    shutil.copy(SCENARIO, folder / "a.json")
    shutil.copy(SCENARIO, folder / "deploy" / "b.json")
    result = run("""
@pytest.mark.hiccup_scenarios("scenarios")
def test_every_scenario(hiccup_session, hiccup_scenario):
    assert hiccup_scenario.suffix == ".json"
    play(hiccup_session)
""", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_every_scenario?a? PASSED*", "*test_every_scenario?deploy/b? PASSED*"])


def test_a_scenario_dict_and_base_urls_per_sdk_and_lint_problems_as_the_failure(run):
    result = run("""
import json, pathlib

def test_dict_scenario(hiccup_sessions):
    scenario = json.loads(pathlib.Path(SCENARIO).read_text())
    session = hiccup_sessions(scenario, recovery="hold")
    assert session.base_urls == {"openai": session.base_url + "/v1", "anthropic": session.base_url,
                                 "gemini": session.base_url}
    assert session.info["recovery"] == "hold"
    play(session)

def test_bad_scenario(hiccup_sessions):
    hiccup_sessions({"provider": "openai-chatt", "turns": []})
""")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "POST /_hiccup/sessions: 400 invalid_scenario: the scenario is invalid*",
        '  /provider: unknown provider "openai-chatt"*',
    ])


def test_a_missing_binary_is_an_error_naming_it(run):
    result = run("""
def test_needs_a_server(hiccup_server):
    pass
""", "--hiccup-bin", "/nonexistent/hiccup")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*/nonexistent/hiccup: not an executable file (from --hiccup-bin or HICCUP_BIN)*"])
