#!/usr/bin/env python3
"""`hiccup mcp URL` (the stdio bridge) as a client that spawns it meets it. One check per ctest entry:

    mcp_cli.py --hiccup build/hiccup --work DIR CHECK

endpoint-down: nothing listens at URL: stdout holds only the request's JSON-RPC error (-32603,
    naming the endpoint), stderr names the endpoint, and the bridge exits 3, not 0.
not-json-rpc: URL names a session `hiccup serve` does not have, which answers with the control
    API's error envelope: that body never reaches stdout; the request's id gets a JSON-RPC error
    (-32603) naming HTTP 404, and the bridge exits 0 (the endpoint was reached).
"""
import json
import os
import signal
import socket
import subprocess
import sys
from cli_common import parse_args

INITIALIZE = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
SCENARIO = {"schema": 1, "name": "mcp-cli", "provider": "gemini", "prompt": "hi",
            "turns": [{"attempts": [{"events": [{"text": "hi"}, {"finish": "stop"}]}]}]}


def bridge(hiccup, url):
    p = subprocess.run([hiccup, "mcp", url, "--drain-s", "30"], input=json.dumps(INITIALIZE) + "\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    print("exit", p.returncode, "\nstdout:", p.stdout, "\nstderr:", p.stderr)
    return p.returncode, p.stdout, p.stderr


def free_port():
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def endpoint_down(hiccup, work):
    port = free_port()
    rc, out, err = bridge(hiccup, f"http://127.0.0.1:{port}/mcp")
    assert rc == 3, f"expected exit 3, got {rc}"
    lines = out.splitlines()  # MCP messages only: the initialize's JSON-RPC error, so the client is not left waiting
    assert len(lines) == 1, lines
    message = json.loads(lines[0])
    assert message["jsonrpc"] == "2.0" and message["id"] == 7 and message["error"]["code"] == -32603, message
    assert "nothing accepts connections at 127.0.0.1:%d" % port in message["error"]["message"], message
    assert f"1 of 1 request(s) found nothing accepting connections at http://127.0.0.1:{port}/mcp" in err, err


def not_json_rpc(hiccup, work):
    path = os.path.join(work, "scenario.json")
    with open(path, "w") as f:
        json.dump(SCENARIO, f)
    serve = subprocess.Popen([hiccup, "serve", path, "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        url = serve.stdout.readline().strip()
        rc, out, err = bridge(hiccup, url + "/s/no-such-session/mcp")
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)
    assert rc == 0, f"expected exit 0, got {rc}"
    lines = out.splitlines()
    assert len(lines) == 1, lines
    message = json.loads(lines[0])
    assert message["jsonrpc"] == "2.0" and message["id"] == 7, message
    assert message["error"]["code"] == -32603, message
    assert "HTTP 404" in message["error"]["message"], message
    assert "not JSON-RPC" in err, err


def main():
    a = parse_args(source=False, fresh=True, check_choices=["endpoint-down", "not-json-rpc"])
    {"endpoint-down": endpoint_down, "not-json-rpc": not_json_rpc}[a.check](a.hiccup, a.work)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
