"""The agent loop of agent.py against hiccup, with the pytest-hiccup plugin (clients/python:
`pip install ./clients/python`): a clean run passes; the retry bug is caught.

The plugin starts one `hiccup serve` per run (hiccup on PATH, or --hiccup-bin / HICCUP_BIN) and
gives each test a session playing the scenario of its @pytest.mark.hiccup marker; when the test
returns, hiccup's verdict is the assertion.
"""
import pytest

from agent import AgentFailed, run_agent

SCENARIO = "../scenarios/deploy-disconnect-after-call.json"  # relative to this file
PROMPT = "Deploy the staging build."


def play(session, retry_bug):
    def deploy(call_id, env):
        session.record_execution("deploy", {"env": env}, call_id)  # the side effect, in hiccup's ledger
        return f"deployed {env}"

    try:
        session.completed(run_agent(session.base_url, PROMPT, {"deploy": deploy}, retry_bug=retry_bug))
    except AgentFailed:
        session.failed()


@pytest.mark.hiccup(SCENARIO)
def test_agent_survives_a_disconnect_after_a_call(hiccup_session):
    play(hiccup_session, retry_bug=False)
    assert hiccup_session.verdict().raw["executions"] == 1


@pytest.mark.hiccup(SCENARIO)
def test_hiccup_catches_the_retry_bug(hiccup_session):
    # The plugin then fails this test unless hiccup reports both (so ctest notices if it stops
    # catching the bug); without this line the verdict's violations would fail it.
    hiccup_session.expect_violations("at-most-once", "pairing")
    play(hiccup_session, retry_bug=True)
