#!/usr/bin/env python3
"""`hiccup serve` never dies from what a client sends (issue 42, label `hostile`): one check per
ctest entry, each against a real `hiccup serve SCENARIO --journal FILE` on 127.0.0.1 over raw
sockets. Every check ends by asking GET /_hiccup/health and a provider request, stopping the server
with SIGINT and reading the --journal file: the server must still answer, exit 0 and leave a whole
JSON array.

  number-overflow     1e400 in every control-API body: 400 naming the pointer (was SIGABRT)
  scenario-text       a scenario sent as text that fails at a non-ASCII character: 400 (was SIGABRT)
  non-utf8-head       a byte 0xFF in a path, the version, Content-Length, Transfer-Encoding and a
                      chunk-size line: 4xx in a valid UTF-8 envelope (was SIGABRT)
  non-utf8-query      a byte 0xFF in a provider request's query: the journal GET and the --journal
                      file stay valid UTF-8 (the GET was SIGABRT, the file held only "[")
  random-bytes        seeded random bytes on many connections for a bounded time (2 s)
  credentials         ?key= in a query is journaled as REDACTED
  http10              an HTTP/1.0 client gets a stream without chunked coding, ended by FIN
  terminal-escapes    a control-API error quoting input carries no raw ESC byte
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
PROMPT = {"contents": [{"role": "user", "parts": [{"text": "Deploy."}]}]}
SCENARIO = {"schema": 1, "name": "clean", "provider": "gemini", "prompt": "Deploy.",
            "turns": [{"attempts": [{"events": [{"text": "Done."}, {"finish": "stop"}]}]}]}


class Server:
    def __init__(self, hiccup, work, name):
        self.scenario = os.path.join(work, "clean.json")
        with open(self.scenario, "w") as f:
            json.dump(SCENARIO, f)
        self.journal = os.path.join(work, name + "-journal.json")
        self.p = subprocess.Popen([hiccup, "serve", self.scenario, "--port", "0", "--journal", self.journal],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        base = self.p.stdout.readline().decode().strip()
        self.port = int(base.rsplit(":", 1)[1])

    def raw(self, data, timeout=5.0):
        """Sends `data` on a fresh connection, half-closes, returns every byte answered."""
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        except OSError:
            return b""
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out
                out += chunk
        except OSError:
            return b""
        finally:
            s.close()

    def request(self, method, path, body=None, version="HTTP/1.1"):
        """(status, headers bytes, body bytes) of one request with Connection: close."""
        payload = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        head = (f"{method} ".encode() + (path if isinstance(path, bytes) else path.encode()) +
                f" {version}\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode())
        return split(self.raw(head + payload))

    def alive(self):
        status, _, body = self.request("GET", "/_hiccup/health")
        return status == 200 and json_body(body).get("ok") is True

    def stop(self):
        """Stops with SIGINT; (exit code, stdout, stderr, journal entries or an error string)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            out, err = self.p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        try:
            with open(self.journal, encoding="utf-8") as f:
                entries = json.load(f)
        except (OSError, ValueError) as e:
            entries = f"{self.journal} is not a JSON array: {e}"
        return self.p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), entries


def split(answer):
    """(status, head, body) of an HTTP answer (body de-chunked when chunked); (0, b"", b"") if none."""
    if b"\r\n\r\n" not in answer:
        return 0, answer, b""
    head, body = answer.split(b"\r\n\r\n", 1)
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0, head, body
    if b"transfer-encoding: chunked" in head.lower():
        out = b""
        while body:
            line, _, rest = body.partition(b"\r\n")
            size = int(line.split(b";")[0], 16)
            if size == 0:
                break
            out += rest[:size]
            body = rest[size + 2:]
        body = out
    return status, head, body


def json_body(body):
    """The answer body as JSON, insisting on UTF-8 (raises on invalid bytes)."""
    return json.loads(body.decode("utf-8", errors="strict"))


