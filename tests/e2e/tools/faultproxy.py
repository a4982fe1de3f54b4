#!/usr/bin/env python3
"""faultproxy.py: an HTTP reverse proxy in front of a registry that injects faults.

Listens on 127.0.0.1 (a free port unless --port is given; the port is written to --port-file
once listening) and forwards every request to --upstream unchanged: method, path, body and
headers (Accept, Authorization, ...), answering with the upstream's status, headers
(Docker-Content-Digest, Content-Type, Content-Length, WWW-Authenticate, ...) and body.

Faults are rules, tried in order; the first rule whose regex matches the request path (with
its query) and that has faults left applies:

  --rule MODE COUNT REGEX   COUNT: how many matching requests get the fault ("always": all)

MODE is one of
  429        answer 429 Too Many Requests with Retry-After: 1 (429:N: Retry-After: N)
  500, 503   answer that status with a distribution error body
  baddigest  a GET answered 200 by the upstream gets its body changed (one extra byte) while
             Docker-Content-Digest stays the upstream's, so the digest no longer matches
             (HEAD and non-200 answers are forwarded and do not count)
  oversize   answer 200 with a well-formed OCI image manifest of 1.2 MiB, its own digest in
             Docker-Content-Digest (HEAD: the same headers, no body)
  badauth    answer 401 with a malformed WWW-Authenticate header (--bad-challenge)
  redirect   answer 307 with Location: --redirect-to followed by the request's path (a
             registry sending blob and manifest GETs to a CDN); a request without an
             Authorization header is forwarded instead (the upstream challenges it)

--upstream-auth USER:PASS makes this proxy call the upstream with those basic credentials
whatever the client sent (a CDN serving pre-signed URLs); with --log-auth each log line ends
with "auth=yes" or "auth=no": whether the client sent an Authorization header.

Every request is logged to --log as "TIME METHOD PATH STATUS FAULT" (TIME: seconds since the
epoch with milliseconds; FAULT "-" when forwarded).
Standard library only.
"""
import argparse
import base64
import hashlib
import http.client
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
              "trailer", "upgrade", "proxy-authenticate", "proxy-authorization"}
MODES = ("429", "500", "503", "baddigest", "oversize", "badauth", "redirect")
OVERSIZE_BYTES = 1200 * 1024


class Rule:
    def __init__(self, mode, count, regex):
        self.retry_after = "1"
        if mode.startswith("429:") and mode[4:].isdigit():
            mode, self.retry_after = "429", mode[4:]
        if mode not in MODES:
            raise ValueError("unknown mode %r (one of %s)" % (mode, ", ".join(MODES)))
        self.mode = mode
        self.left = None if count == "always" else int(count)
        self.regex = re.compile(regex)

    def take(self):
        """True when this rule still has a fault to give (and uses it up)."""
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def oversized_manifest():
    body = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + "0" * 64, "size": 2},
        "layers": [],
        "annotations": {"io.slipway.test.padding": "x" * OVERSIZE_BYTES},
    }, separators=(",", ":")).encode()
    return body, "sha256:" + hashlib.sha256(body).hexdigest()


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, args):
        super().__init__(addr, Handler)
        up = urllib.parse.urlsplit(args.upstream)
        self.up_host = up.hostname
        self.up_port = up.port or 80
        self.rules = [Rule(m, c, r) for m, c, r in args.rule or []]
        self.bad_challenge = args.bad_challenge
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.redirect_to = args.redirect_to
        self.upstream_auth = args.upstream_auth
        self.log_auth = args.log_auth
        self.oversize = oversized_manifest()

    def pick(self, path, method):
        with self.lock:
            for rule in self.rules:
                if not rule.regex.search(path):
                    continue
                if rule.mode == "baddigest" and method != "GET":
                    continue
                if rule.take():
                    return rule
        return None

    def record(self, method, path, status, fault, auth=False):
        if self.log:
            tail = (" auth=yes" if auth else " auth=no") if self.log_auth else ""
            with self.lock:
                self.log.write("%.3f %s %s %d %s%s\n" % (time.time(), method, path, status, fault,
                                                        tail))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep stderr quiet; --log has the requests
        pass

    def do_GET(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_PATCH(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def reply(self, status, headers, body, fault):
        # Recorded first: a client that refuses the body (an oversized manifest) may close the
        # connection while it is written, and the request still happened.
        self.server.record(self.command, self.path, status, fault,
                           "Authorization" in self.headers)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error_reply(self, status, code, message, extra, fault):
        body = json.dumps({"errors": [{"code": code, "message": message}]}).encode()
        self.reply(status, [("Content-Type", "application/json")] + extra, body, fault)

    def handle_any(self):
        rule = self.server.pick(self.path, self.command)
        mode = rule.mode if rule else None
        if mode == "429":
            return self.error_reply(429, "TOOMANYREQUESTS", "too many requests",
                                    [("Retry-After", rule.retry_after)], mode)
        if mode in ("500", "503"):
            return self.error_reply(int(mode), "UNAVAILABLE", "injected failure", [], mode)
        if mode == "badauth":
            return self.error_reply(401, "UNAUTHORIZED", "authentication required",
                                    [("WWW-Authenticate", self.server.bad_challenge)], mode)
        if mode == "redirect" and "Authorization" not in self.headers:
            mode = None  # the upstream challenges first: only a caller with credentials moves on
        if mode == "redirect":
            return self.reply(307, [("Location", self.server.redirect_to + self.path)], b"", mode)
        if mode == "oversize":
            body, digest = self.server.oversize
            return self.reply(200, [("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                                    ("Docker-Content-Digest", digest)], body, mode)
        self.forward(mode)

    def forward(self, mode):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if self.server.upstream_auth:
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = "Basic " + base64.b64encode(
                self.server.upstream_auth.encode()).decode()
        conn = http.client.HTTPConnection(self.server.up_host, self.server.up_port, timeout=30)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            out = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
        except OSError as e:
            conn.close()
            return self.error_reply(502, "UNAVAILABLE", "upstream: %s" % e, [], "upstream-down")
        finally:
            conn.close()
        fault = "-"
        if mode == "baddigest" and resp.status == 200:
            data = data + b"\n"
            fault = mode
        self.send_response(resp.status)
        for k, v in out:
            if k.lower() == "content-length" and self.command != "HEAD":
                continue
            self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.server.record(self.command, self.path, resp.status, fault,
                           "Authorization" in self.headers)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--upstream", required=True, help="http://HOST:PORT of the registry")
    p.add_argument("--port", type=int, default=0, help="listen port (default: a free one)")
    p.add_argument("--port-file", help="write the listening port here")
    p.add_argument("--rule", nargs=3, action="append", metavar=("MODE", "COUNT", "REGEX"))
    p.add_argument("--bad-challenge", default='Bearer realm="http://127.0.0.1:1/token',
                   help="the WWW-Authenticate value badauth sends (default: unterminated quote)")
    p.add_argument("--log", help="append one line per request here")
    p.add_argument("--redirect-to", default="", help="http://HOST:PORT for redirect rules")
    p.add_argument("--upstream-auth", default="", help="USER:PASS sent to the upstream")
    p.add_argument("--log-auth", action="store_true", help="log whether Authorization came")
    args = p.parse_args()
    try:
        server = Proxy(("127.0.0.1", args.port), args)
    except (ValueError, re.error) as e:
        sys.exit("faultproxy: %s" % e)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
