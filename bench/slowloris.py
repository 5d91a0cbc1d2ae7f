#!/usr/bin/env python3
"""bench/slowloris.py: many clients trickling a never-ending request head into a server.

Opens CLIENTS connections to 127.0.0.1:PORT; each sends one byte of an endless header every
INTERVAL seconds for SECONDS seconds. A connection the server ends (408, FIN, reset) is counted by
what it read and opened again at once, so the slots stay taken as far as the client can manage.
Prints one JSON line at the end: opened, reconnects, answers by status line, errors.
A benchmark helper of bench/serve_bounds.sh, not a test; 127.0.0.1 only.

usage: bench/slowloris.py PORT CLIENTS INTERVAL_S SECONDS
"""
import collections
import errno
import json
import socket
import sys
import time

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class Slow:
    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sent = 0
        self.read = b""
        try:
            self.sock.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass

    def next_byte(self):
        return HEAD[self.sent:self.sent + 1] if self.sent < len(HEAD) else b"a"


def main():
    port, clients, interval, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    conns = []
    errors = collections.Counter()
    answers = collections.Counter()
    reconnects = 0
    for _ in range(clients):
        try:
            conns.append(Slow(port))
        except OSError as e:
            errors[errno.errorcode.get(e.errno, str(e.errno))] += 1
    print(json.dumps({"opened": len(conns)}), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick = time.monotonic()
        for i, c in enumerate(conns):
            ended = False
            try:
                data = c.sock.recv(65536)
                if data:
                    c.read += data
                else:
                    ended = True
            except BlockingIOError:
                pass
            except OSError as e:
                if e.errno != errno.ENOTCONN:  # ENOTCONN: still connecting
                    errors[errno.errorcode.get(e.errno, str(e.errno))] += 1
                    ended = True
            if not ended:
                try:
                    if c.sock.send(c.next_byte()) == 1:
                        c.sent += 1
                except BlockingIOError:
                    pass  # still connecting, or the server is not reading: try next tick
                except OSError as e:
                    if e.errno not in (errno.ENOTCONN,):
                        errors[errno.errorcode.get(e.errno, str(e.errno))] += 1
                        ended = True
            if ended:
                answers[c.read.split(b"\r\n", 1)[0].decode("latin-1") or "(nothing)"] += 1
                c.sock.close()
                try:
                    conns[i] = Slow(port)
                    reconnects += 1
                except OSError as e:
                    errors[errno.errorcode.get(e.errno, str(e.errno))] += 1
        time.sleep(max(0.0, interval - (time.monotonic() - tick)))
    print(json.dumps({"opened": len(conns), "reconnects": reconnects, "answers": answers, "errors": errors}), flush=True)


if __name__ == "__main__":
    main()