def strings(j):
    """Every string value inside the JSON value `j`."""
    if isinstance(j, str):
        yield j
    elif isinstance(j, list):
        for v in j:
            yield from strings(v)
    elif isinstance(j, dict):
        for v in j.values():
            yield from strings(v)


def check_number_overflow(srv, fail):
    status, _, body = srv.request("POST", "/_hiccup/sessions", {"scenario": SCENARIO, "id": "n1"})
    if status != 201:
        fail(f"creating session n1: {status} {body[:200]!r}")
    bodies = [
        ("/_hiccup/sessions/n1/executions", b'{"name":"deploy","args":{"a":1e400}}', "/args/a"),
        ("/_hiccup/sessions/n1/outcome", b'{"outcome":"completed","x":[1,-1e999]}', "/x/1"),
        ("/_hiccup/sessions", b'{"scenario":' + json.dumps(SCENARIO).encode()[:-1] + b',"zz":1e400}}', "/scenario/zz"),
        ("/_hiccup/sessions", b'{"max_attempts":1e400}', "/max_attempts"),
    ]
    for path, body, pointer in bodies:
        status, _, answer = srv.request("POST", path, body)
        try:
            j = json_body(answer)
        except (ValueError, UnicodeDecodeError) as e:
            fail(f"POST {path} {body[:60]!r}: no JSON answer ({status}, {e})")
            continue
        pointers = [p.get("pointer") for p in j.get("error", {}).get("problems", [])]
        if status != 400 or pointer not in pointers:
            fail(f"POST {path}: expected 400 naming {pointer}, got {status} {answer[:300]!r}")


def check_scenario_text(srv, fail):
    texts = ['{"schema": 1, "name": é}', '{\u201cschema\u201d: 1}', '{"name": "x"} é', '{"turns": [\u00a0]}']
    for text in texts:
        status, _, answer = srv.request("POST", "/_hiccup/sessions", {"scenario": text})
        try:
            j = json_body(answer)
        except (ValueError, UnicodeDecodeError) as e:
            fail(f"scenario text {text!r}: no JSON answer ({status}, {e})")
            continue
        if status != 400 or j["error"]["code"] != "invalid_scenario":
            fail(f"scenario text {text!r}: expected 400 invalid_scenario, got {status} {answer[:300]!r}")


def check_non_utf8_head(srv, fail):
    cases = [
        b"GET /_hiccup/sessions/\xff HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /_hiccup/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /s/\xff/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        b"GET /_hiccup/health HTTP/1.\xff\r\nHost: x\r\n\r\n",
        b"POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 1\xff\r\n\r\n{}",
        b"POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\xff\r\n\r\n",
        b"POST /_hiccup/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\xff\r\n{}\r\n0\r\n\r\n",
        b"POST " + GEMINI.encode() + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nz\xc3\r\n",
    ]
    for raw in cases:
        status, _, answer = split(srv.raw(raw))
        try:
            json_body(answer)
        except (ValueError, UnicodeDecodeError) as e:
            fail(f"{raw[:50]!r}: expected an error envelope in valid UTF-8, got {status} {answer[:200]!r} ({e})")
            continue
        if not 400 <= status < 502:
            fail(f"{raw[:50]!r}: expected a 4xx or 501, got {status}")


def check_non_utf8_query(srv, fail):
    status, _, _ = srv.request("POST", GEMINI.encode() + b"&q=\xff\xfe", PROMPT)
    if status != 200:
        fail(f"provider request with 0xFF in its query: {status}")
    status, _, answer = srv.request("GET", "/_hiccup/sessions/default/journal")
    try:
        journal = json_body(answer)["journal"]
        if "%FF%FE" not in journal[-1]["target"]:
            fail(f"journal target: expected the bytes percent-encoded, found {journal[-1]['target']!r}")
    except (ValueError, UnicodeDecodeError, KeyError, IndexError) as e:
        fail(f"journal GET after 0xFF in a query: {status} {answer[:200]!r} ({e})")


