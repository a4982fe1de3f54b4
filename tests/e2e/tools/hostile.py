#!/usr/bin/python3
"""Hostile clients for test_hardening.sh, with the standard library only. Each mode prints one
JSON object on stdout with what it saw.

bodies: CONNS connections at once, each sending a POST to PATH with Content-Length SIZE (and
  TOKEN as a bearer token when given), then its body in 64 KiB pieces, as fast as the server
  takes it; half of each body goes first, and the rest only once every connection sent its
  half, so the bodies are in flight together. Meanwhile the server's VmRSS (PID) is sampled.
  Prints {"rss_before_mb", "rss_peak_mb", "codes": {status: count}}.
hold: CONNS TCP connections from SOURCE (a loopback address), kept open for SECONDS, idle
  (not even a TLS handshake); a connection the server closes is opened again (RECONNECT).
  Prints {"accepted", "closed", "open", "open_at"}: how many stayed open for at least one
  second, how many the server closed, how many were open at the end, and REPORT_AT seconds
  after the last one was opened.
trickle: one TLS connection that sends a request line and then a header line every INTERVAL
  seconds, never ending the header (--body: a whole header of an anonymous POST /healthz, then
  its body a byte every INTERVAL seconds). Prints {"closed_after_s"}: when the server closed it (or
  null if it was still open after SECONDS).
keepalive: one TLS connection with TOKEN: GET /api, wait WAIT seconds, GET /api again
  on the same connection. Prints {"first", "second"} (status codes, or an error string).
"""

import argparse
import http.client
import json
import os
import select
import socket
import ssl
import threading
import time

CTX = ssl._create_unverified_context()


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def tls_connect(host, port, timeout, source=None):
    raw = socket.create_connection((host, port), timeout=timeout,
                                   source_address=(source, 0) if source else None)
    return CTX.wrap_socket(raw, server_hostname=host)


def read_status(s):
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def bodies(a):
    half = threading.Barrier(a.conns + 1, timeout=60)
    codes = {}
    lock = threading.Lock()

    def one():
        code = 0
        s = None
        waited = False
        try:
            s = tls_connect(a.host, a.port, 60)
            hdr = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n" % (
                a.path, a.host)
            if a.token:
                hdr += "Authorization: Bearer %s\r\n" % a.token
            hdr += "Content-Length: %d\r\n\r\n" % a.size
            s.sendall(hdr.encode())
            piece = b"x" * 65536
            sent = 0
            for phase in (a.size // 2, a.size):
                while sent < phase:
                    n = min(len(piece), phase - sent)
                    s.sendall(piece[:n])
                    sent += n
                if phase != a.size:
                    waited = True
                    half.wait()
        except (OSError, threading.BrokenBarrierError):
            pass
        finally:
            try:
                if not waited:
                    half.wait()
            except threading.BrokenBarrierError:
                pass
        if s:
            code = read_status(s)
            s.close()
        with lock:
            codes[code] = codes.get(code, 0) + 1

    before = rss_mb(a.pid)
    peak = before
    threads = [threading.Thread(target=one, daemon=True) for _ in range(a.conns)]
    for t in threads:
        t.start()
    released = False
    deadline = time.time() + a.seconds
    while any(t.is_alive() for t in threads) and time.time() < deadline:
        peak = max(peak, rss_mb(a.pid))
        if not released and half.n_waiting >= a.conns:
            peak = max(peak, rss_mb(a.pid))
            half.wait()
            released = True
        time.sleep(0.05)
    if not released:
        half.abort()
    for t in threads:
        t.join(5)
    peak = max(peak, rss_mb(a.pid))
    print(json.dumps({"rss_before_mb": round(before), "rss_peak_mb": round(peak),
                      "codes": {str(k): v for k, v in sorted(codes.items())}}))


def hold(a):
    socks = {}
    closed = 0
    start = time.time()

    def opened():
        try:
            s = socket.create_connection((a.host, a.port), timeout=2,
                                         source_address=(a.source, 0))
            s.setblocking(False)
            socks[s] = time.time()
        except OSError:
            pass

    for _ in range(a.conns):
        opened()
    opened_at = time.time()
    open_at = None
    accepted = set()
    while time.time() - start < a.seconds:
        if open_at is None and time.time() - opened_at >= a.report_at:
            open_at = len(socks)
        r, _, _ = select.select(list(socks), [], [], 0.2)
        now = time.time()
        for s in r:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed += 1
                del socks[s]
                s.close()
                if a.reconnect:
                    opened()
        for s, t in socks.items():
            if now - t >= 1.0:
                accepted.add(s.fileno())
        if os.path.exists(a.stop_file or "/nonexistent"):
            break
    print(json.dumps({"accepted": len(accepted), "closed": closed, "open": len(socks),
                      "open_at": open_at}))
    for s in socks:
        s.close()


def trickle(a):
    s = tls_connect(a.host, a.port, 5)
    if a.body:  # a whole header, then a body a byte at a time
        s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 16000\r\n\r\n")
    else:
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")
    start = time.time()
    closed = None
    s.settimeout(a.interval)
    i = 0
    while time.time() - start < a.seconds:
        try:
            data = s.recv(4096)
            if not data:
                closed = time.time() - start
                break
        except socket.timeout:
            pass
        except OSError:
            closed = time.time() - start
            break
        try:
            s.sendall(b"x" if a.body else b"X-Trickle-%d: a\r\n" % i)
        except OSError:
            closed = time.time() - start
            break
        i += 1
    s.close()
    print(json.dumps({"closed_after_s": None if closed is None else round(closed, 1)}))


def keepalive(a):
    c = http.client.HTTPSConnection(a.host, a.port, timeout=10, context=CTX)
    out = {}
    for name in ("first", "second"):
        try:
            c.request("GET", "/api", headers={"Authorization": "Bearer " + a.token})
            r = c.getresponse()
            r.read()
            out[name] = r.status
        except (OSError, http.client.HTTPException) as e:
            out[name] = "error: %s" % type(e).__name__
        if name == "first":
            time.sleep(a.wait)
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["bodies", "hold", "trickle", "keepalive"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/")
    p.add_argument("--token", default="")
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--size", type=int, default=0)
    p.add_argument("--pid", type=int, default=0)
    p.add_argument("--source", default="127.0.0.2")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--wait", type=float, default=3)
    p.add_argument("--reconnect", action="store_true")
    p.add_argument("--body", action="store_true", help="trickle: a body, not a header")
    p.add_argument("--report-at", type=float, default=1.0,
                   help="hold: report how many are open this long after all were opened")
    p.add_argument("--stop-file", default="")
    a = p.parse_args()
    {"bodies": bodies, "hold": hold, "trickle": trickle, "keepalive": keepalive}[a.mode](a)


if __name__ == "__main__":
    main()
