"""Crash safety (issue 2): writers make acknowledged creates, CAS updates and
deletes of ConfigMaps while a watcher records events; the server is killed
with SIGKILL at random moments and restarted on the same data dir and port.

After each restart:
  - every acknowledged write is present with its value and resourceVersion;
    a write in flight at the kill may or may not have landed, and either
    outcome is accepted (but nothing else);
  - new writes get revisions above every revision seen before the kill;
and at the end the watcher, which always resumes from the last
resourceVersion it saw, has seen every event exactly once in increasing
order, including every acknowledged write, and replaying its events gives
exactly the final listed state.

Plain urllib + ssl with the kubeconfig's CA (each request is one connection,
so the threads share nothing but the Server's address)."""

import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

NS = "crash"
CM = "/api/v1/namespaces/%s/configmaps" % NS
KILLS = 4
WRITERS = 2
NAMES_PER_WRITER = 8
NET_ERRORS = (OSError, http.client.HTTPException, ValueError)


def cm_body(name, value, rv=None):
    md = {"name": name, "namespace": NS}
    if rv is not None:
        md["resourceVersion"] = str(rv)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"v": str(value)}}


def obj_rv(obj):
    return int(obj["metadata"]["resourceVersion"])


class NameState:
    """What one writer knows about one ConfigMap."""

    def __init__(self):
        self.present = False
        self.value = None
        self.rv = 0
        self.pending = None  # (op, value) whose outcome is unknown


class Writer(threading.Thread):
    """Writes its own names only, so it always knows the exact expected
    state of each (CAS updates make a lost write show up as a 409)."""

    def __init__(self, srv, idx, counter, errors):
        super().__init__(daemon=True)
        self.srv = srv
        self.names = {"w%d-%02d" % (idx, i): NameState() for i in range(NAMES_PER_WRITER)}
        self.counter = counter
        self.errors = errors
        self.go = threading.Event()
        self.idle = threading.Event()
        self.quit = False
        self.acks = []  # (rv, op, name, value) in ack order
        self.round_acks = []
        self.unknown = 0

    def next_value(self):
        with self.counter["lock"]:
            self.counter["n"] += 1
            return self.counter["n"]

    def run(self):
        while not self.quit:
            if not self.go.is_set():
                self.idle.set()
                self.go.wait(0.2)
                continue
            self.idle.clear()
            certain = [n for n, st in self.names.items() if st.pending is None]
            if certain:
                self.one_op(random.choice(certain))

    def one_op(self, name):
        st = self.names[name]
        value = self.next_value()
        if not st.present:
            op, args = "create", ("POST", CM, cm_body(name, value))
        elif random.random() < 0.1:
            op = "delete"
            args = ("DELETE", "%s/%s" % (CM, name),
                    {"kind": "DeleteOptions", "apiVersion": "v1",
                     "preconditions": {"resourceVersion": str(st.rv)}})
        else:
            op, args = "update", ("PUT", "%s/%s" % (CM, name), cm_body(name, value, st.rv))
        try:
            code, raw = self.srv.request(*args, timeout=10)
        except NET_ERRORS:
            st.pending = (op, value)
            self.unknown += 1
            return
        if code not in (200, 201):
            self.errors.append("%s %s -> %d %s" % (op, name, code, raw[:200]))
            return
        if op == "delete":
            st.present, st.value = False, None
            self.acks.append((None, op, name, None))
            return
        rv = obj_rv(json.loads(raw))
        st.present, st.value, st.rv = True, str(value), rv
        self.acks.append((rv, op, name, str(value)))
        self.round_acks.append(rv)

    def pause(self):
        self.go.clear()
        if not self.idle.wait(15):
            raise RuntimeError("writer did not pause")


