#!/usr/bin/env bash
# bench/reconcile.sh: the ManagedImage controller at scale (issue text: "1,000 ManagedImages
# whose images already exist in the registry"), in one run. Debian's docker-registry
# (tests/lib/registry.sh) is the server's --image-registry; `slipway server --no-controllers`
# serves the API and `slipway controllers` runs as a process of its own, so its RSS is its own.
#
#   0. the registry starts; its idle RSS (VmRSS) is the reference for a Go daemon.
#   1. setup (untimed as a goal): N ManagedImages (FROM scratch + ENV, distinct per image) are
#      created, the controllers build each once (the real `slipway builder`), all N go Ready,
#      the controllers stop.
#   2. the measurement: every ManagedImage's status is cleared through the status subresource
#      (nothing says Ready), the controllers start again and the clock runs from their fork
#      until a watch on managedimages has seen Ready=True for all N. Each one is an adoption of
#      the completed build's image: the number of builds before and after must be equal.
#   3. K of the owned ImageStreams are deleted at once (K clients, one DELETE each, released
#      together); a watch on imagestreams times each stream's way back (ADDED with the
#      ManagedImage as controller, then its tag). Twice: right after all are Ready (the build
#      controller's start-up pass over every BuildConfig still runs then), and, once the
#      controllers and the server are idle, with K other streams.
# Printed: seconds to all Ready (goal 10 s at N=1000) and reconciles/s (N / that time), the
# recreation p50/p99 (goal p99 < 1 s), the controllers' RSS against the registry's idle RSS
# (goal below it), and builds started in phases 2 and 3 (expected 0).
#
# Settings: N (1000), BENCH_DELETE (100, phase 3's K), BENCH_INFLIGHT (8, clients for the
# setup's creates and status clears), BENCH_CONTROLLERS (--controllers of phases 2 and 3,
# e.g. managedimage; default: their default set; the setup always runs the default set),
# BENCH_MAX_BUILDS (--max-running-builds in the setup; default the controllers'), BENCH_V
# (--v for the server and controllers, e.g. 2 to count requests), BENCH_KEEP=1 keeps the
# temp directory (logs), SLIPWAY (binary, default /tmp/rel/slipway,
# else build/slipway), PYTHON (/usr/bin/python3; stdlib only). Needs docker-registry and curl.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
if [[ -z ${SLIPWAY:-} ]]; then
    SLIPWAY=/tmp/rel/slipway
    [[ -x $SLIPWAY ]] || SLIPWAY=$ROOT/build/slipway
fi
PY=${PYTHON:-/usr/bin/python3}
N=${N:-1000}
K=${BENCH_DELETE:-100}
INFLIGHT=${BENCH_INFLIGHT:-8}
NS=bench
START=$(now)
(( K <= N )) || K=$N

TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-reconcile-bench.XXXXXX")
PIDS=() # the server (the registry is in REG_PIDS); the controllers while they run
CTL=    # the running `slipway controllers`
CHILD=  # the helper running in the foreground (run_bg)

fail() {
    log "reconcile.sh: $*"
    exit 1
}
# shellcheck source=tests/lib/registry.sh
. "$ROOT/tests/lib/registry.sh"

