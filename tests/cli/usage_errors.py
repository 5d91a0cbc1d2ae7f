#!/usr/bin/env python3
"""Usage errors of every `hiccup` command: exit 2, nothing on stdout, and on stderr one short
message that names the command and what was wrong, and points to the command's --help (the whole
help text is not reprinted: it scrolled the message off the screen). And --help itself still
prints the command's usage on stdout with exit 0.

usage: usage_errors.py --hiccup PATH --work DIR
"""
import subprocess
import sys
from cli_common import parse_args

# (arguments, the command the message names, a text the message must contain)
CASES = [
    (["run", "--bogus", "x.json"], "run", '"--bogus"'),
    (["run", "--seed", "abc", "x.json"], "run", "abc"),
    (["run", "--defect", "nosuch", "x.json"], "run", "nosuch"),
    (["run", "--transport"], "run", "--transport needs a value"),
    (["run", "--transport", "websocket", "--provider", "gemini", "x.json"], "run",
     "--transport websocket plays the openai-responses format (the WebSocket mode is the Responses API's), found --provider gemini"),
    (["run", "--transport", "kinesis", "x.json"], "run",
     '--transport expects http, sse, memory, websocket, bedrock, vertex or foundry, found "kinesis"'),
    (["run", "--transport", "bedrock", "--agent-cmd", "true", "x.json"], "run",
     "--transport bedrock applies to the reference runtime"),
    (["explore", "--cases", "abc"], "explore", "abc"),
    (["explore", "--bogus"], "explore", '"--bogus"'),
    (["explore", "--defect", "nosuch"], "explore", 'unknown defect "nosuch"'),
    (["explore", "--jobs="], "explore", '--jobs needs a value, found ""'),
    (["explore", "--max-shrinks", ""], "explore", '--max-shrinks needs a value'),
    (["run", "--report-dir", "", "x.json"], "run", '--report-dir needs a value'),
    (["serve", "--journal=", "x.json"], "serve", '--journal needs a value'),
    (["matrix", "--agent", "gemini-cli", "--known-failures=", "x"], "matrix", '--known-failures needs a value'),
    # A single-valued option given twice names both values, in every command; repeatable ones
    # (--defect, --tag, matrix --agent) stay repeatable: the error is then the unknown defect.
    (["explore", "--cases", "10", "--cases", "20"], "explore", '--cases given twice ("10", then "20")'),
    (["explore", "--seed=1", "--seed", "2"], "explore", '--seed given twice ("1", then "2")'),
    (["explore", "--check-determinism", "--check-determinism=all"], "explore",
     '--check-determinism given twice ("10", then "all")'),
    (["explore", "--defect", "keep-calls-on-retry", "--defect", "nosuch"], "explore", 'unknown defect "nosuch"'),
    (["run", "--transport", "memory", "--transport", "http", "x.json"], "run",
     '--transport given twice ("memory", then "http")'),
    (["run", "--tag", "a", "--tag", "b", "--defect", "keep-calls-on-retry", "--defect", "nosuch", "x.json"], "run",
     'unknown defect "nosuch"'),
    (["serve", "--port", "0", "--port=1", "x.json"], "serve", '--port given twice ("0", then "1")'),
    (["matrix", "--agent", "a", "--agent", "b", "--jobs", "1", "--jobs", "2", "x"], "matrix",
     '--jobs given twice ("1", then "2")'),
    # A whole number outside the option's range says so, with the range, however many digits.
    (["explore", "--cases", "99999999999999999999"], "explore",
     "--cases 99999999999999999999 is out of range: expected 1..2147483647"),
    (["explore", "--cases", "0"], "explore", "--cases 0 is out of range: expected 1..2147483647"),
    (["explore", "--seed", "18446744073709551616"], "explore",
     "--seed 18446744073709551616 is out of range: expected 0..18446744073709551615"),
    (["explore", "--shard", "1/99999999999", "--cases", "5"], "explore", "--shard 1/99999999999 is out of range"),
    (["explore", "--check-determinism=101"], "explore", "--check-determinism 101 is out of range: expected 1..100 or all"),
    (["explore", "--max-shrinks", "-1"], "explore", '--max-shrinks expects a whole number, found "-1"'),
    (["explore", "--http-reruns", "5", "--transport", "http"], "explore", "--http-reruns 5 is out of range: expected 0..4"),
    (["explore", "--http-reruns", "1"], "explore", "--http-reruns applies to a transport over the network"),
    (["explore", "--http-idle-floor-ms", "100", "--transport", "memory"], "explore",
     "--http-idle-floor-ms applies to a transport over the network"),
    (["explore", "--transport", "kinesis"], "explore",
     "--transport expects memory, http, websocket, bedrock, vertex, foundry or any, found \"kinesis\""),
    (["explore", "--transport", "vertex", "--provider", "gemini"], "explore",
     "--transport vertex plays anthropic cases only (a cloud path is a path of the anthropic format), found --provider gemini"),
    (["run", "--seed", "99999999999999999999", "x.json"], "run", "is out of range: expected 0..18446744073709551615"),
    (["serve", "--port", "70000"], "serve", "--port 70000 is out of range: expected 0..65535"),
    (["serve", "--journal-window", "3000000000", "x.json"], "serve", "--journal-window 3000000000 is out of range"),
    (["matrix", "--agent", "a", "--jobs", "65", "x"], "matrix", "--jobs 65 is out of range: expected 1..64"),
    # A shard that holds no case would pass having checked nothing.
    (["explore", "--cases", "3", "--shard", "5/5"], "explore",
     "--shard 5/5 holds no cases: shard K/N runs the case indices i with i % N == K-1, and --cases 3 has 0..2; "
     "give --cases 5 or more, or split 3 cases into at most 3 shards"),
    (["explore", "--cases", "1", "--shard", "2/2"], "explore", "--cases 1 has only 0; give --cases 2 or more"),
    (["explore", "--confirm", "3"], "explore", "--confirm applies to --agent/--agent-cmd explorations"),
    (["explore", "--agent-cmd", "true", "--defect", "keep-calls-on-retry"], "explore",
     "--defect applies to the reference runtime, not to --agent/--agent-cmd"),
    (["explore", "--agent-cmd", "true", "--transport", "memory"], "explore", "--transport applies to the reference runtime"),
    (["explore", "--agent-cmd", "true", "--progress-every", "5"], "explore",
     "--progress-every applies to the reference runtime, not to --agent/--agent-cmd"),
    (["explore", "--agent", "gemini-cli", "--agent-cmd", "true"], "explore", "--agent and --agent-cmd exclude each other"),
    (["explore", "--agent", "gemini-cli", "--tool", "x:y"], "explore", "--tool applies to --agent-cmd"),
    (["explore", "--agent-cmd", "true", "--tool", "shell"], "explore", "--tool expects NAME:ARG"),
    (["explore", "--agent-cmd", "true", "--confirm", "21"], "explore", "--confirm 21 is out of range: expected 0..20"),
    (["explore", "--agent", "gemini-cli", "--provider", "anthropic"], "explore", "agent gemini-cli speaks gemini only"),
    (["lint"], "lint", "no PATH given"),
    (["lint", "--bogus", "x.json"], "lint", '"--bogus"'),
    (["serve", "--port", "abc"], "serve", "abc"),
    (["serve", "--bogus"], "serve", '"--bogus"'),
    (["mcp"], "mcp", "expected one URL"),
    (["mcp", "https://127.0.0.1:1/mcp"], "mcp", "expected an http:// URL"),
    (["mcp", "http://127.0.0.1:0/mcp"], "mcp", "expected a port 1..65535"),
    (["mcp", "http://user:hunter2@127.0.0.1:1/mcp"], "mcp", "credentials in the URL are not allowed"),
    (["mcp", "--read-timeout-s", "0", "http://127.0.0.1:1/mcp"], "mcp", "--read-timeout-s 0 is out of range"),
    (["mcp", "--drain-s", "-1", "http://127.0.0.1:1/mcp"], "mcp", "--drain-s"),
    (["mcp", "--drain-s", "86401", "http://127.0.0.1:1/mcp"], "mcp", "--drain-s 86401 is out of range"),
    (["matrix", "--bogus"], "matrix", '"--bogus"'),
    (["report"], "report", "expected a report directory"),
    (["report", "--bogus", "d"], "report", '"--bogus"'),
    (["report", "merge", "out"], "report", "at least one shard report directory"),
    (["report", "merge", "", ""], "report", "OUT is an empty path"),
    (["report", "merge", "out", ""], "report", "a shard directory is an empty path"),
    (["report", ""], "report", "the report directory is an empty path"),
    (["record", "--bogus"], "record", '"--bogus"'),
    (["record"], "record", "--upstream URL is required"),
    (["record", "--upstream", "ftp://x"], "record", "expected http://HOST[:PORT][/PATH]"),
    (["record", "--upstream", "http://h", "--port", "70000"], "record", "--port 70000 is out of range"),
    (["record", "--upstream", "http://h", "--upstream", "http://i"], "record", '--upstream given twice'),
    (["record", "--upstream", "http://h", "--timing", "--timing"], "record", '--timing given twice'),
    (["serve", "--timing-scale", "x"], "serve", '--timing-scale expects a number in 0..1000000, found "x"'),
    (["run", "--timing-scale", "-1", "x.json"], "run", '--timing-scale expects a number in 0..1000000, found "-1"'),
    (["proxy", "--upstream", "http://h"], "proxy", "expected one SCENARIO file, found 0"),
    (["proxy", "x.json"], "proxy", "--upstream URL is required"),
    (["proxy", "--upstream", "h:80", "x.json"], "proxy", "expected http://HOST[:PORT][/PATH]"),
    (["proxy", "--upstream", "http://h", "--stall-ms-per-s", "x", "x.json"], "proxy", "--stall-ms-per-s expects"),
    (["defects", "extra"], "defects", '"extra"'),
    (["faults", "extra"], "faults", '"extra"'),
    (["invariants", "extra"], "invariants", '"extra"'),
]