class Watcher(threading.Thread):
    """Watches the namespace forever, resuming from the last RV it saw."""

    def __init__(self, srv, start_rv):
        super().__init__(daemon=True)
        self.srv = srv
        self.last = start_rv
        self.start_rv = start_rv
        self.events = []  # (rv, type, name, value or None)
        self.bookmarks = 0
        self.connects = 0
        self.errors = []
        self.quit = False

    def run(self):
        while not self.quit:
            path = "%s?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=%d" % (
                CM, self.last)
            try:
                resp = self.srv.open_stream(path, timeout=10)
            except NET_ERRORS:
                time.sleep(0.05)
                continue
            self.connects += 1
            try:
                for line in resp:
                    self.on_line(line)
            except NET_ERRORS:
                pass  # killed mid-stream: resume from self.last
            finally:
                resp.close()

    def on_line(self, line):
        ev = json.loads(line)
        obj = ev["object"]
        if ev["type"] == "ERROR":
            self.errors.append("ERROR event: %s" % obj.get("message"))
            return
        rv = obj_rv(obj)
        if ev["type"] == "BOOKMARK":
            self.bookmarks += 1
            if rv < self.last:
                self.errors.append("bookmark RV %d behind last event %d" % (rv, self.last))
            self.last = max(self.last, rv)
            return
        value = (obj.get("data") or {}).get("v")
        self.events.append((rv, ev["type"], obj["metadata"]["name"], value))
        self.last = rv


def list_state(srv):
    code, raw = srv.request("GET", CM)
    if code != 200:
        raise RuntimeError("list failed: %d %s" % (code, raw[:200]))
    lst = json.loads(raw)
    # the namespace's kube-root-ca.crt (the namespace controller's) is not the test's
    items = {i["metadata"]["name"]: (i["data"]["v"], obj_rv(i)) for i in lst["items"]
             if i["metadata"]["name"] != "kube-root-ca.crt"}
    return items, int(lst["metadata"]["resourceVersion"])


def verify_names(c, writers, items, round_no):
    """Every acknowledged write present; in-flight ones either way. Then
    adopts the observed state so the next round starts certain."""
    bad = []
    for w in writers:
        for name, st in w.names.items():
            got = items.get(name)
            want = (st.value, st.rv) if st.present else None
            if st.pending is None:
                if got != want:
                    bad.append("%s: got %r, want %r" % (name, got, want))
            else:
                op, value = st.pending
                landed = None if op == "delete" else str(value)
                ok = got == want or (landed is None and got is None) or (
                    got is not None and got[0] == landed and got[1] > st.rv)
                if not ok:
                    bad.append("%s (%s %s in flight): got %r, want %r or it" % (name, op, value, got, want))
            # Adopt what the server has, so one failure does not cascade.
            st.pending = None
            st.present = got is not None
            st.value, st.rv = (got if got else (None, st.rv))
    ours = {n for w in writers for n in w.names}
    extra = sorted(set(items) - ours)
    c.ok(not bad and not extra,
         "restart %d: every acknowledged write present with its value and RV" % round_no,
         "; ".join(bad[:5]) + (" extra: %s" % extra if extra else ""))


def one_round(c, srv, writers, watcher, round_no, floor):
    """Writes for a random while, SIGKILLs, restarts, verifies; returns the
    highest revision seen so far (new writes must go above it)."""
    for w in writers:
        w.round_acks = []
        w.go.set()
    time.sleep(random.uniform(0.5, 1.5))
    srv.kill()
    for w in writers:
        w.pause()
    acks = [rv for w in writers for rv in w.round_acks]
    c.ok(acks, "round %d: writers got acknowledgements (%d)" % (round_no, len(acks)))
    c.ok(all(rv > floor for rv in acks),
         "round %d: every new RV is above everything seen before the previous kill (%d)" % (round_no, floor),
         sorted(acks)[:3])
    c.ok(all(list(w.round_acks) == sorted(set(w.round_acks)) for w in writers),
         "round %d: each writer's acknowledged RVs strictly increase" % round_no)
    t0 = time.monotonic()
    srv.start()
    print("# restart %d in %.2fs (%d writes acknowledged this round, %d in flight so far)"
          % (round_no, time.monotonic() - t0, len(acks), sum(w.unknown for w in writers)), flush=True)
    items, list_rv = list_state(srv)
    top_ack = max([rv for w in writers for rv, *_ in w.acks if rv] or [0])
    c.ok(list_rv >= top_ack, "restart %d: list RV %d >= last acknowledged RV %d" % (round_no, list_rv, top_ack))
    verify_names(c, writers, items, round_no)
    seen = [top_ack, list_rv] + [rv for _, rv in items.values()] + [e[0] for e in watcher.events]
    return max(seen)