def check_random_bytes(srv, fail):
    rng = random.Random(42)
    pieces = [b"GET ", b"POST ", b"HEAD ", b"/_hiccup/sessions", b"/_hiccup/health", b"/s/default", GEMINI.encode(),
              b"/v1/chat/completions", b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", b"Content-Length: ", b"Transfer-Encoding: chunked\r\n",
              b"\r\n", b"\r\n\r\n", b"{", b"}", b'"scenario"', b":", b"1e400", b"\xff", b"\xc3", b"\x1b[31m", b"0\r\n\r\n",
              b"5;ext\r\n", b"Expect: 100-continue\r\n", b"Connection: keep-alive\r\n"]
    deadline = time.monotonic() + 2.0
    sent = 0
    while time.monotonic() < deadline:
        data = b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                        for _ in range(rng.randrange(1, 60)))
        try:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=0.5)
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass
            s.close()
        except OSError as e:
            fail(f"connection {sent}: {e}")
            break
        sent += 1
        if srv.p.poll() is not None:
            fail(f"the server exited ({srv.p.returncode}) after {sent} random connections; the last sent {data!r}")
            break
    print(f"     {sent} random connections in 2 s")


def check_credentials(srv, fail):
    srv.request("POST", GEMINI + "&key=AIzaSECRET", PROMPT)
    _, _, answer = srv.request("GET", "/_hiccup/sessions/default/journal")
    if b"AIzaSECRET" in answer or b"key=REDACTED" not in answer:
        fail(f"journal: expected key=REDACTED and no secret, got {answer[:400]!r}")


def check_http10(srv, fail):
    answer = srv.raw(f"POST {GEMINI} HTTP/1.0\r\nHost: x\r\nContent-Length: {len(json.dumps(PROMPT))}\r\n\r\n".encode() +
                     json.dumps(PROMPT).encode())
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") or b"chunked" in head.lower() or b"data: " not in body:
        fail(f"HTTP/1.0 stream: expected 200 without chunked coding, got {answer[:300]!r}")


def check_terminal_escapes(srv, fail):
    scenario = json.loads(json.dumps(SCENARIO))
    scenario["turns"][0]["attempts"][0]["fault"] = {"kind": "\x1b]0;pwned\x07\x1b[31m"}
    for body in ({"scenario": scenario}, {"scenario": SCENARIO, "id": "\x1b[31mred"}):
        status, _, answer = srv.request("POST", "/_hiccup/sessions", body)
        try:
            text = "\n".join(strings(json_body(answer)))
        except (ValueError, UnicodeDecodeError) as e:
            fail(f"{body}: no JSON answer ({status}, {e})")
            continue
        if status != 400 or "\x1b" in text or "\x07" in text:
            fail(f"a control-API error quoting ESC: expected 400 with the ESC escaped, got {status} {text[:300]!r}")


CHECKS = {"number-overflow": check_number_overflow, "scenario-text": check_scenario_text,
          "non-utf8-head": check_non_utf8_head, "non-utf8-query": check_non_utf8_query,
          "random-bytes": check_random_bytes, "credentials": check_credentials, "http10": check_http10,
          "terminal-escapes": check_terminal_escapes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("check", choices=sorted(CHECKS))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failures = []
    srv = Server(args.hiccup, args.work, args.check)
    try:
        CHECKS[args.check](srv, failures.append)
        if srv.p.poll() is not None:
            failures.append(f"the server exited with {srv.p.returncode}")
        else:
            if not srv.alive():
                failures.append("GET /_hiccup/health did not answer 200 afterwards")
            status, _, body = srv.request("POST", GEMINI, PROMPT)
            if status != 200 or b"Done." not in body:
                failures.append(f"a provider request afterwards: {status} {body[:200]!r}")
    finally:
        code, out, err, entries = srv.stop()
    if code != 0:
        failures.append(f"hiccup serve exited {code}; stderr {err[-400:]!r}")
    if isinstance(entries, str):
        failures.append(entries)
    if "internal error" in out + err:
        failures.append(f"the server counted internal errors: {(out + err)[-400:]!r}")
    for f in failures:
        print("FAIL", f)
    print(f"{'ok  ' if not failures else 'FAIL'} {args.check}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
