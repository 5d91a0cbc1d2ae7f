#!/usr/bin/env python3
"""bench/transport_cost.py: the server CPU of one answer over each transport of a format, side by
side with the same answer over SSE (PERFORMANCE.md "Targets": a WebSocket or event-stream answer
within 1.2x of the SSE answer's CPU on the same scenario; an MCP tools/call no more CPU than a
model request).

The same scenario (bench/transport/*.json: three text events and a stop finish) is answered over:
  sse        POST /v1/messages, Anthropic's SSE (anthropic_text.json)
  bedrock    POST /model/{id}/invoke-with-response-stream, AWS event-stream frames (same scenario)
  resp-sse   POST /v1/responses, the Responses SSE (responses_text.json)
  websocket  GET /v1/responses upgraded, one response.create frame per answer (same scenario)
  mcp        POST /mcp, one JSON-RPC tools/call of the scenario's tool per answer, in one MCP
             session (initialize and notifications/initialized first), answered as JSON
             (mcp_tool.json: the anthropic scenario plus the tool), paired with sse
by one client per transport on one keep-alive connection (one request at a time, as an agent sends
them), every server pinned to one core and the client to the other (taskset / sched_setaffinity).
A round starts a fresh `hiccup serve` per transport, all at once, throws WARMUP answers of each
away, then sends BLOCK answers to each in turn until each has answered ANSWERS, so that every
transport is measured on the same machine at the same moments (these machines drift: compare only
within one run). Server CPU = the sum of its threads' on-CPU time (/proc/PID/task/*/schedstat,
nanoseconds) around each block; utime + stime from /proc/PID/stat (clock ticks) is printed as a
cross-check. The order of the transports is reversed every other round; each pair's ratio is taken
within a round. Prints each round, then per transport the median µs CPU per answer and answers per
second, and each pair's median ratio.

A benchmark, not a test: never run in CI.

usage: bench/transport_cost.py [--hiccup build/hiccup] [--answers 5000] [--warmup 500]
                               [--rounds 4] [--block 250] [--transports sse,bedrock,resp-sse,websocket]
                               [--server-cpu 1] [--client-cpu 0] [--port 19460]
       bench/transport_cost.py drive TRANSPORT --port P [--answers N] [--warmup N]
           plays the client against a server already listening on P, prints its answers per
           second, then sends SIGTERM to its parent process: `sh -c 'bench/transport_cost.py drive
           bedrock --port P & exec hiccup serve bench/transport/anthropic_text.json --port P'` is a
           whole process (the server) that ends when the answers are done, for timing the server
           alone from outside (e.g. /usr/bin/time -v).
"""
import argparse
import base64
import glob
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = {
    "sse": "bench/transport/anthropic_text.json",
    "bedrock": "bench/transport/anthropic_text.json",
    "resp-sse": "bench/transport/responses_text.json",
    "websocket": "bench/transport/responses_text.json",
    "mcp": "bench/transport/mcp_tool.json",
}
PAIRS = [("bedrock", "sse"), ("websocket", "resp-sse"), ("mcp", "sse")]


def http_request(target, body):
    data = json.dumps(body, separators=(",", ":")).encode()
    return (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


REQUESTS = {
    "sse": http_request("/v1/messages", {
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
        "messages": [{"role": "user", "content": "Deploy."}]}),
    "bedrock": http_request("/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream", {
        "anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Deploy."}]}),
    "resp-sse": http_request("/v1/responses", {"model": "gpt-5", "input": "Deploy.", "stream": True}),
}
def mcp_request(body, session=None):
    data = json.dumps(body, separators=(",", ":")).encode()
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            + (f"Mcp-Session-Id: {session}\r\n" if session else "")
            + f"Content-Length: {len(data)}\r\n\r\n").encode() + data