def verify_watch(c, writers, watcher, items):
    evs = watcher.events
    rvs = [e[0] for e in evs]
    c.ok(not watcher.errors, "watcher: no ERROR events", watcher.errors[:3])
    c.ok(all(a < b for a, b in zip(rvs, rvs[1:])) and all(r > watcher.start_rv for r in rvs),
         "watcher: %d events over %d connections, RVs strictly increasing (each exactly once)"
         % (len(evs), watcher.connects))
    by_rv = {e[0]: e for e in evs}
    missing, wrong = [], []
    for w in writers:
        for rv, op, name, value in w.acks:
            if op == "delete":
                continue  # the tombstone has its own revision; checked by replay
            e = by_rv.get(rv)
            want_type = "ADDED" if op == "create" else "MODIFIED"
            if e is None:
                missing.append(rv)
            elif (e[1], e[2], e[3]) != (want_type, name, value):
                wrong.append((rv, e, op, value))
    c.ok(not missing, "watcher: every acknowledged write's RV delivered", sorted(missing)[:10])
    c.ok(not wrong, "watcher: each delivered event matches the acknowledged write", wrong[:3])
    dels = sum(1 for w in writers for a in w.acks if a[1] == "delete")
    c.eq(sum(1 for e in evs if e[1] == "DELETED") >= dels, True,
         "watcher: at least one DELETED per acknowledged delete (%d)" % dels)
    state = {}
    for rv, ty, name, value in evs:
        if name == "kube-root-ca.crt":
            continue  # the namespace controller's, not listed (list_state)
        if ty == "DELETED":
            state.pop(name, None)
        else:
            state[name] = (value, rv)
    c.eq(state, items, "watcher: replaying the events gives the final listed state")


def body(c):
    seed = int(os.environ.get("SW_CRASH_SEED") or time.time_ns() % 1000000)
    print("# seed %d (rerun with SW_CRASH_SEED=%d)" % (seed, seed), flush=True)
    random.seed(seed)
    # full: fsync per commit (the default); normal: WAL without fsync, which
    # must survive a process crash just the same.
    for sync, kills in (("full", KILLS), ("normal", 3)):
        c.section("--store-sync %s, %d kills" % (sync, kills))
        crash_run(c, sync, kills)


def crash_run(c, sync, kills):
    with swtest.Server(verbose=0, args=["--store-sync", sync]) as srv:
        srv.start()
        code, raw = srv.request("POST", "/api/v1/namespaces",
                                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        c.eq(code, 201, "create namespace %s" % NS)
        _, list_rv = list_state(srv)
        counter = {"lock": threading.Lock(), "n": 0}
        errors = []
        writers = [Writer(srv, i, counter, errors) for i in range(WRITERS)]
        watcher = Watcher(srv, list_rv)
        watcher.start()
        for w in writers:
            w.start()
        floor = list_rv
        for r in range(1, kills + 1):
            floor = one_round(c, srv, writers, watcher, r, floor)
        # A last round of writes without a kill, checked the same way.
        for w in writers:
            w.round_acks = []
            w.go.set()
        time.sleep(0.5)
        for w in writers:
            w.pause()
        acks = [rv for w in writers for rv in w.round_acks]
        c.ok(acks and all(rv > floor for rv in acks),
             "after the last restart: new RVs above everything seen before (%d)" % floor)
        items, list_rv = list_state(srv)
        verify_names(c, writers, items, kills + 1)
        c.ok(not errors, "writers: no unexpected HTTP errors (a 409 would mean a lost write)", errors[:3])
        top = max([rv for _, rv in items.values()] + [rv for w in writers for rv, *_ in w.acks if rv])
        deadline = time.monotonic() + 10
        while watcher.last < top and time.monotonic() < deadline:
            time.sleep(0.05)
        c.ok(watcher.last >= top, "watcher caught up to RV %d (at %d)" % (top, watcher.last))
        watcher.quit = True
        for w in writers:
            w.quit = True
        verify_watch(c, writers, watcher, items)
        print("# %d writes acknowledged, %d in flight at a kill, %d watch events, %d bookmarks"
              % (sum(len(w.acks) for w in writers), sum(w.unknown for w in writers),
                 len(watcher.events), watcher.bookmarks), flush=True)
        rc = srv.stop()
        if not c.eq(rc, 0, "server exits 0 on SIGTERM (no sanitizer report)"):
            print(srv.log_tail())
        watcher.join(15)
        for w in writers:
            w.join(5)


if __name__ == "__main__":
    swtest.run("test_crash", body)
