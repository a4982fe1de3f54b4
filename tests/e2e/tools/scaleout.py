#!/usr/bin/python3
"""The clients of test_scale_out.sh, with the standard library only.

write: creates ConfigMaps NAME-0..N-1 one after another, each through the next server in turn;
  a server that fails (connection refused, reset, 5xx) is skipped and the same object is sent to
  the next one. An answer 409 AlreadyExists after an attempt whose outcome was unknown means that
  attempt applied: the object is read back and counted as acknowledged. Prints one line per
  acknowledged write: "<name> <resourceVersion>".
watch: follows the ConfigMaps of NS from resourceVersion FROM through one server, and when that
  server goes away resumes on the next one from the last event seen (what an informer does).
  Prints one line per event "<TYPE> <name> <resourceVersion> <server index>" until it has seen
  EXPECT distinct ADDED names or TIMEOUT passes; an ERROR event is printed and ends it.
pingpong: COUNT rounds on ConfigMap PREFIX through the first two servers A and B: A writes
  data.a=x, B writes y, and at once A writes x again (a PUT without resourceVersion, then a merge
  patch, by turns); a quorum read through B must then show x. A server that started from its
  recent copy of the object (x, stale after B's write) and took the write for "nothing
  changed" would leave y. Exits non-zero at the first such round.
"""

import argparse
import http.client
import json
import ssl
import sys
import time
import urllib.parse

CTX = ssl._create_unverified_context()  # each server has its own self-signed CA


def conn(url, timeout):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=CTX)


def request(url, token, method, path, body=None, timeout=10):
    c = conn(url, timeout)
    try:
        hdrs = {"Authorization": "Bearer " + token, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=hdrs)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def write(a):
    servers = a.servers.split(",")
    k = 0
    base = "/api/v1/namespaces/%s/configmaps" % a.ns
    for i in range(a.count):
        name = "%s-%d" % (a.prefix, i)
        unknown = False
        deadline = time.monotonic() + 60
        while True:
            if time.monotonic() > deadline:
                sys.exit("write %s: no server took it within 60 s" % name)
            url = servers[k % len(servers)]
            sent = True
            try:
                st, body = request(url, a.token, "POST", base,
                                   {"metadata": {"name": name}, "data": {"i": str(i)}})
            except ConnectionRefusedError:
                st, body, sent = 0, b"", False
            except (OSError, http.client.HTTPException):
                st, body = 0, b""
            if st == 201:
                rv = json.loads(body)["metadata"]["resourceVersion"]
                break
            if st == 409 and unknown:
                st, body = request(url, a.token, "GET", base + "/" + name)
                if st == 200:
                    rv = json.loads(body)["metadata"]["resourceVersion"]
                    break
            if st not in (0, 409) and st < 500:
                sys.exit("write %s through %s: HTTP %d %s" % (name, url, st, body[:300]))
            unknown = unknown or sent  # a reset or a 5xx may come after the write applied
            k += 1
            time.sleep(0.05)
        print(name, rv, flush=True)
        k += 1
        if a.pause:
            time.sleep(a.pause)


def pingpong(a):
    servers = a.servers.split(",")
    ca, cb = conn(servers[0], 10), conn(servers[1], 10)  # kept alive: rounds follow closely
    path = "/api/v1/namespaces/%s/configmaps/%s" % (a.ns, a.prefix)

    def send(c, method, body, ctype="application/json"):
        hdrs = {"Authorization": "Bearer " + a.token, "Accept": "application/json",
                "Content-Type": ctype}
        c.request(method, path, body=json.dumps(body).encode() if body else None, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        if r.status != 200:
            sys.exit("%s %s: %d %s" % (method, path, r.status, data[:200]))
        return json.loads(data)

    def full(v):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": a.prefix, "namespace": a.ns}, "data": {"a": v}}

    for i in range(a.count):
        send(ca, "PUT", full("x"))
        send(cb, "PUT", full("y"))
        if i % 2:
            got = send(ca, "PATCH", {"data": {"a": "x"}}, "application/merge-patch+json")
        else:
            got = send(ca, "PUT", full("x"))
        now = send(cb, "GET", None)
        if now["data"]["a"] != "x":
            sys.exit("round %d: A answered %s at %s but the object holds %s at %s" % (
                i, got["data"]["a"], got["metadata"]["resourceVersion"], now["data"]["a"],
                now["metadata"]["resourceVersion"]))
    print("rounds=%d" % a.count)


def watch(a):
    servers = a.servers.split(",")
    k = a.start % len(servers)
    last = a.from_rv
    seen = set()
    deadline = time.monotonic() + a.timeout
    while len(seen) < a.expect and time.monotonic() < deadline:
        url = servers[k]
        path = ("/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s&timeoutSeconds=60"
                % (a.ns, last))
        c = conn(url, 5)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + a.token,
                                            "Accept": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                raise OSError("HTTP %d" % r.status)
            while len(seen) < a.expect and time.monotonic() < deadline:
                line = r.readline()
                if not line:
                    print("watch on %s: end of stream" % url, file=sys.stderr, flush=True)
                    break
                ev = json.loads(line)
                obj = ev["object"]
                if ev["type"] == "ERROR":
                    print("ERROR", json.dumps(obj), k, flush=True)
                    return
                rv = obj["metadata"]["resourceVersion"]
                if ev["type"] == "BOOKMARK":
                    last = rv
                    continue
                print(ev["type"], obj["metadata"]["name"], rv, k, flush=True)
                last = rv
                if ev["type"] == "ADDED":
                    seen.add(obj["metadata"]["name"])
        except (OSError, http.client.HTTPException, ValueError) as e:
            print("watch on %s ended: %r" % (url, e), file=sys.stderr, flush=True)
        finally:
            c.close()
        if len(seen) < a.expect:
            k = (k + 1) % len(servers)  # resume on the next server
            time.sleep(0.2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["write", "watch", "pingpong"])
    p.add_argument("--servers", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--ns", default="default")
    p.add_argument("--prefix", default="cm")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--from-rv", default="0")
    p.add_argument("--expect", type=int, default=100)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    {"write": write, "watch": watch, "pingpong": pingpong}[a.mode](a)


if __name__ == "__main__":
    main()