# The builders are the controllers' children (each leads a process group of its own): they
# are stopped by pid after the controllers, in case a build was still running.
stop_controllers() {
    [[ -n $CTL ]] || return 0
    local kids pid
    kids=$(ps -o pid= --ppid "$CTL" 2>/dev/null || true)
    stop_pid "$CTL"
    wait "$CTL" 2>/dev/null || true
    for pid in $kids; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    local keep=() p
    for p in "${PIDS[@]}"; do
        [[ $p == "$CTL" ]] || keep+=("$p")
    done
    PIDS=("${keep[@]}")
    CTL=
}
cleanup() {
    local rc=$?
    if [[ -n $CHILD ]]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    stop_controllers
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
"$SLIPWAY" controllers --help >/dev/null 2>&1 || fail "'$SLIPWAY controllers --help' fails (set SLIPWAY)"

rss_kib() { awk -v k="${2:-VmRSS}:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }

# ---- the client: one stdlib Python script, one subcommand per step ----
cat >"$TMP/mi.py" <<'PY'
import http.client, json, math, os, ssl, sys, threading, time

HOST, PORT, TOKEN, NS = "127.0.0.1", int(os.environ["PORT"]), os.environ["TOKEN"], os.environ["NS"]
MAPI = "/apis/image.slipway.dev/v1alpha1/namespaces/%s/managedimages" % NS
IAPI = "/apis/image.openshift.io/v1/namespaces/%s/imagestreams" % NS
BAPI = "/apis/build.openshift.io/v1/namespaces/%s/builds" % NS
CTX = ssl._create_unverified_context()


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


def cond(o, typ):
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c
    return None


def pct(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else float("nan")


def mi(i):
    name = "mi-%d" % i
    return {"apiVersion": "image.slipway.dev/v1alpha1", "kind": "ManagedImage",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"source": {"type": "Dockerfile", "dockerfile": "FROM scratch\nENV N=%d\n" % i},
                     "strategy": {"dockerStrategy": {}},
                     "output": {"to": {"kind": "ImageStreamTag", "name": name + ":latest"}}}}


def cmd_create(n, inflight):
    c = conn()
    code, data = call(c, "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    if code not in (201, 409):
        sys.exit("create namespace: %d %s" % (code, data[:300]))
    t0 = time.time()

    def one(c, i):
        code, data = call(c, "POST", MAPI, mi(i))
        return None if code == 201 else "create mi-%d: %d %s" % (i, code, data[:200])

    bad = parallel(range(1, n + 1), inflight, one)
    print("created=%d errors=%d secs=%.2f" % (n - bad, bad, time.time() - t0))
    sys.exit(1 if bad else 0)


def cmd_ready():
    """ready=R total=T reasons=REASON:COUNT,..."""
    items = get(MAPI)["items"]
    reasons = {}
    for o in items:
        c = cond(o, "Ready")
        k = "True" if c and c.get("status") == "True" else (c or {}).get("reason") or "none"
        reasons[k] = reasons.get(k, 0) + 1
    print("ready=%d total=%d reasons=%s" % (reasons.get("True", 0), len(items),
          ",".join("%s:%d" % kv for kv in sorted(reasons.items())) or "-"))


def cmd_builds():
    """builds=B phases=PHASE:COUNT,..."""
    items = get(BAPI)["items"]
    ph = {}
    for o in items:
        p = (o.get("status") or {}).get("phase") or "New"
        ph[p] = ph.get(p, 0) + 1
    print("builds=%d phases=%s" % (len(items), ",".join("%s:%d" % kv for kv in sorted(ph.items())) or "-"))


def cmd_clear(inflight):
    items = get(MAPI)["items"]
    t0 = time.time()

    def one(c, o):
        o = dict(o, status={})
        code, data = call(c, "PUT", "%s/%s/status" % (MAPI, o["metadata"]["name"]), o)
        return None if code == 200 else "clear %s: %d %s" % (o["metadata"]["name"], code, data[:200])

    bad = parallel(items, inflight, one)
    left = sum(1 for o in get(MAPI)["items"] if (o.get("status") or {}).get("conditions"))
    print("cleared=%d errors=%d with_conditions=%d secs=%.2f" % (len(items) - bad, bad, left, time.time() - t0))
    sys.exit(1 if bad or left else 0)


def watch(path, rv):
    """An open watch from rv: the response to read JSON lines from."""
    c = http.client.HTTPSConnection(HOST, PORT, context=CTX, timeout=600)
    c.request("GET", "%s?watch=1&resourceVersion=%s" % (path, rv),
              headers={"Authorization": "Bearer " + TOKEN, "Accept": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        sys.exit("watch %s: %d %s" % (path, r.status, r.read()[:300]))
    return r


def cmd_watch_ready(n, flag, timeout):
    """Waits for Ready=True on n ManagedImages; prints the arrival times (epoch s)."""
    lst = get(MAPI + "?limit=1")
    r = watch(MAPI, lst["metadata"]["resourceVersion"])
    open(flag, "w").close()
    seen, events, first, t_end = {}, 0, None, time.time() + timeout
    while len(seen) < n and time.time() < t_end:
        line = r.readline()
        if not line:
            break
        now = time.time()
        ev = json.loads(line)
        if ev.get("type") not in ("ADDED", "MODIFIED"):
            continue
        events += 1
        first = first or now
        o = ev["object"]
        c = cond(o, "Ready")
        if c and c.get("status") == "True" and o["metadata"]["name"] not in seen:
            seen[o["metadata"]["name"]] = now
    t = sorted(seen.values())
    print("ready=%d first_event=%.6f first_ready=%.6f half_ready=%.6f last_ready=%.6f events=%d" % (
        len(seen), first or 0, t[0] if t else 0, t[len(t) // 2] if t else 0, t[-1] if t else 0, events))
    sys.exit(0 if len(seen) == n else 1)


def cmd_recreate(k, offset, timeout):
    lst = get(IAPI)
    owned = {}
    for o in lst["items"]:
        refs = o["metadata"].get("ownerReferences") or []
        if any(x.get("kind") == "ManagedImage" and x.get("controller") for x in refs):
            items = [t for t in (o.get("status") or {}).get("tags") or [] if t.get("tag") == "latest"]
            owned[o["metadata"]["name"]] = (items[0]["items"][0]["image"] if items and items[0].get("items") else "")
    names = sorted(owned, key=lambda s: int(s.rsplit("-", 1)[1]))
    if len(names) < k:
        sys.exit("only %d owned streams" % len(names))
    # spread over the range; offset 1 takes the ones halfway between (a second round)
    targets = [names[(2 * i + offset) * len(names) // (2 * k)] for i in range(k)]
    want = set(targets)
    r = watch(IAPI, lst["metadata"]["resourceVersion"])
    deleted, added, tagged, wrong = {}, {}, {}, []
    done = threading.Event()

    def watcher():
        while len(tagged) < k:
            line = r.readline()
            if not line:
                return
            now = time.time()
            ev = json.loads(line)
            o = ev["object"]
            name = o["metadata"]["name"]
            if name not in want:
                continue
            if ev["type"] == "DELETED":
                deleted.setdefault(name, now)
            elif name in deleted and ev["type"] in ("ADDED", "MODIFIED"):
                refs = o["metadata"].get("ownerReferences") or []
                if name not in added and any(x.get("kind") == "ManagedImage" for x in refs):
                    added[name] = now
                items = [t for t in (o.get("status") or {}).get("tags") or [] if t.get("tag") == "latest"]
                img = items[0]["items"][0]["image"] if items and items[0].get("items") else ""
                if img and name not in tagged:
                    tagged[name] = now
                    if img != owned[name]:
                        wrong.append(name)
        done.set()

    wt = threading.Thread(target=watcher, daemon=True)
    wt.start()
    conns = [conn() for _ in targets]
    sent, returned, bad = {}, {}, []
    go = threading.Barrier(k)

    def deleter(c, name):
        go.wait()
        sent[name] = time.time()
        code, data = call(c, "DELETE", "%s/%s" % (IAPI, name))
        returned[name] = time.time()
        if code != 200:
            bad.append("delete %s: %d %s" % (name, code, data[:200]))

    ts = [threading.Thread(target=deleter, args=(c, n)) for c, n in zip(conns, targets)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done.wait(timeout)
    for e in bad[:5]:
        print(e, file=sys.stderr)
    t0 = min(sent.values())
    ms = lambda a, b: [(b[x] - a[x]) * 1000 for x in targets if x in a and x in b]
    sent_added, del_added, sent_tagged = ms(sent, added), ms(deleted, added), ms(sent, tagged)
    print("deleted=%d delete_errors=%d recreated=%d tagged=%d wrong_image=%d "
          "p50_ms=%.0f p99_ms=%.0f max_ms=%.0f "
          "from_deleted_p50_ms=%.0f from_deleted_p99_ms=%.0f "
          "tag_p50_ms=%.0f tag_p99_ms=%.0f "
          "delete_p50_ms=%.0f delete_max_ms=%.0f all_back_s=%.2f" % (
              len(deleted), len(bad), len(added), len(tagged), len(wrong),
              pct(sent_added, 50), pct(sent_added, 99), max(sent_added or [float("nan")]),
              pct(del_added, 50), pct(del_added, 99),
              pct(sent_tagged, 50), pct(sent_tagged, 99),
              pct(ms(sent, returned), 50), max(ms(sent, returned) or [float("nan")]),
              (max(tagged.values()) - t0) if tagged else float("nan")))
    sys.exit(0 if len(tagged) == k and not bad and not wrong else 1)


cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "create":
    cmd_create(int(args[0]), int(args[1]))
elif cmd == "ready":
    cmd_ready()
elif cmd == "builds":
    cmd_builds()
elif cmd == "clear":
    cmd_clear(int(args[0]))
elif cmd == "watch-ready":
    cmd_watch_ready(int(args[0]), args[1], float(args[2]))
elif cmd == "recreate":
    cmd_recreate(int(args[0]), int(args[1]), float(args[2]))
else:
    sys.exit("unknown command " + cmd)
PY
mi() { "$PY" "$TMP/mi.py" "$@"; }

# ---- 0. the registry, idle ----
read -r REGPORT PORT <<<"$(reg_free_ports 2)"
REG=127.0.0.1:$REGPORT
reg_init "$TMP/reg"
reg_start registry "$REGPORT" || fail "the registry did not start"
REGPID=${REG_PID[registry]}
sleep 1
REG_IDLE=$(rss_kib "$REGPID")
log "== registry on $REG (pid $REGPID): idle VmRSS $(mib "$REG_IDLE") MiB"

# ---- the server ----
VFLAG=()
[[ -n ${BENCH_V:-} ]] && VFLAG=(--v "$BENCH_V")
"$SLIPWAY" server --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" --image-registry "$REG" \
    --insecure-registry "$REG" --no-controllers "${VFLAG[@]}" >"$TMP/server.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 600); do
    [[ -f $TMP/data/admin.kubeconfig ]] &&
        [[ $(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/readyz") == 200 ]] && break
    kill -0 "$SERVER" 2>/dev/null || fail "the server exited: $(tail -n 5 "$TMP/server.log")"
    sleep 0.05
done
TOKEN=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/data/admin.kubeconfig")
export PORT TOKEN NS
[[ -n $TOKEN ]] || fail "no token in admin.kubeconfig"
mkdir -p "$TMP/tmp"

CTL_ARGS=(--kubeconfig "$TMP/data/admin.kubeconfig" --insecure-registry "$REG" "${VFLAG[@]}")
# start_controllers LOG [FLAGS...]: forks `slipway controllers`; CTL is its pid.
start_controllers() {
    local logf=$1
    shift
    TMPDIR=$TMP/tmp "$SLIPWAY" controllers "${CTL_ARGS[@]}" "$@" >>"$logf" 2>&1 &
    CTL=$!
    PIDS+=("$CTL")
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
# idle PID...: waits until each PID used at most 1 tick of CPU over half a second (the
# controllers caught up and the server answers nothing more); status 1 after 300 s.
idle() {
    local p a b quiet
    for _ in $(seq 600); do
        a=() quiet=1
        for p in "$@"; do a+=("$(cpu "$p")"); done
        sleep 0.5
        for p in "$@"; do
            b=$(cpu "$p")
            (( b - a[0] <= 1 )) || quiet=0
            a=("${a[@]:1}")
        done
        (( quiet )) && return 0
    done
    return 1
}

# ---- 1. setup: N ManagedImages, each built once ----
log "== setup: $N ManagedImages in namespace $NS"
run_bg "$TMP/line" mi create "$N" "$INFLIGHT" || fail "create: $(cat "$TMP/line")"
log "  $(cat "$TMP/line")"
T1=$(now)
SETUP_FLAGS=()
[[ -n ${BENCH_MAX_BUILDS:-} ]] && SETUP_FLAGS=(--max-running-builds "$BENCH_MAX_BUILDS")
start_controllers "$TMP/controllers-setup.log" "${SETUP_FLAGS[@]}"
deadline=$(($(date +%s) + 120 + N))
last=0
while :; do
    line=$(mi ready)
    [[ $(kv "$line" ready) == "$N" ]] && break
    kill -0 "$CTL" 2>/dev/null || fail "the controllers exited: $(tail -n 5 "$TMP/controllers-setup.log")"
    (($(date +%s) < deadline)) || fail "setup: not all Ready after $(since "$T1") s: $line"
    if (($(date +%s) - last >= 10)); then
        log "  $(since "$T1") s: $line; $(mi builds)"
        last=$(date +%s)
    fi
    sleep 1
done
SETUP_S=$(since "$T1")
SETUP_BUILDS=$(mi builds)
log "  all $N Ready after $SETUP_S s (builds and adoption); $SETUP_BUILDS"
stop_controllers

# ---- 2. the measurement: statuses cleared, the controllers start, all N Ready ----
log "== status cleared, controllers restarted"
B0=$(kv "$(mi builds)" builds)
run_bg "$TMP/line" mi clear "$INFLIGHT" || fail "clear: $(cat "$TMP/line")"
log "  $(cat "$TMP/line")"
rm -f "$TMP/watching"
mi watch-ready "$N" "$TMP/watching" 600 >"$TMP/ready.line" &
CHILD=$!
for _ in $(seq 600); do
    [[ -f $TMP/watching ]] && break
    kill -0 "$CHILD" 2>/dev/null || fail "the watch failed"
    sleep 0.01
done
T2=$(now)
MEASURE_FLAGS=()
[[ -n ${BENCH_CONTROLLERS:-} ]] && MEASURE_FLAGS=(--controllers "$BENCH_CONTROLLERS")
start_controllers "$TMP/controllers.log" "${MEASURE_FLAGS[@]}"
rc=0
wait "$CHILD" || rc=$?
CHILD=
RSS_READY=$(rss_kib "$CTL")
HWM_READY=$(rss_kib "$CTL" VmHWM)
line=$(<"$TMP/ready.line")
[[ $rc == 0 ]] || fail "not all Ready: $line; $(mi ready)"
READY_S=$(awk -v a="$T2" -v b="$(kv "$line" last_ready)" 'BEGIN {printf "%.2f", b - a}')
FIRST_S=$(awk -v a="$T2" -v b="$(kv "$line" first_ready)" 'BEGIN {printf "%.2f", b - a}')
HALF_S=$(awk -v a="$T2" -v b="$(kv "$line" half_ready)" 'BEGIN {printf "%.2f", b - a}')
RATE=$(awk -v n="$N" -v s="$READY_S" 'BEGIN {printf "%.0f", n / s}')
EVENTS=$(kv "$line" events)
log "  all $N Ready ${READY_S} s after the controllers' start (first at $FIRST_S s, half at $HALF_S s); $EVENTS watch events"
sleep 2
B1=$(kv "$(mi builds)" builds)
CHECK=$(mi ready)
log "  settled: $CHECK; builds $B0 -> $B1"

# ---- 3. K streams deleted at once: right after all Ready, and again once everything is idle ----
# recreate ROUND OFFSET: one round of K deletions; its result line goes to REC[ROUND].
declare -A REC=()
recreate() {
    run_bg "$TMP/line" mi recreate "$K" "$2" 60 || fail "recreate ($1): $(cat "$TMP/line")"
    REC[$1]=$(<"$TMP/line")
    log "  ${REC[$1]}"
}
log "== $K owned ImageStreams deleted at once, $(since "$T2") s after the controllers' start"
recreate busy 0
T3=$(now)
if idle "$CTL" "$SERVER"; then
    IDLE_S=$(since "$T2")
    log "  the controllers and the server idle $IDLE_S s after the controllers' start"
else
    IDLE_S="n/a (not idle after 300 s)"
    log "  the controllers and the server are still busy after $(since "$T3") s"
fi
RSS_IDLE=$(rss_kib "$CTL")
log "== $K other owned ImageStreams deleted at once, everything idle"
recreate idle 1
sleep 2
B3=$(kv "$(mi builds)" builds)
RSS_END=$(rss_kib "$CTL")
HWM_END=$(rss_kib "$CTL" VmHWM)
REG_END=$(rss_kib "$REGPID")
# log lines other than the start and stop notices (at the default verbosity: warnings, errors)
QUIET='slipway controllers running|received signal'
ERRS=$(grep -cvE "$QUIET" "$TMP/controllers.log" || true)
ERRS_SETUP=$(grep -cvE "$QUIET" "$TMP/controllers-setup.log" || true)
stop_controllers
TOTAL_S=$(since "$START")

# ---- the figures ----
P99=$(kv "${REC[busy]}" p99_ms)
P99I=$(kv "${REC[idle]}" p99_ms)
printf '\nManagedImages: N=%s, %s streams deleted per round; controllers: %s; slipway %s; whole run %s s\n' \
    "$N" "$K" "${BENCH_CONTROLLERS:-default set}" "$SLIPWAY" "$TOTAL_S"
row() { printf '%-54s %s\n' "$1" "$2"; }
row "setup: create, build each once, all Ready (no goal)" "$SETUP_S s  ($SETUP_BUILDS)"
row "ready_all_s (controllers' start -> all N Ready)" "$READY_S s   goal 10 s   ratio $(ratio "$READY_S" 10)"
row "  first Ready / half Ready" "$FIRST_S s / $HALF_S s"
row "reconciles_per_s (N / ready_all_s)" "$RATE   (ManagedImage watch events: $EVENTS)"
row "controllers + server idle after the controllers' start" "$IDLE_S s"
row "builds started in phase 2 / 3 (expected 0)" "$((B1 - B0)) / $((B3 - B1))"
for round in busy idle; do
    r=${REC[$round]}
    if [[ $round == busy ]]; then
        echo "recreation right after all Ready (DELETE sent -> ADDED with its owner):"
    else
        echo "recreation once everything is idle (other streams):"
    fi
    row "  recreate_p50_ms / recreate_p99_ms" "$(kv "$r" p50_ms) / $(kv "$r" p99_ms) ms   goal p99 1000 ms   ratio $(ratio "$(kv "$r" p99_ms)" 1000)"
    row "  max; from the watch's DELETED event p50 / p99" "$(kv "$r" max_ms) ms; $(kv "$r" from_deleted_p50_ms) / $(kv "$r" from_deleted_p99_ms) ms"
    row "  with its tag back p50 / p99; all $K back" "$(kv "$r" tag_p50_ms) / $(kv "$r" tag_p99_ms) ms; $(kv "$r" all_back_s) s"
    row "  DELETE latency p50 / max" "$(kv "$r" delete_p50_ms) / $(kv "$r" delete_max_ms) ms"
done
row "controllers_rss_mb at all Ready (VmHWM)" "$(mib "$RSS_READY") ($(mib "$HWM_READY"))"
row "controllers_rss_mb once idle / at the end (VmHWM)" "$(mib "$RSS_IDLE") / $(mib "$RSS_END") ($(mib "$HWM_END"))"
row "registry_idle_rss_mb (after the run)" "$(mib "$REG_IDLE") ($(mib "$REG_END"))"
row "ratio controllers at all Ready / registry idle" "$(ratio "$RSS_READY" "$REG_IDLE")"
row "controllers' log lines beyond start/stop (phase 2+3)" "$ERRS (setup: $ERRS_SETUP)"
awk -v r="$READY_S" -v n="$N" -v p="$P99" -v pi="$P99I" -v c="$RSS_READY" -v g="$REG_IDLE" \
    -v b=$((B3 - B0)) 'BEGIN {
    printf "goals: all %d Ready within 10 s: %s; recreation p99 < 1 s: %s (right after Ready), %s (idle); controllers RSS < registry idle RSS: %s; no rebuilds: %s\n",
        n, (r <= 10) ? "PASS" : "MISS", (p < 1000) ? "PASS" : "MISS", (pi < 1000) ? "PASS" : "MISS",
        (c < g) ? "PASS" : "MISS", (b == 0) ? "PASS" : "MISS" }'
