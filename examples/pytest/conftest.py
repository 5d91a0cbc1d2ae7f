"""pytest fixtures for hiccup: one `hiccup serve` per test run, one session per test.

    def test_x(hiccup_session):
        s = hiccup_session("path/to/scenario.json")
        ... point the agent at s.base_url, record tool runs with s.record_execution(...) ...
        s.record_outcome("completed", final_text)
        assert s.verdict()["verdict"] == "pass"

HICCUP_BIN names the hiccup binary (default: build/hiccup of this checkout).
"""
import json
import os
import pathlib
import subprocess

import httpx
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def hiccup_url():
    binary = os.environ.get("HICCUP_BIN", str(ROOT / "build" / "hiccup"))
    # stderr goes to the test's own stderr, so a server that cannot start says why.
    proc = subprocess.Popen([binary, "serve"], stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip()  # the first line is the base URL
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        pytest.fail(f"{binary} serve did not start (exit {proc.wait()}, printed {url!r}; its stderr is above)")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


class Session:
    """One hiccup session: its base URL, its ledger, its outcome, its verdict."""

    def __init__(self, control, info):
        self.control = control
        self.id = info["id"]
        self.base_url = info["base_url"]

    def _url(self, what):
        return f"/_hiccup/sessions/{self.id}/{what}"

    def record_execution(self, name, args, call_id=None):
        body = {"name": name, "args": args}
        if call_id:
            body["call_id"] = call_id
        self.control.post(self._url("executions"), json=body).raise_for_status()

    def record_outcome(self, outcome, final_text=""):
        self.control.post(self._url("outcome"), json={"outcome": outcome, "final_text": final_text}).raise_for_status()

    def verdict(self):
        r = self.control.get(self._url("verdict"))
        r.raise_for_status()
        return r.json()

    def delete(self):
        self.control.delete(f"/_hiccup/sessions/{self.id}")


@pytest.fixture
def hiccup_session(hiccup_url):
    control = httpx.Client(base_url=hiccup_url, timeout=10)
    made = []

    def create(scenario_path):
        scenario = json.loads(pathlib.Path(scenario_path).read_text())
        r = control.post("/_hiccup/sessions", json={"scenario": scenario})
        assert r.status_code == 201, r.text
        made.append(Session(control, r.json()["session"]))
        return made[-1]

    yield create
    for s in made:
        s.delete()
    control.close()
