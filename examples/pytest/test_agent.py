"""The agent loop of agent.py against hiccup: a clean run passes; the retry bug is caught."""
import pathlib

from agent import AgentFailed, run_agent

SCENARIO = pathlib.Path(__file__).resolve().parents[1] / "scenarios" / "deploy-disconnect-after-call.json"
PROMPT = "Deploy the staging build."


def play(session, retry_bug):
    def deploy(call_id, env):
        session.record_execution("deploy", {"env": env}, call_id)  # the side effect, in hiccup's ledger
        return f"deployed {env}"

    try:
        text = run_agent(session.base_url, PROMPT, {"deploy": deploy}, retry_bug=retry_bug)
        session.record_outcome("completed", text)
    except AgentFailed:
        session.record_outcome("failed")
    return session.verdict()


def test_agent_survives_a_disconnect_after_a_call(hiccup_session):
    verdict = play(hiccup_session(SCENARIO), retry_bug=False)
    assert verdict["verdict"] == "pass", verdict["violations"]
    assert verdict["executions"] == 1


def test_hiccup_catches_the_retry_bug(hiccup_session):
    verdict = play(hiccup_session(SCENARIO), retry_bug=True)
    caught = {v["invariant"] for v in verdict["violations"]}
    assert verdict["verdict"] == "fail"
    assert {"at-most-once", "pairing"} <= caught, verdict["violations"]
