#!/usr/bin/env bash
# bench/triggers.sh: image-change triggers at scale (issue text: "10,000 Deployments spread over
# 1,000 streams"), in one run. `slipway server` runs its import, imagetrigger,
# garbagecollector and namespace controllers (no build, managedimage or deployment controller)
# with --scheduled-import-interval 86400, so only the benchmark's own actions import, and --v 2,
# so every request is in its log (the writes are counted there, and a notification's arrival is
# timed there). Debian's docker-registry (tests/lib/registry.sh) notifies the server of pushes.
#
#   1. notifications, 10 streams stored: BENCH_NOTIFY_STREAMS (10) streams, each with a scheduled
#      DockerImage tag `latest` on the registry; BENCH_NOTIFY_PUSHES (50) pushes one at a time
#      (a manifest PUT whose blobs are already there: the last step of a push), round-robin over
#      the streams, each after a random 50-150 ms pause. Timed from the PUT's 201 (and from the
#      notification's arrival in the server log) to the imagestreams watch event that shows the
#      new digest in status.tags[latest].
#   2. setup: N_STREAMS (1000) ImageStreams get tag v1 through an ImageStreamMapping, then PER
#      (10) Deployments per stream are created, each triggered on `<stream>:v1`; the clock runs
#      until a watch has seen every Deployment rolled out to its stream's digest.
#   3. one stream changes: BENCH_SINGLE (20) rounds, one at a time, each an ImageStreamMapping
#      with a new digest for one stream (the import's status write). A watch on imagestreams
#      times the stream's MODIFIED event, a watch on deployments each workload's update; the
#      latency is the difference, pooled over all rounds.
#   4. BENCH_BURST (100) streams change at once (that many clients, one mapping each, released
#      together), BENCH_BURST_ROUNDS (3) rounds with other streams.
#   5. the same digest mapped again under another repository name for BENCH_BURST streams: the
#      streams change, the digests do not: expected 0 workload writes.
#   6. notifications, 10,000 streams stored: plain ImageStreams (no spec tags) are added until
#      BENCH_NOTIFY_BIG (10000) streams are stored, and step 1 runs again on the same server.
# Writes are counted twice: `PUT .../deployments/NAME` lines in the server log (every request,
# no-op or conflict included) and MODIFIED events on the deployments watch. A write to a
# Deployment that names no stream changed in that step is a stray write (goal: 0).
# Printed: p50/p99/max per workload, the time until all of a stream's workloads are updated,
# writes per changed stream (must equal PER), stray writes, the notification latencies and
# their ratio, the server's RSS, warnings in its log. Goals: p99 < 100 ms for one stream with
# 10 workloads; 0 stray writes; notification latency with 10,000 streams within 2x of 10.
#
# Settings: N_STREAMS (1000), PER (10), BENCH_INFLIGHT (16, clients for the setup's creates),
# BENCH_SINGLE (20), BENCH_BURST (100), BENCH_BURST_ROUNDS (3), BENCH_NOTIFY_STREAMS (10),
# BENCH_NOTIFY_PUSHES (50 per phase), BENCH_NOTIFY_BIG (10000), BENCH_NOTIFY_WAIT (20 s a push
# may take before it counts as missed), BENCH_SETTLE (2 s of quiet after each step, for late
# writes), BENCH_KEEP=1 keeps the temp directory (logs), SLIPWAY (binary, default
# /tmp/reltr/slipway, else build/slipway), PYTHON (/usr/bin/python3; stdlib only). Needs
# docker-registry and curl.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
if [[ -z ${SLIPWAY:-} ]]; then
    SLIPWAY=/tmp/reltr/slipway
    [[ -x $SLIPWAY ]] || SLIPWAY=$ROOT/build/slipway
fi
PY=${PYTHON:-/usr/bin/python3}
N_STREAMS=${N_STREAMS:-1000}
PER=${PER:-10}
INFLIGHT=${BENCH_INFLIGHT:-16}
SINGLE=${BENCH_SINGLE:-20}
BURST=${BENCH_BURST:-100}
BURST_ROUNDS=${BENCH_BURST_ROUNDS:-3}
NOTIFY_STREAMS=${BENCH_NOTIFY_STREAMS:-10}
NOTIFY_PUSHES=${BENCH_NOTIFY_PUSHES:-50}
NOTIFY_BIG=${BENCH_NOTIFY_BIG:-10000}
NOTIFY_WAIT=${BENCH_NOTIFY_WAIT:-20}
SETTLE=${BENCH_SETTLE:-2}
START=$(now)
(( BURST <= N_STREAMS )) || BURST=$N_STREAMS

TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-triggers-bench.XXXXXX")
PIDS=() # the server (the registry is in REG_PIDS)
CHILD=  # the helper running in the foreground (run_bg)

fail() {
    log "triggers.sh: $*"
    [[ -f $TMP/server.log ]] && grep -E '^(E|W) ' "$TMP/server.log" | tail -n 5 >&2
    exit 1
}
# shellcheck source=tests/lib/registry.sh
. "$ROOT/tests/lib/registry.sh"

cleanup() {
    local rc=$?
    if [[ -n $CHILD ]]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    stop_all_and_clean
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for tool in docker-registry curl; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (run scripts/install-deps)"
done
[[ -x $PY ]] || fail "$PY not found (set PYTHON)"
"$SLIPWAY" server --help >/dev/null 2>&1 || fail "'$SLIPWAY server --help' fails (set SLIPWAY)"

rss_kib() { awk -v k="${2:-VmRSS}:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }

# ---- the client: one stdlib Python script, one subcommand per step ----
cat >"$TMP/tr.py" <<'PY'
import datetime, gzip, hashlib, http.client, io, json, math, os, random, re, socket, ssl, sys
import tarfile, threading, time

HOST, PORT, TOKEN = "127.0.0.1", int(os.environ["PORT"]), os.environ["TOKEN"]
NS, NNS, FNS = os.environ["NS"], os.environ["NOTIFY_NS"], os.environ["FILL_NS"]
LOG, REG, WORK = os.environ["SERVER_LOG"], os.environ["REG"], os.environ["WORK"]
SETTLE = float(os.environ.get("SETTLE", "2"))
CTX = ssl.create_default_context(cafile=os.environ["CA"])
DAPI = "/apis/apps/v1/namespaces/%s/deployments" % NS
IMG = "/apis/image.openshift.io/v1/namespaces/%s/"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def conn():
    c = http.client.HTTPSConnection(HOST, PORT, context=CTX, timeout=120)
    c.connect()
    return c


def call(c, method, path, body=None):
    h = {"Authorization": "Bearer " + TOKEN, "Accept": "application/json"}
    if body is not None:
        h["Content-Type"] = "application/json"
        body = json.dumps(body, separators=(",", ":"))
    c.request(method, path, body, h)
    r = c.getresponse()
    return r.status, r.read()


def get(path):
    c = conn()
    code, data = call(c, "GET", path)
    c.close()
    if code != 200:
        sys.exit("GET %s: %d %s" % (path, code, data[:300]))
    return json.loads(data)


def parallel(items, n, fn):
    """fn(conn, item) over items with n clients, each on its own keep-alive connection."""
    lock, errors, it = threading.Lock(), [], iter(items)

    def worker():
        c = conn()
        while True:
            with lock:
                item = next(it, None)
            if item is None:
                break
            err = fn(c, item)
            if err:
                with lock:
                    errors.append(err)
        c.close()

    ts = [threading.Thread(target=worker) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errors[:5]:
        print(e, file=sys.stderr)
    return len(errors)


def pct(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else float("nan")


def stats(v):
    return "%.1f/%.1f/%.1f" % (pct(v, 50), pct(v, 99), max(v) if v else float("nan"))


class Watch(threading.Thread):
    """A watch from rv; the reader thread only stamps each line (parsed afterwards)."""

    def __init__(self, path, rv):
        super().__init__(daemon=True)
        self.c = http.client.HTTPSConnection(HOST, PORT, context=CTX, timeout=3600)
        self.c.request("GET", "%s?watch=1&resourceVersion=%s" % (path, rv),
                       headers={"Authorization": "Bearer " + TOKEN, "Accept": "application/json"})
        self.r = self.c.getresponse()
        if self.r.status != 200:
            sys.exit("watch %s: %d %s" % (path, self.r.status, self.r.read()[:300]))
        self.lines, self.done = [], False
        self.start()

    def run(self):
        try:
            while True:
                line = self.r.readline()
                if not line:
                    break
                self.lines.append((time.time(), line))
        except Exception:
            pass
        self.done = True

    def events(self, since=0):
        for t, line in self.lines[since:]:
            ev = json.loads(line)
            yield t, ev["type"], ev["object"]

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass
        self.c.close()


def list_rv(path):
    return get(path + "?limit=1")["metadata"]["resourceVersion"]


def log_size():
    return os.path.getsize(LOG)


def log_lines(offset):
    """(epoch seconds the request arrived, method, path, code) of each request line logged
    after offset: the line is written when the answer goes out, N ms after the arrival."""
    out = []
    with open(LOG, "rb") as f:
        f.seek(offset)
        for raw in f:
            m = re.match(rb"I (\S+)Z (GET|PUT|POST|PATCH|DELETE) (\S+) (\d+) (\d+)ms$", raw.rstrip())
            if not m:
                continue
            ts = datetime.datetime.strptime(m.group(1).decode(), "%Y-%m-%dT%H:%M:%S.%f")
            t = ts.replace(tzinfo=datetime.timezone.utc).timestamp() - int(m.group(5)) / 1000
            out.append((t, m.group(2).decode(), m.group(3).decode(), int(m.group(4))))
    return out


def stream_name(i):
    return "s-%04d" % i


def deploy_name(i, j):
    return "d-%04d-%02d" % (i, j)


def new_hex():
    return os.urandom(32).hex()


def ism(stream, hexd, host="127.0.0.1:5000/x"):
    return {"apiVersion": "image.openshift.io/v1", "kind": "ImageStreamMapping",
            "metadata": {"name": stream, "namespace": NS}, "tag": "v1",
            "image": {"metadata": {"name": "sha256:" + hexd},
                      "dockerImageReference": "%s/%s@sha256:%s" % (host, stream, hexd)}}


def deployment(i, j):
    name = deploy_name(i, j)
    trig = [{"from": {"kind": "ImageStreamTag", "name": stream_name(i) + ":v1"},
             "fieldPath": 'spec.template.spec.containers[?(@.name=="app")].image'}]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS,
                         "annotations": {"image.openshift.io/triggers": json.dumps(trig)}},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "placeholder:1"}]}}}}


