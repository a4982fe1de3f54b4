#!/usr/bin/env python3
"""evilregistry.py: a registry (OCI distribution API, read side only) that serves what a hostile
or broken registry could send, for tests of slipway's importer. It listens on 127.0.0.1 on a free
port (written to --port-file once listening) and serves, per repository name:

  bigsize     an image manifest whose two layers each claim 2^63-1 bytes
  badtime     an image whose config says "created": "not-a-time"
  fatenv      an image whose config carries 2 MB of Env
  wideindex   an OCI index of 33 platform manifests (each a small valid image)
  good        a small valid image
  stall       nothing: a manifest request gets no answer for 10 minutes
  slow        a manifest request is answered 404 after 3 s

Tags are "latest" for every repository. Manifests and blobs are served by digest too; every
digest matches its bytes. Every request is logged to --log as "METHOD PATH".
"""
import argparse
import hashlib
import http.server
import json
import sys
import threading
import time

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

BLOBS = {}      # digest -> bytes
MANIFESTS = {}  # digest -> (media type, bytes)
TAGS = {}       # repo -> digest of its latest


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def blob(data):
    d = digest(data)
    BLOBS[d] = data
    return d


def manifest(media_type, obj):
    data = json.dumps(obj).encode()
    d = digest(data)
    MANIFESTS[d] = (media_type, data)
    return d, len(data)


def image(config, layer_sizes=None, arch="amd64"):
    cfg = json.dumps(dict({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": []},
                           "config": {}}, **config)).encode()
    layer = b"\x1f\x8b" + b"\0" * 30
    ld = blob(layer)
    layers = [{"mediaType": OCI_LAYER, "digest": ld, "size": s}
              for s in (layer_sizes or [len(layer)])]
    return manifest(OCI_MANIFEST, {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                                   "config": {"mediaType": OCI_CONFIG, "digest": blob(cfg), "size": len(cfg)},
                                   "layers": layers})


def build():
    TAGS["bigsize"] = image({}, [2**63 - 1, 2**63 - 1])[0]
    TAGS["badtime"] = image({"created": "not-a-time"})[0]
    TAGS["fatenv"] = image({"config": {"Env": ["V%d=%s" % (i, "x" * 190) for i in range(10000)]}})[0]
    TAGS["good"] = image({"created": "2024-01-02T03:04:05Z"})[0]
    entries = []
    for i in range(33):
        d, n = image({"created": "2024-01-02T03:04:05Z"}, arch="arch%d" % i)
        entries.append({"mediaType": OCI_MANIFEST, "digest": d, "size": n,
                        "platform": {"architecture": "arch%d" % i, "os": "linux"}})
    TAGS["wideindex"] = manifest(OCI_INDEX, {"schemaVersion": 2, "mediaType": OCI_INDEX,
                                             "manifests": entries})[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, code, body=b"", ctype="application/json", extra=None, head=False):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def serve(self, head):
        with open(self.server.log, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts == ["v2"]:
            return self.send(200, b"{}", head=head)
        if len(parts) == 4 and parts[0] == "v2" and parts[1] == "stall":
            time.sleep(600)
            return None
        if len(parts) == 4 and parts[0] == "v2" and parts[1] == "slow":
            time.sleep(3)
        if len(parts) == 4 and parts[0] == "v2" and parts[2] == "manifests":
            ref = TAGS.get(parts[1]) if parts[3] == "latest" else parts[3]
            if ref in MANIFESTS:
                mt, data = MANIFESTS[ref]
                return self.send(200, data, mt, {"Docker-Content-Digest": ref}, head)
        if len(parts) == 4 and parts[0] == "v2" and parts[2] == "blobs" and parts[3] in BLOBS:
            return self.send(200, BLOBS[parts[3]], "application/octet-stream",
                             {"Docker-Content-Digest": parts[3]}, head)
        return self.send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', head=head)

    def do_GET(self):
        self.serve(False)

    def do_HEAD(self):
        self.serve(True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    build()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.log = a.log
    open(a.log, "w").close()
    with open(a.port_file, "w") as f:
        f.write(str(srv.server_address[1]))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
