"""The pytest plugin (entry point `pytest11: hiccup`): fixtures, markers, options and the verdict check.

- `hiccup_server` (session scope): one `hiccup serve` per test run (--hiccup-bin, $HICCUP_BIN or
  PATH), or the server at --hiccup-url / $HICCUP_URL.
- `hiccup_session` (function scope): a session playing the test's scenario (`hiccup_scenario`:
  from @pytest.mark.hiccup(scenario), @pytest.mark.hiccup_scenarios(folder), or a parametrization).
- `hiccup_sessions` (function scope): a factory, `hiccup_sessions(scenario, **options)`.
- Every session a test made is judged when the test body returns: a verdict that does not pass fails
  the test with hiccup's violations as the message; sessions are deleted at teardown.
"""
from __future__ import annotations

import os
import pathlib
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from .client import HiccupError, HiccupServer, Scenario, Session

_SESSIONS = pytest.StashKey[List[Session]]()
_OPTIONS = ("id", "max_attempts", "strict", "recovery", "journal_window")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hiccup", "hiccup fault-injection sessions")
    group.addoption("--hiccup-bin", default=None,
                    help="the hiccup binary to run as `hiccup serve` (default: $HICCUP_BIN, else hiccup on PATH)")
    group.addoption("--hiccup-url", default=None,
                    help="use the hiccup serve already running at this URL instead of starting one "
                         "(default: $HICCUP_URL)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hiccup(scenario=None, *, strict=None, recovery=None, max_attempts=None, "
                            "journal_window=None, check=True): the scenario (file or dict) and session options of "
                            "the test's hiccup_session; check=False leaves the verdict to the test")
    config.addinivalue_line("markers", "hiccup_scenarios(folder, pattern='*.json'): run the test once per scenario "
                            "file of the folder (relative paths are relative to the test file), as hiccup_scenario")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("hiccup_scenarios")
    if marker is None or "hiccup_scenario" not in metafunc.fixturenames:
        return
    folder = pathlib.Path(marker.kwargs.get("folder", marker.args[0] if marker.args else ""))
    if not folder.is_absolute():
        folder = metafunc.definition.path.parent / folder
    pattern = marker.kwargs.get("pattern", marker.args[1] if len(marker.args) > 1 else "*.json")
    files = sorted(p for p in folder.rglob(pattern) if p.is_file())
    if not files:
        raise pytest.UsageError(f"@pytest.mark.hiccup_scenarios: no {pattern} file under {folder}")
    metafunc.parametrize("hiccup_scenario", files, ids=[str(p.relative_to(folder).with_suffix("")) for p in files])


@pytest.fixture(scope="session")
def hiccup_server(pytestconfig: pytest.Config) -> Iterator[HiccupServer]:
    """One hiccup server for the test run: started from --hiccup-bin / $HICCUP_BIN / PATH and stopped
    at the end, or the one at --hiccup-url / $HICCUP_URL."""
    url = pytestconfig.getoption("hiccup_url") or os.environ.get("HICCUP_URL")
    if url:
        server = HiccupServer(url)
        problem = None
        try:
            server.health()
        except HiccupError as e:  # failed outside the handler: pytest would print it twice
            problem = f"hiccup serve at {url} (--hiccup-url / HICCUP_URL) does not answer: {e}"
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        yield server
        return
    started: Optional[HiccupServer] = None
    problem = None
    try:
        started = HiccupServer.start(pytestconfig.getoption("hiccup_bin"))
    except HiccupError as e:
        problem = str(e)
    if started is None:
        pytest.fail(problem or "hiccup serve did not start", pytrace=False)
    server = started
    yield server
    status = server.stop()
    if status not in (0, -15, None):
        import warnings
        warnings.warn(f"hiccup serve exited {status} (5: an internal error in hiccup; its log: {server.log_path})")


@pytest.fixture
def hiccup_sessions(hiccup_server: HiccupServer, request: pytest.FixtureRequest) -> Iterator[Callable[..., Session]]:
    """A factory: `hiccup_sessions(scenario, *, id=None, max_attempts=None, strict=None, recovery=None,
    journal_window=None)` makes a session (scenario: a file path or a dict). Each is judged when
    the test body returns and deleted at teardown."""
    made = request.node.stash.setdefault(_SESSIONS, [])

    def create(scenario: Scenario, **options: Any) -> Session:
        unknown = set(options) - set(_OPTIONS)
        if unknown:
            raise TypeError(f"hiccup_sessions: unknown option(s) {sorted(unknown)} (known: {', '.join(_OPTIONS)})")
        session: Optional[Session] = None
        problem = None
        try:
            session = hiccup_server.create_session(scenario, **options)
        except HiccupError as e:  # failed outside the handler: pytest would print it twice
            problem = str(e)
        if session is None:
            pytest.fail(problem or "hiccup_sessions: no session", pytrace=False)
        made.append(session)
        return session

    yield create
    for session in made:
        try:
            session.delete()
        except HiccupError:
            pass  # the server is gone or the test deleted it; nothing to clean


@pytest.fixture
def hiccup_scenario(request: pytest.FixtureRequest) -> Scenario:
    """The test's scenario: a parametrized value (hiccup_scenarios, or parametrize("hiccup_scenario",
    ...)), else @pytest.mark.hiccup(scenario). Relative paths are relative to the test file."""
    marker = request.node.get_closest_marker("hiccup")
    scenario = getattr(request, "param", None)
    if scenario is None and marker is not None:
        scenario = marker.kwargs.get("scenario", marker.args[0] if marker.args else None)
    if scenario is None:
        pytest.fail("hiccup_session needs a scenario: @pytest.mark.hiccup(\"path/to/scenario.json\"), "
                    "@pytest.mark.hiccup_scenarios(\"folder\"), or make one with hiccup_sessions(scenario)",
                    pytrace=False)
    if isinstance(scenario, (str, os.PathLike)):
        path = pathlib.Path(scenario)
        if not path.is_absolute():
            path = request.node.path.parent / path
        return path
    return scenario


@pytest.fixture
def hiccup_session(hiccup_sessions: Callable[..., Session], hiccup_scenario: Scenario,
                   request: pytest.FixtureRequest) -> Session:
    """A session playing hiccup_scenario, with the options of @pytest.mark.hiccup; its verdict is
    checked when the test body returns unless the marker says check=False."""
    marker = request.node.get_closest_marker("hiccup")
    options: Dict[str, Any] = {k: v for k, v in (marker.kwargs.items() if marker else ()) if k in _OPTIONS}
    session = hiccup_sessions(hiccup_scenario, **options)
    if marker is not None and marker.kwargs.get("check") is False:
        session.check_verdict = False
    return session


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Runs after the test body returned without failing: judges every session the test made and
    fails the test with the first verdict that is not as expected."""
    failures: List[str] = []
    for session in item.stash.get(_SESSIONS, []):
        if not session.check_verdict:
            continue
        try:
            message = session.check()
        except HiccupError as e:
            message = f"hiccup could not judge session {session.id}: {e}"
        if message:
            failures.append(message)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
