"""A client of `hiccup serve`'s control API (docs/CONTROL-API.md, version 1), standard library only.

`HiccupServer.start()` runs `hiccup serve` and reads its base URL; `server.create_session()` makes a
session from a scenario file, a scenario file's text or a dict; a `Session` records the agent's tool
executions and outcome and returns hiccup's `Verdict`, whose `format()` is the message a failing
test shows (the first violation, the harm, leads). The pytest fixtures (plugin.py) are built on it;
it is usable without pytest too.
"""
from __future__ import annotations

import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

#: A scenario: a path to a scenario file, or the scenario as a dict (its JSON object).
Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


class HiccupError(Exception):
    """The control API refused a request (hiccup's error envelope), or the server could not start.

    `status` is the HTTP status (0 when no answer came), `code` hiccup's error code
    (`invalid_scenario`, `unknown_session`, ...), `problems` each `{pointer, message}`.
    """

    def __init__(self, message: str, status: int = 0, code: str = "", problems: Optional[List[Dict[str, str]]] = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.problems = problems or []


def find_binary(explicit: Optional[str] = None) -> str:
    """The hiccup binary: `explicit` when given, else $HICCUP_BIN, else `hiccup` on PATH.
    Raises HiccupError naming what was tried."""
    candidate = explicit or os.environ.get("HICCUP_BIN") or shutil.which("hiccup")
    if not candidate:
        raise HiccupError("hiccup is not on PATH: install it (Debian package from scripts/package.sh, or "
                          "cmake --install), or name the binary with --hiccup-bin or HICCUP_BIN")
    if os.sep in candidate and not os.access(candidate, os.X_OK):
        raise HiccupError(f"{candidate}: not an executable file (from --hiccup-bin or HICCUP_BIN)")
    return candidate


class _Control:
    """JSON over HTTP to one server's /_hiccup/ paths."""

    def __init__(self, url: str, timeout_s: float):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def call(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                error = json.loads(text).get("error", {})
            except ValueError:
                error = {}
            message = error.get("message") or text.strip() or e.reason
            problems = error.get("problems") or []
            details = "".join(f"\n  {p.get('pointer', '')}: {p.get('message', '')}" for p in problems)
            raise HiccupError(f"{method} {path}: {e.code} {error.get('code', '')}: {message}{details}",
                              e.code, error.get("code", ""), problems) from None
        except urllib.error.URLError as e:
            raise HiccupError(f"{method} {self.url}{path}: {e.reason} (is hiccup serve running?)") from None


@dataclass(frozen=True)
class Violation:
    """One broken invariant: its name (`at-most-once`, `pairing`, ...), hiccup's message, and where
    (request = journal index, turn, attempt) when the judge knows."""

    invariant: str
    message: str
    request: Optional[int] = None
    turn: Optional[int] = None
    attempt: Optional[int] = None

    def __str__(self) -> str:
        where = ", ".join(f"{k} {v}" for k, v in (("request", self.request), ("turn", self.turn),
                                                  ("attempt", self.attempt)) if v is not None)
        return f"{self.invariant}: {self.message}" + (f" [{where}]" if where else "")


def _violations(items: Sequence[Mapping[str, Any]]) -> List[Violation]:
    return [Violation(v["invariant"], v.get("message", ""), v.get("request"), v.get("turn"), v.get("attempt"))
            for v in items]


@dataclass
class Verdict:
    """`GET /_hiccup/sessions/{id}/verdict`: `verdict` is pass, fail, difference or unknown;
    `passed` is hiccup's (no violation and not unknown); `raw` the whole answer."""

    verdict: str
    passed: bool
    violations: List[Violation]
    differences: List[Violation]
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "Verdict":
        return cls(j["verdict"], bool(j["passed"]), _violations(j.get("violations", [])),
                   _violations(j.get("differences", [])), j)

    @property
    def invariants(self) -> List[str]:
        """The violated invariants' names, in hiccup's order (the harm first)."""
        return [v.invariant for v in self.violations]

    def format(self) -> str:
        """The verdict as a failing test shows it: a headline naming the first violation (hiccup
        lists the harm first, its consequences after), then each violation, the policy
        differences, the window when judged over one, and the recovery design the run showed."""
        j = self.raw
        where = f"session {j.get('session')}, scenario {j.get('scenario')}"
        if self.violations:
            head = self.violations[0].invariant
            more = f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            lines = [f"hiccup verdict: {self.verdict}: {head}{more} ({where})"]
        else:
            lines = [f"hiccup verdict: {self.verdict} ({where})"]
        lines += [f"  {v}" for v in self.violations]
        if self.differences:
            lines.append("policy differences (not bugs unless the session is strict):")
            lines += [f"  {d}" for d in self.differences]
        window = j.get("window")
        if window:
            lines.append(f"judged over a window: {window.get('message', '')}")
        if j.get("design"):
            lines.append(f"recovery design shown: {j['design']} ({j.get('design_evidence', '')})")
        lines.append(f"{j.get('requests', 0)} request(s), {j.get('executions', 0)} execution(s) recorded, "
                     f"outcome {json.dumps(j.get('outcome'))}")
        return "\n".join(lines)


class Session:
    """One control-API session: a scenario of its own, its base URL, ledger, outcome and verdict.

    Point the SDK under test at `openai_base_url` (OpenAI SDKs, `base_url + "/v1"`),
    `anthropic_base_url` or `gemini_base_url` (both `base_url`); `base_urls` has all three by name.
    """

    def __init__(self, control: _Control, info: Dict[str, Any]):
        self._control = control
        self.info = info
        self.id: str = info["id"]
        self.base_url: str = info["base_url"]
        #: Whether the pytest plugin judges the verdict when the test ends (see expect_violations).
        self.check_verdict = True
        #: Invariants the test expects hiccup to report (expect_violations); None: expect a pass.
        self.expected_violations: Optional[List[str]] = None

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        return self.base_url

    @property
    def base_urls(self) -> Dict[str, str]:
        """Base URLs per SDK family: openai, anthropic, gemini (docs/CONTROL-API.md, "Paths")."""
        return {"openai": self.openai_base_url, "anthropic": self.anthropic_base_url, "gemini": self.gemini_base_url}

    def _path(self, what: str = "") -> str:
        return f"/_hiccup/sessions/{self.id}" + (f"/{what}" if what else "")

    def record_execution(self, name: str, args: Optional[Mapping[str, Any]] = None, call_id: Optional[str] = None) -> None:
        """Records one real side effect of tool `name`, when it runs. Pass the provider's `call_id`
        whenever it sends one: it tells a retried attempt's call from the failed attempt's."""
        body: Dict[str, Any] = {"name": name, "args": dict(args or {})}
        if call_id:
            body["call_id"] = call_id
        self._control.call("POST", self._path("executions"), body)

    def record_outcome(self, outcome: str, final_text: Optional[str] = None, shown_text: Optional[str] = None) -> None:
        """Records what the agent reported: "completed" or "failed", the final text it showed and,
        optionally, all text it showed (then `clean-output` is judged)."""
        body: Dict[str, Any] = {"outcome": outcome}
        if final_text is not None:
            body["final_text"] = final_text
        if shown_text is not None:
            body["shown_text"] = shown_text
        self._control.call("POST", self._path("outcome"), body)

    def completed(self, final_text: str = "", shown_text: Optional[str] = None) -> None:
        """record_outcome("completed", final_text, shown_text)."""
        self.record_outcome("completed", final_text, shown_text)

    def failed(self, shown_text: Optional[str] = None) -> None:
        """record_outcome("failed")."""
        self.record_outcome("failed", None, shown_text)

    def verdict(self) -> Verdict:
        """hiccup's verdict over the journal, ledger and outcome so far (as often as you like)."""
        return Verdict.from_json(self._control.call("GET", self._path("verdict")))

    def journal(self) -> List[Dict[str, Any]]:
        """The journal entries in the session's window (docs/CONTROL-API.md)."""
        return self._control.call("GET", self._path("journal"))["journal"]

    def executions(self) -> List[Dict[str, Any]]:
        return self._control.call("GET", self._path("executions"))["executions"]

    def reset(self) -> None:
        """The script starts over; journal, ledger and outcome are emptied."""
        self.info = self._control.call("POST", self._path("reset"))["session"]

    def delete(self) -> None:
        self._control.call("DELETE", self._path())

    def expect_violations(self, *invariants: str) -> None:
        """Declares that this session's run is expected to fail with (at least) these invariants:
        the plugin's check then fails the test when hiccup does not report them (a test that pins
        a known bug, or that hiccup still catches one)."""
        self.expected_violations = list(invariants)

    def check(self) -> Optional[str]:
        """What the plugin's end-of-test check says: None when the verdict is as expected, else the
        failure message (Verdict.format(), or which expected violations are missing)."""
        verdict = self.verdict()
        if self.expected_violations is None:
            return None if verdict.passed else verdict.format()
        missing = [name for name in self.expected_violations if name not in verdict.invariants]
        if verdict.verdict == "fail" and not missing:
            return None
        return (f"hiccup did not report the expected violation(s) {', '.join(missing or self.expected_violations)}"
                f" of session {self.id}:\n{verdict.format()}")


def _die_with_parent() -> None:
    """In the child before exec: on Linux, SIGTERM when the test process dies (even by SIGKILL), so
    no `hiccup serve` outlives its test run."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux, or no libc: the fixture's teardown still stops it
        pass


def _scenario_body(scenario: Scenario) -> Any:
    if isinstance(scenario, Mapping):
        return dict(scenario)
    # The file's text as is: the control API reads `//` comments as hiccup lint does.
    path = pathlib.Path(scenario)
    if path.is_dir():
        raise HiccupError(f"scenario {path}: a folder, not a scenario file (one test per file of a folder: "
                          f"@pytest.mark.hiccup_scenarios(\"{scenario}\"))")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise HiccupError(f"scenario file {path.resolve()}: cannot be read ({e.strerror or e})") from None


class HiccupServer:
    """A `hiccup serve` (with no scenario) this process started, or one already running (`url`)."""

    def __init__(self, url: str, process: Optional[subprocess.Popen] = None, log_path: Optional[str] = None,
                 timeout_s: float = 30):
        self.url = url.rstrip("/")
        self.process = process
        self.log_path = log_path
        self._control = _Control(self.url, timeout_s)

    @classmethod
    def start(cls, binary: Optional[str] = None, args: Sequence[str] = (), start_timeout_s: float = 10) -> "HiccupServer":
        """Runs `BINARY serve ARGS...` and waits for its base URL (the first line of its stdout).
        The server's stderr goes to a log file (`log_path`), quoted when it fails to start."""
        binary = find_binary(binary)
        log = tempfile.NamedTemporaryFile(prefix="hiccup-serve-", suffix=".log", delete=False)
        try:
            process = subprocess.Popen([binary, "serve", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=log, preexec_fn=_die_with_parent)
        except OSError as e:
            raise HiccupError(f"{binary} serve did not start: {e}") from None
        finally:
            log.close()
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], start_timeout_s)
        line = process.stdout.readline().decode("utf-8", "replace").strip() if ready else ""
        if not line.startswith("http://"):
            process.kill()
            code = process.wait()
            err = pathlib.Path(log.name).read_text(errors="replace").strip()
            raise HiccupError(f"{binary} serve did not print its base URL within {start_timeout_s:g} s "
                              f"(exit {code}, printed {line!r}); its stderr: {err or '(empty)'}")
        # Keep reading stdout, so a server that prints more never blocks on a full pipe.
        threading.Thread(target=process.stdout.read, daemon=True).start()
        return cls(line, process, log.name)

    def stop(self, timeout_s: float = 10) -> Optional[int]:
        """Stops a server this object started (SIGTERM, then SIGKILL); returns its exit status
        (5: hiccup met an internal error, see its log)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def health(self) -> Dict[str, Any]:
        return self._control.call("GET", "/_hiccup/health")

    def create_session(self, scenario: Scenario, *, id: Optional[str] = None, max_attempts: Optional[int] = None,
                       strict: Optional[bool] = None, recovery: Optional[str] = None,
                       journal_window: Optional[int] = None) -> Session:
        """A new session playing `scenario` (a file path, or a dict). Options as the control API's
        create body: `recovery` "hold" or "continue" declares the client's design. An invalid
        scenario raises HiccupError with hiccup lint's problems."""
        body: Dict[str, Any] = {"scenario": _scenario_body(scenario)}
        for key, value in (("id", id), ("max_attempts", max_attempts), ("strict", strict),
                           ("recovery", recovery), ("journal_window", journal_window)):
            if value is not None:
                body[key] = value
        try:
            info = self._control.call("POST", "/_hiccup/sessions", body)["session"]
        except HiccupError as e:
            if not isinstance(scenario, Mapping):
                e.args = (f"{scenario}: {e.args[0]}",)
            raise
        return Session(self._control, info)

    def __enter__(self) -> "HiccupServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