WS_CREATE = json.dumps({"type": "response.create", "model": "gpt-5", "input": "Deploy."},
                       separators=(",", ":")).encode()


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the connection")
        self.buf += data

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out

    def http_answer(self, request):
        """Sends `request`, reads the chunked answer; returns its body's length."""
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("unexpected answer: " + head.decode(errors="replace"))
        if b"transfer-encoding: chunked" not in head.lower():
            raise RuntimeError("expected a chunked stream: " + head.decode(errors="replace"))
        size = 0
        while True:
            n = int(self.line().split(b";")[0], 16)
            self.take(n + 2)
            size += n
            if n == 0:
                return size

    def any_answer(self, request):
        """Sends `request`; reads an answer with a Content-Length or chunked body (or none, for a
        202); returns (head, body)."""
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lower = head.lower()
        if b"transfer-encoding: chunked" in lower:
            body = b""
            while True:
                n = int(self.line().split(b";")[0], 16)
                body += self.take(n + 2)[:n]
                if n == 0:
                    return head, body
        for line in lower.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                return head, self.take(int(line.split(b":", 1)[1]))
        return head, b""

    def mcp_session(self):
        """initialize, then notifications/initialized; returns the Mcp-Session-Id."""
        head, body = self.any_answer(mcp_request({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}))
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("initialize refused: " + head.decode(errors="replace"))
        session = None
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"mcp-session-id:"):
                session = line.split(b":", 1)[1].strip().decode()
        head, _ = self.any_answer(mcp_request({"jsonrpc": "2.0", "method": "notifications/initialized"}, session))
        if not head.startswith(b"HTTP/1.1 202"):
            raise RuntimeError("notifications/initialized: " + head.decode(errors="replace"))
        return session

    def mcp_answer(self, session, counter):
        """One tools/call; returns its body's length."""
        counter[0] += 1
        head, body = self.any_answer(mcp_request({"jsonrpc": "2.0", "id": counter[0], "method": "tools/call",
                                                  "params": {"name": "deploy", "arguments": {"env": "staging"}}}, session))
        if not head.startswith(b"HTTP/1.1 200") or b'"result"' not in body:
            raise RuntimeError("tools/call: " + head.decode(errors="replace") + body.decode(errors="replace")[:200])
        return len(body)

    def upgrade(self):
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError("upgrade refused: " + head.decode(errors="replace"))

    def ws_answer(self):
        """Sends one response.create (masked, as a client must), reads frames up to
        response.completed; returns the payload bytes read."""
        mask = os.urandom(4)
        n = len(WS_CREATE)
        head = bytes([0x81, 0x80 | n]) if n < 126 else bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(WS_CREATE)))
        size = 0
        while True:
            b0, b1 = self.take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.take(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.take(8))[0]
            payload = self.take(n)
            size += n
            if b0 & 0x0F != 1:
                raise RuntimeError(f"unexpected frame opcode {b0 & 0x0F}")
            if payload.startswith(b'{"type":"response.completed"'):
                return size
            if payload.startswith(b'{"type":"error"') or payload.startswith(b'{"type":"response.failed"'):
                raise RuntimeError("error frame: " + payload.decode(errors="replace"))


def client(transport, port):
    """A connected client for `transport`; returns a function playing one answer."""
    conn = Conn(port)
    if transport == "websocket":
        conn.upgrade()
        return conn, conn.ws_answer
    if transport == "mcp":
        session, counter = conn.mcp_session(), [0]
        return conn, lambda: conn.mcp_answer(session, counter)
    request = REQUESTS[transport]
    return conn, lambda: conn.http_answer(request)


