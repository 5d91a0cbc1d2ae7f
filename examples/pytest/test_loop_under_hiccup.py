"""agent.py's loop as a black box for `hiccup explore --agent-cmd` (and `hiccup run --agent-cmd`).

hiccup starts this test once per generated case with the case's mock server in HICCUP_BASE_URL and
its prompt in HICCUP_PROMPT; the `deploy` tool runs its `env` argument with /bin/sh, which is where
hiccup puts its ledger command (`--tool deploy:env`), so hiccup counts every real execution. The
test passes when the loop completes and prints its answer (`-s` shows it to hiccup), and fails when
the loop gives up (AgentFailed): hiccup reads the exit code as the outcome.

    build/hiccup explore --provider openai-chat --tool deploy:env --cases 20 --agent-cmd \\
      'PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -s -p no:cacheprovider "$HICCUP_INVOKE_DIR/examples/pytest/test_loop_under_hiccup.py"'

RETRY_BUG=1 in the command switches on agent.py's retry bug. Without HICCUP_BASE_URL (a plain
`pytest examples/pytest`) the test is skipped.
"""
import os
import subprocess

import pytest

from agent import run_agent


@pytest.mark.skipif("HICCUP_BASE_URL" not in os.environ, reason="run by hiccup explore/run --agent-cmd")
def test_loop_under_hiccup():
    def deploy(call_id, env="", **_):
        subprocess.run(["/bin/sh", "-c", env], check=False)  # hiccup's ledger command
        return f"deployed {call_id}"

    text = run_agent(os.environ["HICCUP_BASE_URL"], os.environ["HICCUP_PROMPT"], {"deploy": deploy},
                     retry_bug=os.environ.get("RETRY_BUG") == "1")
    print(text)
