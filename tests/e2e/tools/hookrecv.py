#!/usr/bin/env python3
"""hookrecv.py: a webhook receiver for slipway's rollout notifications (tests only).

Listens on 127.0.0.1 (--port, or a free one), writes the port to --port-file once listening,
and for every POST checks X-Slipway-Signature-256 (sha256=<hex HMAC-SHA256 of the body> under
--key): a good one is appended to --log as one JSON line {"delivery": ..., "record": ...} and
answered 204; a bad or missing one gets 401 and is logged to stderr. Standard library only.
"""
import argparse
import hashlib
import hmac
import http.server
import json
import socketserver
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--log", required=True)
    a = p.parse_args()
    key = a.key.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n)
            want = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
            got = self.headers.get("X-Slipway-Signature-256") or ""
            if not hmac.compare_digest(want, got):
                sys.stderr.write("bad signature: %r\n" % got)
                self.send_response(401)
                self.end_headers()
                return
            with open(a.log, "a") as f:
                f.write(json.dumps({"delivery": self.headers.get("X-Slipway-Delivery"),
                                    "record": json.loads(body)}) + "\n")
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.TCPServer(("127.0.0.1", a.port), Handler) as srv:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        import os
        os.rename(a.port_file + ".tmp", a.port_file)
        srv.serve_forever()


if __name__ == "__main__":
    main()