def dep_image(o):
    cs = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [])
    return cs[0].get("image", "") if cs else ""


def tag_image(o, tag):
    for t in (o.get("status") or {}).get("tags") or []:
        if t.get("tag") == tag and t.get("items"):
            return t["items"][0].get("image", ""), t["items"][0].get("dockerImageReference", "")
    return "", ""


def mkns(c, ns):
    code, data = call(c, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    if code not in (201, 409):
        sys.exit("create namespace %s: %d %s" % (ns, code, data[:300]))


def dep_puts(lines):
    """PUT requests to Deployments in NS: name -> [codes]."""
    pre = DAPI + "/"
    out = {}
    for t, m, path, code in lines:
        if m == "PUT" and path.startswith(pre):
            out.setdefault(path[len(pre):].split("/")[0], []).append(code)
    return out


# ---- setup: streams by mapping, then Deployments; wait for every first rollout ----
def cmd_setup(n, per, inflight):
    c = conn()
    mkns(c, NS)
    c.close()
    digests = {}
    t0 = time.time()

    def one_ism(c, i):
        h = digests[i] = new_hex()
        code, data = call(c, "POST", IMG % NS + "imagestreammappings", ism(stream_name(i), h))
        return None if code == 201 else "mapping %s: %d %s" % (stream_name(i), code, data[:200])

    bad = parallel(range(n), inflight, one_ism)
    if bad:
        sys.exit(1)
    t_streams = time.time() - t0
    w = Watch(DAPI, list_rv(DAPI))
    off = log_size()
    t1 = time.time()

    def one_dep(c, ij):
        code, data = call(c, "POST", DAPI, deployment(*ij))
        return None if code == 201 else "create %s: %d %s" % (deploy_name(*ij), code, data[:200])

    bad = parallel([(i, j) for i in range(n) for j in range(per)], inflight, one_dep)
    if bad:
        sys.exit(1)
    t_create = time.time() - t1
    want = n * per
    rolled, wrong, seen, t_last = {}, 0, 0, 0
    deadline = time.time() + 120 + want / 50
    while len(rolled) < want and time.time() < deadline:
        time.sleep(0.5)
        k = len(w.lines)
        for t, typ, o in w.events(seen):
            if typ in ("ADDED", "MODIFIED"):
                name = o["metadata"]["name"]
                img = dep_image(o)
                if "@sha256:" in img and name not in rolled:
                    rolled[name] = t
                    i = int(name.split("-")[1])
                    wrong += not img.endswith("/%s@sha256:%s" % (stream_name(i), digests[i]))
        seen = k
    t_done = max(rolled.values()) - t1 if rolled else float("nan")
    time.sleep(SETTLE)
    w.close()
    puts = dep_puts(log_lines(off))
    nput = sum(len(v) for v in puts.values())
    twice = sum(1 for v in puts.values() if len(v) > 1)
    codes = {}
    for v in puts.values():
        for x in v:
            codes[x] = codes.get(x, 0) + 1
    print("streams=%d deployments=%d streams_s=%.2f create_s=%.2f rolled=%d rolled_all_s=%.2f "
          "wrong_image=%d puts=%d put_codes=%s written_twice=%d" % (
              n, want, t_streams, t_create, len(rolled), t_done, wrong, nput,
              ",".join("%d:%d" % kv for kv in sorted(codes.items())), twice))
    sys.exit(0 if len(rolled) == want and not wrong else 1)


# ---- a digest change of K streams at once, ROUNDS times ----
def cmd_change(n, per, k, rounds, offset, same):
    """same=1: map each stream's current digest again under another repository name."""
    ws = Watch(IMG % NS + "imagestreams", list_rv(IMG % NS + "imagestreams"))
    wd = Watch(DAPI, list_rv(DAPI))
    off = log_size()
    cur = {}
    if same:
        for o in get(IMG % NS + "imagestreams")["items"]:
            cur[o["metadata"]["name"]] = tag_image(o, "v1")[0]
    plan, sent, answered, bad = [], {}, {}, []  # plan: per round [(stream index, hex)]
    for r in range(rounds):
        start = (offset + r * 7919) % n
        idx = sorted({(start + x * n // k) % n for x in range(k)})
        if same:
            plan.append([(i, cur[stream_name(i)][len("sha256:"):]) for i in idx])
        else:
            plan.append([(i, new_hex()) for i in idx])
    conns = [conn() for _ in range(k)]
    seen = 0
    for r, changes in enumerate(plan):
        go = threading.Barrier(len(changes))

        def mapper(c, i, h):
            go.wait()
            key = (r, i)
            sent[key] = time.time()
            code, data = call(c, "POST", IMG % NS + "imagestreammappings",
                              ism(stream_name(i), h, "localhost:5000/y" if same else "127.0.0.1:5000/x"))
            answered[key] = time.time()
            if code != 201:
                bad.append("mapping %s: %d %s" % (stream_name(i), code, data[:200]))

        ts = [threading.Thread(target=mapper, args=(c, i, h)) for c, (i, h) in zip(conns, changes)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        # wait (cheaply: line counts) for the round's stream events and workload updates
        want_s = len(changes)
        want_d = 0 if same else len(changes) * per
        deadline = time.time() + 30
        while time.time() < deadline and (len(ws.lines) < seen + want_s or len(wd.lines) < want_d_total(r, plan, per, same)):
            time.sleep(0.01)
        seen = len(ws.lines)
        if r + 1 < rounds:
            time.sleep(0.2)
    time.sleep(SETTLE)
    ws.close()
    wd.close()
    for c in conns:
        c.close()
    for e in bad[:5]:
        print(e, file=sys.stderr)
    # ---- analysis ----
    t_stream = {}  # (round, stream) -> time of the stream event showing the mapping
    by_stream = {}  # stream name -> [(round, hex)]
    for r, changes in enumerate(plan):
        for i, h in changes:
            by_stream.setdefault(stream_name(i), []).append((r, h))
    sevents = 0
    for t, typ, o in ws.events():
        sevents += 1
        name = o["metadata"]["name"]
        img, ref = tag_image(o, "v1")
        for r, h in by_stream.get(name, []):
            if img == "sha256:" + h and (not same or ref.startswith("localhost:5000/y/")):
                t_stream.setdefault((r, name), t)
    t_dep = {}  # (round, deployment) -> time of its update to the round's digest
    mods, stray, other_types = {}, {}, 0
    for t, typ, o in wd.events():
        name = o["metadata"]["name"]
        if typ != "MODIFIED":
            other_types += 1
            continue
        mods[name] = mods.get(name, 0) + 1
        i = int(name.split("-")[1])
        if stream_name(i) not in by_stream:
            stray[name] = stray.get(name, 0) + 1
            continue
        img = dep_image(o)
        for r, h in by_stream[stream_name(i)]:
            if img.endswith("@sha256:" + h):
                t_dep.setdefault((r, name), t)
    puts = dep_puts(log_lines(off))
    nput = sum(len(v) for v in puts.values())
    put_stray = sum(len(v) for d, v in puts.items() if stream_name(int(d.split("-")[1])) not in by_stream)
    conflicts = sum(1 for v in puts.values() for x in v if x != 200)
    lat, lat_ism, lat_sent, all_upd, missing = [], [], [], [], 0
    for r, changes in enumerate(plan):
        for i, h in changes:
            s = stream_name(i)
            ts_ = t_stream.get((r, s))
            last = None
            for j in range(per):
                td = t_dep.get((r, deploy_name(i, j)))
                if td is None:
                    missing += 1
                    continue
                last = max(last or td, td)
                if ts_ is not None:
                    lat.append((td - ts_) * 1000)
                lat_ism.append((td - answered[(r, i)]) * 1000)
                lat_sent.append((td - sent[(r, i)]) * 1000)
            if last is not None and ts_ is not None and not same:
                all_upd.append((last - ts_) * 1000)
    changed = sum(len(c) for c in plan)
    # all of a round's workloads: from the round's first mapping sent to its last update
    round_all = []
    for r, changes in enumerate(plan):
        tds = [t_dep[(r, deploy_name(i, j))] for i, _ in changes for j in range(per)
               if (r, deploy_name(i, j)) in t_dep]
        if tds and not same:
            round_all.append((max(tds) - min(sent[(r, i)] for i, _ in changes)) * 1000)
    expected = 0 if same else changed * per
    mod_total = sum(mods.values())
    print("changes=%d stream_events=%d stream_seen=%d updated=%d missing=%d expected_writes=%d "
          "puts=%d put_conflicts=%d modified=%d stray_modified=%d stray_puts=%d other_events=%d "
          "lat=%s lat_ism=%s lat_sent=%s all_of_stream=%s round_all=%s "
          "p50_ms=%.1f p99_ms=%.1f max_ms=%.1f writes_per_stream=%.2f mods_per_stream=%.2f" % (
              changed, sevents, len(t_stream), len(t_dep) if not same else 0,
              0 if same else missing, expected, nput, conflicts, mod_total,
              sum(stray.values()), put_stray, other_types,
              stats(lat), stats(lat_ism), stats(lat_sent), stats(all_upd), stats(round_all),
              pct(lat, 50), pct(lat, 99), max(lat) if lat else float("nan"),
              nput / changed, mod_total / changed))
    ok = not bad and not stray and not put_stray and nput == expected and mod_total == expected \
        and (same or not missing)
    sys.exit(0 if ok else 1)


def want_d_total(r, plan, per, same):
    return 0 if same else sum(len(c) for c in plan[:r + 1]) * per


# ---- the registry side: tiny images pushed over the distribution API ----
class Reg:
    def __init__(self):
        self.c = http.client.HTTPConnection(REG, timeout=30)

    def req(self, method, path, body=None, headers=None, want=(200, 201, 202)):
        self.c.request(method, path, body=body, headers=headers or {})
        r = self.c.getresponse()
        data = r.read()
        if r.status not in want:
            raise RuntimeError("%s %s: HTTP %d: %r" % (method, path, r.status, data[:200]))
        return r

    def upload(self, repo, data, media):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        r = self.req("POST", "/v2/%s/blobs/uploads/" % repo, want=(202,))
        loc = r.getheader("Location")
        path = loc.split("://", 1)[-1]
        path = path[path.index("/"):] if "://" in loc else loc
        sep = "&" if "?" in path else "?"
        self.req("PUT", "%s%sdigest=%s" % (path, sep, d), body=data,
                 headers={"Content-Type": "application/octet-stream"}, want=(201,))
        return {"mediaType": media, "digest": d, "size": len(data)}


def tiny_layer():
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = b"slipway trigger bench\n"
        ti = tarfile.TarInfo("hello.txt")
        ti.size, ti.mtime = len(data), 0
        tar.addfile(ti, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def manifest(reg, repo, layer_desc, diff_id, label):
    cfg = {"architecture": "amd64", "os": "linux",
           "config": {"Labels": {"io.slipway.bench": label}},
           "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    cd = reg.upload(repo, json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode(), OCI_CONFIG)
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cd,
                       "layers": [layer_desc]}, separators=(",", ":")).encode()


def notify_repo(i):
    return "bench/n%03d" % i


def cmd_notify_prep(count, pushes):
    """count repositories with `latest`, the manifests of `pushes` later pushes (their blobs
    uploaded now), and count streams importing them on schedule; waits for the first imports."""
    reg = Reg()
    gz, diff_id = tiny_layer()
    os.makedirs(os.path.join(WORK, "pushes"), exist_ok=True)
    first = {}
    for i in range(count):
        repo = notify_repo(i)
        ld = reg.upload(repo, gz, OCI_LAYER)
        m = manifest(reg, repo, ld, diff_id, "%s:initial" % repo)
        reg.req("PUT", "/v2/%s/manifests/latest" % repo, body=m,
                headers={"Content-Type": OCI_MANIFEST}, want=(201,))
        first[i] = "sha256:" + hashlib.sha256(m).hexdigest()
        for p in range(i, pushes, count):
            with open(os.path.join(WORK, "pushes", "%d.json" % p), "wb") as f:
                f.write(manifest(reg, repo, ld, diff_id, "%s:push%d" % (repo, p)))
    c = conn()
    mkns(c, NNS)
    for i in range(count):
        s = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream",
             "metadata": {"name": "n%03d" % i, "namespace": NNS},
             "spec": {"tags": [{"name": "latest",
                                "from": {"kind": "DockerImage", "name": "%s/%s:latest" % (REG, notify_repo(i))},
                                "importPolicy": {"scheduled": True, "insecure": True}}]}}
        code, data = call(c, "POST", IMG % NNS + "imagestreams", s)
        if code != 201:
            sys.exit("create stream n%03d: %d %s" % (i, code, data[:300]))
    c.close()
    deadline = time.time() + 60
    while time.time() < deadline:
        items = get(IMG % NNS + "imagestreams")["items"]
        ok = sum(1 for o in items if tag_image(o, "latest")[0] == first[int(o["metadata"]["name"][1:])])
        if ok == count:
            print("repos=%d pushes_prepared=%d imported=%d" % (count, pushes, ok))
            return
        time.sleep(0.2)
    sys.exit("the first imports did not all arrive: %d of %d" % (ok, count))


def cmd_notify_measure(count, first, pushes, wait):
    """Pushes first..first+pushes-1, one at a time; prints the latencies."""
    reg = Reg()
    reg.req("GET", "/v2/")
    w = Watch(IMG % NNS + "imagestreams", list_rv(IMG % NNS + "imagestreams"))
    off = log_size()
    res = []  # (t_put_start, t_put_done, t_status or None)
    seen = 0
    for p in range(first, first + pushes):
        i = p % count
        with open(os.path.join(WORK, "pushes", "%d.json" % p), "rb") as f:
            m = f.read()
        want = "sha256:" + hashlib.sha256(m).hexdigest()
        time.sleep(random.uniform(0.05, 0.15))
        t0 = time.time()
        reg.req("PUT", "/v2/%s/manifests/latest" % notify_repo(i), body=m,
                headers={"Content-Type": OCI_MANIFEST}, want=(201,))
        t1 = time.time()
        ts_ = None
        deadline = t1 + wait
        while ts_ is None and time.time() < deadline:
            k = len(w.lines)
            for t, typ, o in w.events(seen):
                if o["metadata"]["name"] == "n%03d" % i and tag_image(o, "latest")[0] == want:
                    ts_ = t
                    break
            seen = k
            if ts_ is None:
                time.sleep(0.002)
        res.append((t0, t1, ts_))
    time.sleep(0.5)
    w.close()
    notes = [t for t, m, path, code in log_lines(off) if m == "POST" and path == "/notifications/registry"]
    lat, lat_n, put_ms, missed, no_note = [], [], [], 0, 0
    for t0, t1, ts_ in res:
        put_ms.append((t1 - t0) * 1000)
        if ts_ is None:
            missed += 1
            lat.append(float("inf"))
            continue
        lat.append((ts_ - t1) * 1000)
        n = [t for t in notes if t0 - 0.002 <= t <= ts_]
        if n:
            lat_n.append((ts_ - min(n)) * 1000)
        else:
            no_note += 1
    before = [(min([t for t in notes if t0 - 0.002 <= t <= ts_] or [ts_]) - t1) * 1000
              for t0, t1, ts_ in res if ts_ is not None]
    print("pushes=%d observed=%d missed=%d min_ms=%.1f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f "
          "from_note_p50_ms=%.1f from_note_p99_ms=%.1f from_note_max_ms=%.1f notes_matched=%d "
          "note_after_put_p50_ms=%.1f put_p50_ms=%.1f notifications=%d" % (
              pushes, pushes - missed, missed, min(lat), pct(lat, 50), pct(lat, 99), max(lat),
              pct(lat_n, 50), pct(lat_n, 99), max(lat_n) if lat_n else float("nan"),
              len(lat_n), pct(before, 50), pct(put_ms, 50), len(notes)))
    sys.exit(0 if not missed else 1)


def cmd_fill(total):
    """Plain ImageStreams (no spec tags) in FNS until `total` streams are stored."""
    have = len(get("/apis/image.openshift.io/v1/imagestreams")["items"])
    need = max(0, total - have)
    c = conn()
    mkns(c, FNS)
    c.close()
    t0 = time.time()

    def one(c, i):
        s = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream",
             "metadata": {"name": "p-%05d" % i, "namespace": FNS}, "spec": {}}
        code, data = call(c, "POST", IMG % FNS + "imagestreams", s)
        return None if code == 201 else "create p-%05d: %d %s" % (i, code, data[:200])

    bad = parallel(range(need), 16, one)
    stored = len(get("/apis/image.openshift.io/v1/imagestreams")["items"])
    print("created=%d errors=%d stored=%d secs=%.2f" % (need - bad, bad, stored, time.time() - t0))
    sys.exit(1 if bad else 0)


cmd, a = sys.argv[1], sys.argv[2:]
if cmd == "setup":
    cmd_setup(int(a[0]), int(a[1]), int(a[2]))
elif cmd == "change":
    cmd_change(int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]))
elif cmd == "notify-prep":
    cmd_notify_prep(int(a[0]), int(a[1]))
elif cmd == "notify-measure":
    cmd_notify_measure(int(a[0]), int(a[1]), int(a[2]), float(a[3]))
elif cmd == "fill":
    cmd_fill(int(a[0]))
else:
    sys.exit("unknown command " + cmd)
PY

# ---- the server, then the registry (which trusts the server's CA and notifies it) ----
read -r REGPORT PORT <<<"$(reg_free_ports 2)"
REG=127.0.0.1:$REGPORT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/notify.token"
"$SLIPWAY" server --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" --insecure-registry "$REG" \
    --controllers=import,imagetrigger,garbagecollector,namespace --scheduled-import-interval 86400 \
    --registry-notifications-token-file "$TMP/notify.token" --v 2 >"$TMP/server.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 600); do
    [[ -f $TMP/data/admin.kubeconfig ]] &&
        [[ $(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/readyz") == 200 ]] && break
    kill -0 "$SERVER" 2>/dev/null || fail "the server exited: $(tail -n 5 "$TMP/server.log")"
    sleep 0.05
done
TOKEN=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/data/admin.kubeconfig")
[[ -n $TOKEN ]] || fail "no token in admin.kubeconfig"
reg_init "$TMP/reg"
reg_start registry "$REGPORT" --notify "https://127.0.0.1:$PORT/notifications/registry" \
    "$(<"$TMP/notify.token")" --ca "$TMP/data/tls.crt" || fail "the registry did not start"
export PORT TOKEN REG SETTLE
export NS=bench NOTIFY_NS=notify FILL_NS=bench-fill SERVER_LOG=$TMP/server.log WORK=$TMP
export CA=$TMP/data/tls.crt
log "== server on 127.0.0.1:$PORT (pid $SERVER), registry on $REG (pid ${REG_PID[registry]})"

declare -A R=()
# step NAME CMD...: runs a tr.py subcommand; its result line goes to R[NAME].
step() {
    local name=$1
    shift
    run_bg "$TMP/line" "$PY" "$TMP/tr.py" "$@" || fail "$name: $(cat "$TMP/line")"
    R[$name]=$(<"$TMP/line")
    log "  ${R[$name]}"
}

# ---- 1. notifications with 10 streams stored ----
log "== notifications: $NOTIFY_STREAMS scheduled streams, $NOTIFY_PUSHES pushes"
step notify-prep notify-prep "$NOTIFY_STREAMS" $((2 * NOTIFY_PUSHES))
SMALL_STORED=$(curl -sk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT/apis/image.openshift.io/v1/imagestreams" |
    "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))')
step notify-small notify-measure "$NOTIFY_STREAMS" 0 "$NOTIFY_PUSHES" "$NOTIFY_WAIT"

# ---- 2. setup ----
log "== setup: $N_STREAMS streams x $PER Deployments"
T1=$(now)
step setup setup "$N_STREAMS" "$PER" "$INFLIGHT"
SETUP_S=$(since "$T1")
RSS_SETUP=$(rss_kib "$SERVER")

# ---- 3.-5. digest changes ----
log "== one stream changes, $SINGLE rounds"
step single change "$N_STREAMS" "$PER" 1 "$SINGLE" 3 0
log "== $BURST streams change at once, $BURST_ROUNDS rounds"
step burst change "$N_STREAMS" "$PER" "$BURST" "$BURST_ROUNDS" 5 0
log "== $BURST streams: the same digest under another repository name"
step same change "$N_STREAMS" "$PER" "$BURST" 1 1 1

# ---- 6. notifications with 10,000 streams stored ----
log "== $NOTIFY_BIG streams stored"
step fill fill "$NOTIFY_BIG"
step notify-big notify-measure "$NOTIFY_STREAMS" "$NOTIFY_PUSHES" "$NOTIFY_PUSHES" "$NOTIFY_WAIT"
RSS_END=$(rss_kib "$SERVER")
HWM_END=$(rss_kib "$SERVER" VmHWM)
# warnings and errors besides the start notice
ERRS=$(grep -E '^(E|W) ' "$TMP/server.log" | grep -cv 'serving on' || true)
if (( ERRS )); then
    log "server warnings/errors:"
    grep -E '^(E|W) ' "$TMP/server.log" | grep -v 'serving on' | head -n 5 >&2
fi
TOTAL_S=$(since "$START")

# ---- the figures ----
v() { kv "${R[$1]}" "$2" || echo n/a; }
row() { printf '%-58s %s\n' "$1" "$2"; }
sl() { # a p50/p99/max triple, spaced
    local x
    x=$(v "$1" "$2")
    printf '%s ms' "${x//\// / }"
}
printf '\nimage triggers: %s streams x %s Deployments (%s), slipway %s; whole run %s s\n' \
    "$N_STREAMS" "$PER" "$((N_STREAMS * PER))" "$SLIPWAY" "$TOTAL_S"
row "setup: streams mapped / Deployments created / all of it" "$(v setup streams_s) s / $(v setup create_s) s / $SETUP_S s"
row "  all rolled out once (from the first create)" "$(v setup rolled_all_s) s; PUTs $(v setup puts) ($(v setup put_codes)), expected $((N_STREAMS * PER))"
for s in single burst; do
    if [[ $s == single ]]; then
        echo "one stream changes ($SINGLE rounds, $PER workloads each), p50 / p99 / max:"
    else
        echo "$BURST streams change at once ($BURST_ROUNDS rounds, $((BURST * PER)) workloads each), p50 / p99 / max:"
    fi
    row "  stream's status event -> workload update" "$(sl $s lat)"
    row "  mapping answered -> workload update" "$(sl $s lat_ism)"
    row "  all of a stream's workloads updated (from its event)" "$(sl $s all_of_stream)"
    [[ $s == burst ]] && row "  all $((BURST * PER)) updated (from the first mapping sent)" "$(sl $s round_all)"
    row "  writes per changed stream: PUTs / MODIFIED (expect $PER)" "$(v $s writes_per_stream) / $(v $s mods_per_stream)   ($(v $s puts) PUTs, $(v $s put_conflicts) not 200)"
    row "  writes to workloads naming no changed stream" "$(v $s stray_puts) PUTs, $(v $s stray_modified) MODIFIED"
done
row "same digest under another name ($BURST streams): writes" "$(v same puts) PUTs, $(v same modified) MODIFIED (expect 0; $(v same stream_seen) stream events)"
echo "registry push -> stream status via notification, p50 / p99 / max (min; missed):"
NS_BIG=$(kv "${R[fill]}" stored || echo n/a)
for s in small big; do
    n=$SMALL_STORED
    [[ $s == big ]] && n=$NS_BIG
    row "  $n streams stored: from the PUT's 201" "$(v notify-$s p50_ms) / $(v notify-$s p99_ms) / $(v notify-$s max_ms) ms ($(v notify-$s min_ms); $(v notify-$s missed) missed)"
    row "  $n streams stored: from the notification's arrival" "$(v notify-$s from_note_p50_ms) / $(v notify-$s from_note_p99_ms) / $(v notify-$s from_note_max_ms) ms"
done
P50R=$(ratio "$(v notify-big p50_ms)" "$(v notify-small p50_ms)")
P99R=$(ratio "$(v notify-big p99_ms)" "$(v notify-small p99_ms)")
row "  ratio $NS_BIG / $SMALL_STORED streams, p50 / p99" "$(times "$P50R") / $(times "$P99R")   goal <= 2x"
row "server RSS after setup / at the end (VmHWM)" "$(mib "$RSS_SETUP") / $(mib "$RSS_END") ($(mib "$HWM_END")) MiB"
row "server log: warnings and errors" "$ERRS"
awk -v p="$(v single p99_ms)" -v s1="$(v single stray_puts)" -v s2="$(v burst stray_puts)" \
    -v s3="$(v same puts)" -v w1="$(v single writes_per_stream)" -v w2="$(v burst writes_per_stream)" \
    -v per="$PER" -v r="$P99R" -v r5="$P50R" 'BEGIN {
    printf "goals: one stream p99 < 100 ms: %s; zero stray writes: %s; writes per stream = %d: %s; notification with 10,000 streams within 2x (p50 %s, p99 %s)\n",
        (p + 0 < 100) ? "PASS" : "MISS", (s1 + s2 + s3 == 0) ? "PASS" : "MISS", per,
        (w1 == per && w2 == per) ? "PASS" : "MISS",
        (r5 != "n/a" && r5 + 0 <= 2) ? "PASS" : "MISS", (r != "n/a" && r + 0 <= 2) ? "PASS" : "MISS" }'
