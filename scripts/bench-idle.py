#!/usr/bin/python3
"""bench-idle.py HOST:PORT PID [N]: opens N keep-alive connections to a cairn server, sends
one request on each (GET /minio/health/live) and keeps them open and idle, then reports the
server's resident memory (VmRSS, from /proc/PID/status) before and after, and per
connection. Proves that idle connections cost little (issue 2: 10,000 under 100 MiB).
Bounded: N <= 20000, total run < 60 s. Loopback only."""
import os
import resource
import socket
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    pid = int(sys.argv[2])
    n = min(int(sys.argv[3]) if len(sys.argv) > 3 else 10000, 20000)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 100), hard))
    before = rss_kib(pid)
    req = f"GET /minio/health/live HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    socks, t0 = [], time.time()
    for i in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(req)
        socks.append(s)
        if time.time() - t0 > 45:
            break
    ok = 0
    for s in socks:
        data = s.recv(4096)
        if data.startswith(b"HTTP/1.1 200"):
            ok += 1
    time.sleep(1.0)
    after = rss_kib(pid)
    # still alive and served?
    alive = 0
    for s in socks[: min(100, len(socks))]:
        s.sendall(req)
        if s.recv(4096).startswith(b"HTTP/1.1 200"):
            alive += 1
    for s in socks:
        s.close()
    print(f"idle connections: {len(socks)} opened, {ok} answered, {alive}/100 still served after idling")
    print(f"server RSS: before {before / 1024:.1f} MiB, with {len(socks)} idle connections "
          f"{after / 1024:.1f} MiB, {(after - before) * 1024 / max(1, len(socks)):.0f} bytes per connection")
    # the bound: what the idle connections cost, not the RSS the server had already
    return 0 if ok == len(socks) and (after - before) / 1024 < 100 else 1


if __name__ == "__main__":
    sys.exit(main())
