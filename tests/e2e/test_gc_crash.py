"""Crash safety of the garbage collector (issue 11): 100 owners with 50 dependents each (5,000
ConfigMaps) are deleted in the background, and the server, collector and all, is killed with
SIGKILL three times while the cascade runs, each kill later in the cascade than the one
before, then restarted on the same data dir and port. The collector keeps no state of its own:
after the last restart the cascade must complete, and every object whose owner still exists
must still be there — 20 live owners with 10 dependents each, and dependents that had one
owner deleted and one kept, which lose only the reference to the deleted one."""

import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

NS = "cascade"
CMP = "/api/v1/namespaces/%s/configmaps" % NS
OWNERS, PER_OWNER = 100, 50
KEEPERS, PER_KEEPER = 20, 10
KILL_AT = (4000, 2800, 1600)  # doomed dependents left at each kill


class Conn:
    """One keep-alive HTTPS connection with the admin token."""

    def __init__(self, s):
        host = s.url.split("//")[1]
        self.c = http.client.HTTPSConnection(host, context=s._ssl, timeout=60)
        self.h = {"Authorization": "Bearer " + s.token, "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.c.request(method, path, json.dumps(body) if body is not None else None, self.h)
        r = self.c.getresponse()
        data = r.read()
        return r.status, (json.loads(data) if data else None)

    def close(self):
        self.c.close()


def create_all(s, items, threads=8):
    """POSTs every (name, labels, owners) ConfigMap; returns name -> uid."""
    out, errors, lock = {}, [], threading.Lock()

    def work(part):
        c = Conn(s)
        for name, labels, owners in part:
            md = {"name": name, "labels": labels}
            if owners:
                md["ownerReferences"] = owners
            code, obj = c.call("POST", CMP, {"metadata": md})
            with lock:
                if code == 201:
                    out[name] = obj["metadata"]["uid"]
                else:
                    errors.append((name, code))
        c.close()
    ts = [threading.Thread(target=work, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError("creates failed: %r" % errors[:5])
    return out


def ref(name, uid, block=False):
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid,
            "blockOwnerDeletion": block}


def names(s, selector):
    code, body = s.request("GET", CMP + "?labelSelector=" + selector, timeout=60)
    if code != 200:
        return None
    return {i["metadata"]["name"]: i for i in json.loads(body)["items"]}


def body(c):
    s = swtest.Server(verbose=1)
    s.start()
    code, _ = s.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    c.eq(code, 201, "namespace created")
    owners = create_all(s, [("owner-%d" % i, {"set": "owner"}, None) for i in range(OWNERS)] +
                        [("keeper-%d" % i, {"set": "keeper"}, None) for i in range(KEEPERS)])
    deps = [("dep-%d-%d" % (i, j), {"set": "doomed"}, [ref("owner-%d" % i, owners["owner-%d" % i])])
            for i in range(OWNERS) for j in range(PER_OWNER)]
    deps += [("kept-%d-%d" % (i, j), {"set": "kept"}, [ref("keeper-%d" % i, owners["keeper-%d" % i],
                                                          block=True)])
             for i in range(KEEPERS) for j in range(PER_KEEPER)]
    deps += [("both-%d" % i, {"set": "both"}, [ref("owner-%d" % i, owners["owner-%d" % i]),
                                                 ref("keeper-%d" % (i % KEEPERS),
                                                     owners["keeper-%d" % (i % KEEPERS)])])
             for i in range(OWNERS)]
    t0 = time.monotonic()
    create_all(s, deps)
    print("# created %d objects in %.1fs" % (len(owners) + len(deps), time.monotonic() - t0))
    doomed = OWNERS * PER_OWNER
    c.eq(len(names(s, "set%3Ddoomed")), doomed, "%d dependents to collect" % doomed)

    # the owners go (Background: removed at once; their dependents are the collector's work)
    conn = Conn(s)
    for i in range(OWNERS):
        code, _ = conn.call("DELETE", CMP + "/owner-%d" % i, {"propagationPolicy": "Background"})
        if code != 200:
            raise RuntimeError("delete owner-%d: %d" % (i, code))
    conn.close()

    for k, at in enumerate(KILL_AT):
        deadline = time.monotonic() + 120
        left = doomed
        while time.monotonic() < deadline:
            got = names(s, "set%3Ddoomed")
            left = len(got) if got is not None else left
            if 0 < left <= at:
                break
            if left == 0:
                break
            time.sleep(0.02)
        c.ok(0 < left < doomed, "kill %d lands mid-cascade (%d of %d left)" % (k + 1, left, doomed))
        s.kill()
        s.start()
        print("# kill %d at %d left, restarted" % (k + 1, left), flush=True)

    deadline = time.monotonic() + 180
    left = None
    while time.monotonic() < deadline:
        got = names(s, "set%3Ddoomed")
        left = len(got) if got is not None else left
        if left == 0:
            break
        time.sleep(0.2)
    c.eq(left, 0, "after the last restart the cascade completes")
    kept = names(s, "set%3Dkept")
    c.eq(len(kept), KEEPERS * PER_KEEPER, "every dependent of a live owner is still there")
    c.eq(len(names(s, "set%3Dkeeper")), KEEPERS, "the live owners are still there")
    c.eq(len(names(s, "set%3Downer")), 0, "the deleted owners stay deleted")
    both = names(s, "set%3Dboth")
    c.eq(len(both), OWNERS, "dependents with a live second owner are still there")
    deadline = time.monotonic() + 60
    while True:
        both = names(s, "set%3Dboth")
        refs = {len(o["metadata"].get("ownerReferences", [])) for o in both.values()}
        if refs == {1} or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    c.eq(refs, {1}, "... each keeping only the reference to its live owner")
    c.eq(s.stop(), 0, "the server stops cleanly")
    log = open(s.log_path, errors="replace").read()
    c.ok("ERROR: AddressSanitizer" not in log and "runtime error" not in log,
         "no sanitizer report in the server log")
    s.close()


if __name__ == "__main__":
    swtest.run("test_gc_crash", body)