def main():
    a = parse_args(source=False, check=False)
    failures = []

    def run(args):
        return subprocess.run([a.hiccup] + args, cwd=a.work, capture_output=True, text=True, timeout=30)

    for args, command, needle in CASES:
        p = run(args)
        err = p.stderr
        lines = err.splitlines()
        problems = []
        if p.returncode != 2:
            problems.append(f"exit {p.returncode}, expected 2")
        if p.stdout:
            problems.append(f"stdout not empty: {p.stdout[:200]!r}")
        if not err.startswith(f"error: hiccup {command}: "):
            problems.append(f"stderr does not start with 'error: hiccup {command}: '")
        if needle not in err:
            problems.append(f"stderr does not name {needle!r}")
        if f"hiccup {command} --help" not in err:
            problems.append(f"stderr does not point to 'hiccup {command} --help'")
        if len(lines) > 3 or "usage:" in err:
            problems.append(f"stderr reprints the help ({len(lines)} lines)")
        verdict = "ok  " if not problems else "FAIL"
        print(f"{verdict} hiccup {' '.join(args)}: exit {p.returncode}, {err.splitlines()[0] if lines else '(no stderr)'}")
        failures += [f"hiccup {' '.join(args)}: {x}\n  stderr: {err[:300]!r}" for x in problems]

    # A bad --upstream is quoted as text from outside: its password never echoed, a byte that is
    # not UTF-8 escaped rather than written raw to the terminal.
    for command in ("record", "proxy"):
        extra = ["x.json"] if command == "proxy" else []
        p = subprocess.run([a.hiccup, command, "--upstream", "http://user:hunter2-secret@h:99999"] + extra,
                           cwd=a.work, capture_output=True, timeout=30)
        if p.returncode != 2 or b"hunter2-secret" in p.stderr or b'"http://***@h:99999"' not in p.stderr:
            failures.append(f"hiccup {command} --upstream with a password: exit {p.returncode}, stderr {p.stderr[:300]!r}")
        p = subprocess.run([a.hiccup.encode(), command.encode(), b"--upstream", b"http://h\xff"] + [e.encode() for e in extra],
                           cwd=a.work, capture_output=True, timeout=30)
        if p.returncode != 2 or b"\xff" in p.stderr:
            failures.append(f"hiccup {command} --upstream with a raw 0xFF: exit {p.returncode}, stderr {p.stderr[:300]!r}")
        p = subprocess.run([a.hiccup.encode(), command.encode(), b"--upstream", b"http://h/a b\x01"] + [e.encode() for e in extra],
                           cwd=a.work, capture_output=True, timeout=30)
        if p.returncode != 2 or b"\x01" in p.stderr or b"percent-encode it" not in p.stderr:
            failures.append(f"hiccup {command} --upstream with a space and a control byte in its path: exit {p.returncode}, "
                            f"stderr {p.stderr[:300]!r}")
    p = run(["mcp", "http://user:hunter2@127.0.0.1:1/mcp"])
    if "hunter2" in p.stderr:
        failures.append(f"hiccup mcp echoed the URL's password: {p.stderr[:300]!r}")
    print(f"{'ok  ' if not failures else 'FAIL'} record/proxy --upstream and mcp URL: no password, no raw byte echoed")

    p = run(["nosuch"])
    if p.returncode != 2 or not p.stderr.startswith('error: unknown command "nosuch"') or \
            "hiccup --help" not in p.stderr or len(p.stderr.splitlines()) > 3:
        failures.append(f"hiccup nosuch: exit {p.returncode}, stderr {p.stderr!r}")
    print(f"{'ok  ' if not failures else 'FAIL'} hiccup nosuch: exit {p.returncode}")

    for command in sorted({c for _, c, _ in CASES}):
        p = run([command, "--help"])
        if p.returncode != 0 or not p.stdout.startswith(f"usage: hiccup {command}"):
            failures.append(f"hiccup {command} --help: exit {p.returncode}, stdout starts {p.stdout[:80]!r}")
    print(f"{len(CASES) + 1} usage errors and {len({c for _, c, _ in CASES})} --help texts checked")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
