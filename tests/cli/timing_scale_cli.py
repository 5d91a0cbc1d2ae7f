#!/usr/bin/env python3
"""`--timing-scale X` on `hiccup run` and `hiccup serve`: a scenario's event timing (`delay_s`)
played at X times in place of its own `timing.scale` (docs/SCENARIO-FORMAT.md "Event timing").
One check per ctest entry:

    timing_scale_cli.py --hiccup build/hiccup --work DIR CHECK

run: in memory (virtual time, no real wait), a recorded delay of 100 s times out every attempt
    against the runtime's 60 s idle timeout (exit 1); at --timing-scale 0.1 it is a 10 s delay and
    the run passes (exit 0); the replay line carries the option.
serve: a delay of an hour, served at --timing-scale -0 (read as 0, and listed as 0), answers at once.
"""
import http.client
import json
import os
import signal
import subprocess
import time
from cli_common import parse_args

SCENARIO = {
    "schema": 1,
    "name": "timed",
    "provider": "gemini",
    "prompt": "Say hello.",
    "turns": [{"attempts": [{"events": [{"text": "Hello.", "delay_s": 100}, {"finish": "stop"}]}]}],
    "expect": {"outcome": "completed", "final_text": "Hello."},
}


def write(work, scenario):
    path = os.path.join(work, scenario["name"] + ".json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    return path


def check_run(hiccup, work):
    path = write(work, SCENARIO)

    def run(*extra):
        report = os.path.join(work, "reports-" + "-".join(extra or ("default",)))
        p = subprocess.run([hiccup, "run", path, "--transport", "memory", "--report-dir", report, *extra],
                           capture_output=True, text=True, timeout=120)
        return p, report

    p, _ = run()
    assert p.returncode == 1, f"as recorded: exit {p.returncode}, expected 1 (idle timeouts)\n{p.stdout}{p.stderr}"
    p, report = run("--timing-scale", "0.1")
    assert p.returncode == 0, f"--timing-scale 0.1: exit {p.returncode}\n{p.stdout}{p.stderr}"
    with open(os.path.join(report, "summary.json")) as f:
        summary = json.load(f)
    replays = [c.get("replay", "") for c in summary["cases"]]
    assert replays and all("--timing-scale 0.1" in r for r in replays), replays
    p, _ = run("--timing-scale", "fast")
    assert p.returncode == 2 and '--timing-scale expects a number in 0..1000000, found "fast"' in p.stderr, p.stderr


def check_serve(hiccup, work):
    slow = dict(SCENARIO, name="an-hour")
    slow["turns"] = [{"attempts": [{"events": [{"text": "Hello.", "delay_s": 3600}, {"finish": "stop"}]}]}]
    path = write(work, slow)
    # "-0" is 0: played as 0 and echoed as 0, never as -0.0.
    serve = subprocess.Popen([hiccup, "serve", path, "--timing-scale", "-0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        url = serve.stdout.readline().strip()
        host, port = url.split("//", 1)[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=20)
        started = time.monotonic()
        conn.request("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                     json.dumps({"contents": [{"role": "user", "parts": [{"text": "Say hello."}]}]}),
                     {"Content-Type": "application/json"})
        body = conn.getresponse().read().decode()
        took = time.monotonic() - started
        assert "Hello." in body, body
        assert took < 10, f"answered after {took:.1f} s"
        conn.request("GET", "/_hiccup/sessions")
        listing = conn.getresponse().read().decode()
        assert '"timing_scale":-0' not in listing.replace(" ", ""), listing
        scales = [s["timing_scale"] for s in json.loads(listing)["sessions"]]
        assert scales == [0], listing
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)


def main():
    a = parse_args(source=False, fresh=True, check_choices=["run", "serve"])
    {"run": check_run, "serve": check_serve}[a.check](a.hiccup, a.work)
    print("ok")


if __name__ == "__main__":
    main()