def wait_port(port, proc=None):
    for _ in range(600):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"hiccup serve exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def start_server(args, transport, port):
    cmd = ["taskset", "-c", str(args.server_cpu), args.hiccup, "serve", os.path.join(ROOT, SCENARIO[transport]),
           "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    return proc


def stop_server(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def measure_round(args, transports, port):
    """One round: a fresh server per transport, all up at once; blocks of BLOCK answers go to each
    in turn, so that every transport sees the same machine; returns per transport its µs CPU per
    answer, answers per second and body bytes."""
    servers, clients, out = {}, {}, {}
    try:
        for i, t in enumerate(transports):
            servers[t] = start_server(args, t, port + i)
            clients[t] = client(t, port + i)
            size = 0
            for _ in range(args.warmup):
                size = clients[t][1]()
            out[t] = {"ns": 0, "ticks": 0, "wall": 0.0, "bytes": size}
        done = 0
        while done < args.answers:
            n = min(args.block, args.answers - done)
            for t in transports:
                pid, answer, o = servers[t].pid, clients[t][1], out[t]
                ns0, t0, w0 = cpu_ns(pid), cpu_ticks(pid), time.monotonic()
                for _ in range(n):
                    answer()
                w1, ns1, t1 = time.monotonic(), cpu_ns(pid), cpu_ticks(pid)
                o["ns"] += ns1 - ns0
                o["ticks"] += t1 - t0
                o["wall"] += w1 - w0
            done += n
    finally:
        for c in clients.values():
            c[0].sock.close()
        for proc in servers.values():
            stop_server(proc)
    hz = os.sysconf("SC_CLK_TCK")
    return {t: {"transport": t, "us": o["ns"] / 1e3 / args.answers, "us_ticks": o["ticks"] * 1e6 / hz / args.answers,
                "rps": args.answers / o["wall"], "bytes": o["bytes"]} for t, o in out.items()}


def drive(args):
    os.sched_setaffinity(0, {args.client_cpu})
    wait_port(args.port)
    conn, answer = client(args.transport, args.port)
    for _ in range(args.warmup):
        answer()
    w0 = time.monotonic()
    for _ in range(args.answers):
        answer()
    w1 = time.monotonic()
    conn.sock.close()
    print(f"{args.transport}: {args.answers} answers, {args.answers / (w1 - w0):.0f} answers/s", flush=True)
    os.kill(os.getppid(), signal.SIGTERM)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "drive":
        p = argparse.ArgumentParser(prog="transport_cost.py drive")
        p.add_argument("transport", choices=sorted(SCENARIO))
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--answers", type=int, default=20000)
        p.add_argument("--warmup", type=int, default=500)
        p.add_argument("--client-cpu", type=int, default=0)
        drive(p.parse_args(sys.argv[2:]))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hiccup", default=os.path.join(ROOT, "build", "hiccup"))
    p.add_argument("--answers", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=250)
    p.add_argument("--transports", default="sse,bedrock,resp-sse,websocket")
    p.add_argument("--server-cpu", type=int, default=1)
    p.add_argument("--client-cpu", type=int, default=0)
    p.add_argument("--port", type=int, default=19460)
    args = p.parse_args()
    transports = args.transports.split(",")
    for t in transports:
        if t not in SCENARIO:
            p.error(f"unknown transport {t!r}: expected one of {', '.join(sorted(SCENARIO))}")
    os.sched_setaffinity(0, {args.client_cpu})
    print(f"load before: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    rows = []
    port = args.port
    for r in range(args.rounds):
        order = transports if r % 2 == 0 else transports[::-1]
        result = measure_round(args, order, port)
        port += len(order)
        for t in order:
            m = result[t]
            m["round"] = r
            rows.append(m)
            print(f"round {r} {t:9}: {m['us']:6.1f} µs CPU/answer (ticks: {m['us_ticks']:6.1f}), "
                  f"{m['rps']:7.0f} answers/s, {m['bytes']} body bytes", flush=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    print(f"\nmedians over {args.rounds} rounds of {args.answers} answers:")
    for t in transports:
        us = [m["us"] for m in rows if m["transport"] == t]
        rps = [m["rps"] for m in rows if m["transport"] == t]
        print(f"  {t:9}: {statistics.median(us):6.1f} µs CPU/answer ({min(us):.1f}-{max(us):.1f}), "
              f"{statistics.median(rps):7.0f} answers/s")
    for a, b in PAIRS:
        if a in transports and b in transports:
            ratios = []
            for r in range(args.rounds):
                ma = [m for m in rows if m["round"] == r and m["transport"] == a]
                mb = [m for m in rows if m["round"] == r and m["transport"] == b]
                ratios.append(ma[0]["us"] / mb[0]["us"])
            print(f"  {a}/{b}: median ratio {statistics.median(ratios):.2f} "
                  f"(per round: {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
