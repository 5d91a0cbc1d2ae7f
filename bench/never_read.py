#!/usr/bin/env python3
"""bench/never_read.py: clients that ask for a large answer and never read it.

Two rounds, each: opens CLIENTS connections to 127.0.0.1:PORT, 0.3 s apart, each POSTing one
Gemini stream request and reading nothing (receive buffer 4 KiB), prints the server's RSS
(/proc/PID/status) with them all open, waits WAIT_S seconds (the server's I/O timeout drops them)
and closes them. The allocator keeps freed pages, so the second round shows whether what the
first held was given back for reuse (RSS stays) or kept (RSS grows again). A benchmark helper of
bench/serve_bounds.sh, not a test.

usage: bench/never_read.py PORT CLIENTS SERVER_PID WAIT_S
"""
import socket
import sys
import time

port, clients, pid, wait_s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])


def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


body = b'{"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]}'
request = (b"POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
before = rss_mb()
for round_ in (1, 2):
    socks = []
    for _ in range(clients):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(request)
        socks.append(s)
        time.sleep(0.3)
    time.sleep(1)
    held = rss_mb()
    time.sleep(wait_s)
    for s in socks:
        s.close()
    print(f"round {round_}: {clients} clients that never read: RSS {before:.1f} MB before the first round, "
          f"{held:.1f} MB with them open ({(held - before) / clients:.1f} MB each over that), "
          f"{rss_mb():.1f} MB {wait_s:.0f} s later", flush=True)
