#!/usr/bin/env bash
# bench/import.sh: slipway's image import against `skopeo inspect` and against the protocol
# floor (HEAD of every manifest with keep-alive), in one run against one local docker-registry,
# plus push-to-status latency with registry notifications versus the scheduled path (issue 3).
# Starts the registry (tests/lib/registry.sh) and each slipway server on free 127.0.0.1 ports
# with temp data dirs, fills the registry with BENCH_REPOS x BENCH_TAGS distinct images
# (untimed), drives everything with the same parallelism, prints a table with the ratios and
# PASS/MISS for the issue's targets, and cleans up on any exit (Ctrl-C included).
# Knobs (environment): BENCH_REPOS (200), BENCH_TAGS (5), BENCH_INFLIGHT (16), BENCH_ROUNDS (3),
# BENCH_SKOPEO_SAMPLE (100), BENCH_PUSHES (100), BENCH_SCHED_INTERVAL (2), BENCH_SCHED_LANES
# (10), BENCH_ISI_PER (repo|tag), BENCH_ONLY (phases), BENCH_SLIPWAY_ARGS (extra server flags),
# BENCH_KEEP=1; SLIPWAY, LOADGEN, IMPORTGEN (binaries).
# See bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build}
SLIPWAY=${SLIPWAY:-$BUILD/slipway}
LOADGEN=${LOADGEN:-$BUILD/sw-loadgen}
IMPORTGEN=${IMPORTGEN:-$BUILD/sw-importgen}
REPOS=${BENCH_REPOS:-200}
TAGS=${BENCH_TAGS:-5}
P=${BENCH_INFLIGHT:-16}
SKOPEO_SAMPLE=${BENCH_SKOPEO_SAMPLE:-100}
PUSHES=${BENCH_PUSHES:-100}
SCHED_INTERVAL=${BENCH_SCHED_INTERVAL:-2}
SCHED_LANES=${BENCH_SCHED_LANES:-10}
ISI_PER=${BENCH_ISI_PER:-repo}
ONLY=${BENCH_ONLY:-floor,skopeo,isi,controller,notify,scheduled}
ROUNDS=${BENCH_ROUNDS:-3}
NOTIFY_WAIT=3   # seconds: a push not in status by then counts as missed (no later trigger exists)
LOAD0=n/a LOAD1=n/a
read -r -a SLIPWAY_ARGS <<<"${BENCH_SLIPWAY_ARGS:-}"
NTAGS=$((REPOS * TAGS))
SCHED_SAMPLES=$(((PUSHES + SCHED_LANES - 1) / SCHED_LANES))
START_TIMEOUT=60
ACCEPT="Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json"

TMP=$(mktemp -d /tmp/slipway-import-bench.XXXXXX)
PIDS=()   # slipway servers we started (the registry is in REG_PIDS)
CHILD=    # the foreground tool running right now
LINE=     # its result line
declare -A R=()   # R[figure] = value


# fail MESSAGE: registry.sh's helpers call this on errors too.
fail() {
    log "import.sh: $*"
    exit 1
}

# shellcheck source=tests/lib/registry.sh
source "$ROOT/tests/lib/registry.sh"


cleanup() {
    local rc=$? pid
    if [[ -n $CHILD ]]; then
        kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null || true
        # interrupted during `sw-loadgen start`: the server it forked is not in PIDS yet
        pid=$(kv "$(cat "$TMP/line" 2>/dev/null)" pid) && PIDS+=("$pid")
    fi
    stop_all_and_clean
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM


# tool LABEL CMD...: runs one sw-importgen/sw-loadgen call; its result line lands in LINE.
tool() {
    local label=$1 rc=0
    shift
    run_bg "$TMP/line" "$@" 2>>"$TMP/tools.log" || rc=$?
    LINE=$(<"$TMP/line")
    log "  $label: ${LINE:-failed (see $TMP/tools.log)}"
    [[ $rc == 0 ]] || tail -n 5 "$TMP/tools.log" >&2
    return $rc
}

val() { kv "$LINE" "$1" || echo n/a; }

elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s + 0 > 0) printf "%.1f", n / s; else print "n/a" }'; }

ensure_tools() {
    local t missing=()
    for t in "$SLIPWAY" "$LOADGEN" "$IMPORTGEN"; do
        [[ -x $t ]] && continue
        [[ $t == "$BUILD/"* ]] || fail "$t is not an executable"
        missing+=("${t##*/}")
    done
    if ((${#missing[@]})); then
        log "building ${missing[*]} in $BUILD"
        cmake -S "$ROOT" -B "$BUILD" >/dev/null
        cmake --build "$BUILD" -j2 --target "${missing[@]}" >/dev/null
    fi
    "$SLIPWAY" server --help >/dev/null 2>&1 || fail "'$SLIPWAY server --help' fails"
}

# ---- the registry ----

REG=         # 127.0.0.1:port
REG_PORT=
METRICS=     # the registry's Prometheus endpoint, when registry.sh can turn it on
METRICS_PORT=

# registry_start [reg_start options...]: (re)starts the one registry on REG_PORT, same storage.
registry_start() {
    local debug=()
    [[ -n $METRICS ]] && debug=(--debug "127.0.0.1:$METRICS_PORT")
    reg_start reg "$REG_PORT" "${debug[@]}" "$@" || fail "the registry did not start"
}

# reg_counts: "manifest-HEADs manifest-GETs blob-GETs" served so far (n/a without metrics).
reg_counts() {
    if [[ -z $METRICS ]]; then
        echo "n/a n/a n/a"
        return
    fi
    curl -s --max-time 5 "$METRICS" | awk '
        /^registry_http_requests_total\{/ {
            m = ($0 ~ /handler="manifest"/); b = ($0 ~ /handler="blob"/)
            if (m && $0 ~ /method="head"/) mh += $NF
            if (m && $0 ~ /method="get"/) mg += $NF
            if (b && $0 ~ /method="get"/) bg += $NF
        }
        END { printf "%d %d %d\n", mh, mg, bg }'
}

# reqs_since BEFORE N: "H/G/B" registry requests per tag since BEFORE (a reg_counts line).
reqs_since() {
    awk -v a="$(reg_counts)" -v b="$1" -v n="$2" 'BEGIN {
        if (a ~ /n\/a/ || n + 0 == 0) { print "n/a"; exit }
        split(a, x, " "); split(b, y, " ")
        printf "%.2f/%.2f/%.2f", (x[1] - y[1]) / n, (x[2] - y[2]) / n, (x[3] - y[3]) / n }'
}

# populate: BENCH_REPOS repositories bench/rNNN with tags t1..tN, every tag a distinct image (one
# shared layer, its own config), plus the latency repositories with a `latest` and the manifests
# the timed pushes will send. One seed image is built with umoci and pushed with skopeo; the
# rest goes straight over the distribution API (mount the layer, upload a config, PUT the
# manifest), which takes seconds instead of the minutes a skopeo copy per tag would.
populate() {
    mkdir -p "$TMP/pushes/notify" "$TMP/pushes/sched"
    reg_build_image seed amd64 >/dev/null || return 1
    reg_push seed "$REG/bench/seed:v1" || return 1
    run_bg "$TMP/populate.out" python3 - "$REG" "$REG_TMP/oci" seed bench/seed \
        "bench/r:$REPOS:$TAGS" "lat/notify:1:$PUSHES:$TMP/pushes/notify" \
        "lat/sched:$SCHED_LANES:$SCHED_SAMPLES:$TMP/pushes/sched" <<'PY'
import hashlib, http.client, json, os, sys, threading
from urllib.parse import urlsplit

reg, layout, seed_tag, seed_repo = sys.argv[1:5]
specs = sys.argv[5:]  # PREFIX:REPOS:TAGS, or PREFIX:LANES:SAMPLES:DIR for latency lanes
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"

def blob(d):
    with open(os.path.join(layout, "blobs", *d.split(":")), "rb") as f:
        return f.read()

with open(os.path.join(layout, "index.json")) as f:
    top = json.load(f)
desc = next(m for m in top["manifests"]
            if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == seed_tag)
seed = json.loads(blob(desc["digest"]))
seed_config = json.loads(blob(seed["config"]["digest"]))
layers = seed["layers"]

class Conn:
    def __init__(self):
        self.c = http.client.HTTPConnection(reg, timeout=30)
    def req(self, method, path, body=None, headers=None, want=(200, 201, 202)):
        self.c.request(method, path, body=body, headers=headers or {})
        r = self.c.getresponse()
        data = r.read()
        if r.status not in want:
            raise RuntimeError(f"{method} {path}: HTTP {r.status}: {data[:200]!r}")
        return r
    def upload(self, repo, data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        r = self.req("POST", f"/v2/{repo}/blobs/uploads/", want=(202,))
        loc = urlsplit(r.getheader("Location"))
        sep = "&" if loc.query else ""
        self.req("PUT", f"{loc.path}?{loc.query}{sep}digest={d}", body=data,
                 headers={"Content-Type": "application/octet-stream"}, want=(201,))
        return {"mediaType": OCI_CONFIG, "digest": d, "size": len(data)}
    def layers(self, repo):
        for l in layers:
            r = self.req("POST", f"/v2/{repo}/blobs/uploads/?mount={l['digest']}&from={seed_repo}",
                         want=(201, 202))
            if r.status == 202:  # not mounted: upload the bytes from the layout
                self.upload(repo, blob(l["digest"]))
    def image(self, repo, label):
        """A distinct image (its config carries label); returns the manifest bytes."""
        cfg = json.loads(json.dumps(seed_config))
        cfg.setdefault("config", {}).setdefault("Labels", {})["io.slipway.bench"] = label
        cd = self.upload(repo, json.dumps(cfg, separators=(",", ":"), sort_keys=True).encode())
        m = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cd, "layers": layers}
        return json.dumps(m, separators=(",", ":")).encode()
    def put(self, repo, tag, manifest):
        self.req("PUT", f"/v2/{repo}/manifests/{tag}", body=manifest,
                 headers={"Content-Type": OCI_MANIFEST}, want=(201,))

jobs = []
for spec in specs:
    parts = spec.split(":")
    for i in range(int(parts[1])):
        jobs.append((parts[0], i, int(parts[2]), parts[3] if len(parts) > 3 else None))

def work(mine):
    c = Conn()
    for prefix, i, k, out in mine:
        repo = f"{prefix}{i:03d}"
        c.layers(repo)
        if out is None:  # tags t1..tk, each its own image
            for t in range(1, k + 1):
                c.put(repo, f"t{t}", c.image(repo, f"{repo}:t{t}"))
        else:  # `latest` now; k manifests (configs uploaded) for the timed pushes
            c.put(repo, "latest", c.image(repo, f"{repo}:initial"))
            for s in range(k):
                with open(os.path.join(out, f"{i}-{s}.json"), "wb") as f:
                    f.write(c.image(repo, f"{repo}:push{s}"))

errors = []
def run(mine):
    try:
        work(mine)
    except BaseException as e:
        errors.append(e)
threads = [threading.Thread(target=run, args=(jobs[w::4],)) for w in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.exit(f"populate: {errors[0]}")
print(f"images={sum(j[2] for j in jobs)}")
PY
}

# ---- slipway servers ----

declare -A SURL=() SPID=() SDATA=() STOKEN=()

# start_slipway NAME TLS(0|1) EXTRA_FLAGS...: a server on a free port with a fresh data dir.
start_slipway() {
    local name=$1 tls=$2 line scheme=http tlsarg=() port
    shift 2
    port=$(reg_free_ports 1)
    rm -rf "${TMP:?}/$name"
    local cmd=("$SLIPWAY" server --data-dir "$TMP/$name" --listen "127.0.0.1:$port"
        --insecure-anonymous --insecure-registry "$REG" "$@" "${SLIPWAY_ARGS[@]}")
    if [[ $tls == 1 ]]; then
        scheme=https
        tlsarg=(--insecure-tls)
    else
        cmd+=(--plain-http)
    fi
    mkdir -p "$TMP/$name"
    SURL[$name]=$scheme://127.0.0.1:$port
    if ! run_bg "$TMP/line" "$LOADGEN" start --target slipway --url "${SURL[$name]}" \
        "${tlsarg[@]}" --timeout "$START_TIMEOUT" -- "${cmd[@]}" 2>>"$TMP/$name.log"; then
        : >"$TMP/line"
        tail -n 5 "$TMP/$name.log" >&2
        fail "slipway ($name) did not start; see $TMP/$name.log"
    fi
    line=$(<"$TMP/line")
    : >"$TMP/line"
    SPID[$name]=$(kv "$line" pid)
    PIDS+=("${SPID[$name]}")
    SDATA[$name]=$TMP/$name
    STOKEN[$name]=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' \
        "$TMP/$name/admin.kubeconfig" 2>/dev/null || true)
    log "  slipway $name on ${SURL[$name]} (ready in $(kv "$line" start_ms) ms)"
}

stop_slipway() {
    local keep=() p
    stop_pid "${SPID[$1]}"
    for p in "${PIDS[@]}"; do
        [[ $p == "${SPID[$1]}" ]] || keep+=("$p")
    done
    PIDS=("${keep[@]}")
}

# ig NAME MODE ARGS...: sw-importgen against slipway server NAME.
ig() {
    local name=$1 mode=$2 auth=() tlsarg=()
    shift 2
    [[ -n ${STOKEN[$name]:-} ]] && auth=(--token "${STOKEN[$name]}")
    [[ ${SURL[$name]} == https:* ]] && tlsarg=(--insecure-tls)
    tool "slipway $mode $*" "$IMPORTGEN" "$mode" --url "${SURL[$name]}" --registry "$REG" \
        "${auth[@]}" "${tlsarg[@]}" "$@"
}

# ---- the measurements ----

# record KEY RATE P50 P99 REQS CHECK: keeps, for figure KEY, the round with the highest RATE
# (the one least disturbed by whatever else the machine was doing), and lists every round's.
record() {
    local key=$1
    R[$key.rounds]="${R[$key.rounds]:+${R[$key.rounds]} }$2"
    if [[ -n ${R[$key.rate]:-} ]] && ! awk -v a="$2" -v b="${R[$key.rate]}" \
        'BEGIN { exit !(a ~ /^[0-9.]+$/ && (b !~ /^[0-9.]+$/ || a + 0 > b + 0)) }'; then
        return 0
    fi
    R[$key.rate]=$2 R[$key.p50]=$3 R[$key.p99]=$4 R[$key.reqs]=$5 R[$key.check]=$6
}

# record_tool KEY BEFORE N CHECK: record from the last sw-importgen line.
record_tool() {
    local p50 p99
    p50=$(kv "$LINE" p50_ms || echo -)
    p99=$(kv "$LINE" p99_ms || echo -)
    record "$1" "$(val rate)" "$p50" "$p99" "$(reqs_since "$2" "$3")" "$4"
}

write_urls() {
    local i t
    for ((i = 0; i < REPOS; i++)); do
        for ((t = 1; t <= TAGS; t++)); do
            printf 'url = "http://%s/v2/bench/r%03d/manifests/t%d"\n' "$REG" "$i" "$t"
        done
    done >"$TMP/urls.cfg"
}

measure_floor() {
    local before n t0 secs r
    log "== protocol floor: straight at the registry, $P in flight"
    before=$(reg_counts)
    tool "HEAD, sw-importgen" "$IMPORTGEN" head --registry "$REG" --repos "$REPOS" \
        --tags "$TAGS" --inflight "$P" || true
    record_tool floor "$before" "$NTAGS" ""

    before=$(reg_counts)
    t0=$(now)
    run_bg "$TMP/curl.out" curl -sS --no-progress-meter -I --parallel --parallel-max "$P" \
        -H "$ACCEPT" -K "$TMP/urls.cfg" 2>>"$TMP/tools.log" || true
    secs=$(elapsed "$t0")
    n=$(grep -ci '^docker-content-digest:' "$TMP/curl.out" || true)
    r=$(rate "$n" "$secs")
    [[ $n == "$NTAGS" ]] || r=n/a
    log "  HEAD, curl --parallel: $n/$NTAGS digests in $secs s: $r tags/s"
    record curl "$r" - - "$(reqs_since "$before" "$NTAGS")" ""

    before=$(reg_counts)
    tool "GET manifest + GET config, sw-importgen" "$IMPORTGEN" head --get --no-head \
        --registry "$REG" --repos "$REPOS" --tags "$TAGS" --inflight "$P" || true
    record_tool full "$before" "$NTAGS" ""
}

# skopeo_run KEY [skopeo inspect options...]: SKOPEO_SAMPLE tags spread evenly over all
# repositories, P processes at a time.
skopeo_run() {
    local key=$1 before t0 n secs r
    shift
    before=$(reg_counts)
    t0=$(now)
    run_bg "$TMP/skopeo.out" xargs -P "$P" -n 1 skopeo inspect --tls-verify=false \
        --format '{{.Digest}}' "$@" <"$TMP/skopeo.in" 2>"$TMP/skopeo.err" || true
    secs=$(elapsed "$t0")
    # 16 processes share one stdout, and their digests and newlines can interleave
    n=$(grep -o 'sha256:[0-9a-f]\{64\}' "$TMP/skopeo.out" | wc -l)
    r=$(rate "$n" "$secs")
    log "  skopeo inspect $*: $n/$SKOPEO_SAMPLE digests in $secs s: $r tags/s"
    if [[ $n != "$SKOPEO_SAMPLE" ]]; then
        r=n/a
        log "  (round not counted; first error: $(head -n 1 "$TMP/skopeo.err"))"
    fi
    cat "$TMP/skopeo.err" >>"$TMP/tools.log"
    record "$key" "$r" - - "$(reqs_since "$before" "$SKOPEO_SAMPLE")" ""
}

measure_skopeo() {
    log "== skopeo inspect, $SKOPEO_SAMPLE tags sampled evenly, $P processes at a time"
    skopeo_run skopeo_nt --no-tags
    skopeo_run skopeo
}

measure_isi() {
    local before per=()
    [[ $ISI_PER == tag ]] && per=(--per-tag)
    log "== slipway: ImageStreamImport POSTs, one per $ISI_PER, $P in flight (--no-controllers)"
    start_slipway isi 0 --no-controllers
    before=$(reg_counts)
    ig isi isi --repos "$REPOS" --tags "$TAGS" --inflight "$P" "${per[@]}" || true
    record_tool isi1 "$before" "$NTAGS" "$(val written)/$NTAGS written, $(val failed) failed"
    before=$(reg_counts)
    ig isi isi --repos "$REPOS" --tags "$TAGS" --inflight "$P" "${per[@]}" || true
    record_tool isi2 "$before" "$NTAGS" "$(val events) tag events after it (first pass: $NTAGS)"
    stop_slipway isi
}

measure_controller() {
    local before
    log "== slipway: import controller, $REPOS streams x $TAGS DockerImage spec tags"
    start_slipway ctl 0
    before=$(reg_counts)
    ig ctl controller --repos "$REPOS" --tags "$TAGS" --inflight "$P" --deadline 120 || true
    record_tool ctl "$before" "$NTAGS" \
        "$(val imported)/$NTAGS with status, $(val failed) failed; creates $(val create_secs) s"
    stop_slipway ctl
}

measure_notify() {
    log "== push-to-status latency with registry notifications ($PUSHES pushes, one at a time)"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/notify.token"
    start_slipway notify 1 --registry-notifications-token-file "$TMP/notify.token" \
        --scheduled-import-interval 86400
    reg_stop reg || true
    registry_start --notify "${SURL[notify]}/notifications/registry" \
        "$(<"$TMP/notify.token")" --ca "${SDATA[notify]}/tls.crt"
    ig notify latency --repo-prefix lat/notify --stream-prefix notify --repos 1 \
        --samples "$PUSHES" --pushes "$TMP/pushes/notify" --gap-max 0.1 --wait "$NOTIFY_WAIT" ||
        true
    R[notify.p50]=$(val p50_ms) R[notify.p99]=$(val p99_ms) R[notify.max]=$(val max_ms)
    R[notify.check]="$(val observed)/$(val pushes) in status within ${NOTIFY_WAIT} s"
    stop_slipway notify
    reg_stop reg || true
    registry_start
}

measure_scheduled() {
    local wait=$((SCHED_INTERVAL * 3 + 5))
    log "== push-to-status latency, scheduled imports every $SCHED_INTERVAL s, no notifications"
    log "   ($SCHED_LANES streams x $SCHED_SAMPLES pushes, each after a random 0-$SCHED_INTERVAL s pause)"
    start_slipway sched 0 --scheduled-import-interval "$SCHED_INTERVAL" \
        --max-scheduled-imports-per-minute 100000
    ig sched latency --repo-prefix lat/sched --stream-prefix sched --repos "$SCHED_LANES" \
        --samples "$SCHED_SAMPLES" --pushes "$TMP/pushes/sched" --gap-max "$SCHED_INTERVAL" \
        --wait "$wait" || true
    R[sched.p50]=$(val p50_ms) R[sched.p99]=$(val p99_ms) R[sched.max]=$(val max_ms)
    R[sched.check]="$(val observed)/$(val pushes) in status within $wait s"
    stop_slipway sched
}

# ---- report ----


maxof() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/) { print b; exit }
        if (b !~ /^[0-9.]+$/) { print a; exit }
        print (a + 0 >= b + 0) ? a : b }'
}

verdict() {
    awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN {
        if (v == "inf") { print (op == ">=") ? "PASS" : "MISS"; exit }
        if (v !~ /^[0-9.]+$/) { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= lim + 0) : (v + 0 < lim + 0)
        print ok ? "PASS" : "MISS" }'
}

row() { # row LABEL KEY NOTE
    local note="rounds: ${R[$2.rounds]:-none}${R[$2.check]:+; ${R[$2.check]}}${3:+; $3}"
    printf '%-44s %8s %7s %7s %15s  %s\n' "$1" "${R[$2.rate]:-n/a}" "${R[$2.p50]:--}" \
        "${R[$2.p99]:--}" "${R[$2.reqs]:-n/a}" "$note"
}


percent() { awk -v r="$1" 'BEGIN { if (r == "n/a") print r; else printf "%.0f%%", r * 100 }'; }

target() { # target LABEL VALUE SHOWN LIMIT OP
    printf '  %-60s %9s  %s\n' "$1" "$3" "$(verdict "$2" "$4" "$5")"
}

report() {
    local floor skopeo sk1 sk2 r
    echo
    echo "slipway image import vs skopeo $(skopeo --version 2>/dev/null | awk '{print $3}') and" \
        "the protocol floor — docker-registry $(docker-registry --version 2>/dev/null | awk '{print $3}'), $(nproc) cores," \
        "$(uname -r), one run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "$NTAGS tags = $REPOS repositories x $TAGS tags, every tag a distinct OCI image (own config" \
        "blob, one shared layer). Everything runs $P in flight, over plain HTTP/1.1 on 127.0.0.1."
    echo "slipway: --store-sync full (default); ImageStreamImport POSTs carry one $ISI_PER each and" \
        "are timed end to end (status written, checked after)."
    echo "skopeo: $SKOPEO_SAMPLE tags sampled evenly over the $NTAGS, tags/s extrapolated from the sample."
    echo "Each throughput figure is the best of $ROUNDS interleaved rounds (all rounds in the note);" \
        "load average before/after: $LOAD0 / $LOAD1."
    echo "reg req/tag = manifest HEADs / manifest GETs / blob GETs the registry served per tag" \
        "(its Prometheus counters); p50/p99 = per request."
    echo
    printf '%-44s %8s %7s %7s %15s  %s\n' "figure" "tags/s" "p50 ms" "p99 ms" "reg req/tag" "note"
    row "floor: HEAD, sw-importgen (libcurl)" floor "one keep-alive connection per worker"
    row "floor: HEAD, curl --parallel" curl "one curl process, its start included"
    row "floor: GET manifest + GET config" full "what a first import fetches (no HEAD: nothing to compare)"
    row "skopeo inspect --no-tags" skopeo_nt "one process per tag"
    row "skopeo inspect (lists the repo's tags too)" skopeo ""
    row "slipway ISI, first import" isi1 "one ISI per $ISI_PER"
    row "slipway ISI, again (unchanged tags)" isi2 ""
    row "slipway controller, spec tags" ctl "create to last status"
    echo
    printf '%-46s %9s %8s %8s  %s\n' "push-to-status latency" "p50 ms" "p99 ms" "max ms" "note"
    printf '%-46s %9s %8s %8s  %s\n' "registry notification" "${R[notify.p50]:-n/a}" \
        "${R[notify.p99]:-n/a}" "${R[notify.max]:-n/a}" "${R[notify.check]:-}"
    printf '%-46s %9s %8s %8s  %s\n' "scheduled, --scheduled-import-interval $SCHED_INTERVAL" \
        "${R[sched.p50]:-n/a}" "${R[sched.p99]:-n/a}" "${R[sched.max]:-n/a}" \
        "${R[sched.check]:-}; random push phase: expect ~interval/2 + <1 s tick"
    floor=$(maxof "${R[floor.rate]:-n/a}" "${R[curl.rate]:-n/a}")
    skopeo=$(maxof "${R[skopeo_nt.rate]:-n/a}" "${R[skopeo.rate]:-n/a}")
    sk1=$(ratio "${R[isi1.rate]:-n/a}" "$skopeo")
    sk2=$(ratio "${R[isi2.rate]:-n/a}" "$skopeo")
    echo
    echo "Ratios (skopeo = the faster skopeo row, $skopeo tags/s; HEAD floor = the faster floor row, $floor tags/s):"
    printf '  %-62s %8s\n' "slipway first import / skopeo" "$(times "$sk1")" \
        "slipway controller / skopeo" "$(times "$(ratio "${R[ctl.rate]:-n/a}" "$skopeo")")" \
        "slipway unchanged re-import / skopeo" "$(times "$sk2")" \
        "full-fetch floor / skopeo (plain client, first-import fetches)" \
        "$(times "$(ratio "${R[full.rate]:-n/a}" "$skopeo")")" \
        "slipway first import / full-fetch floor" \
        "$(percent "$(ratio "${R[isi1.rate]:-n/a}" "${R[full.rate]:-n/a}")")" \
        "slipway unchanged re-import / HEAD floor" \
        "$(percent "$(ratio "${R[isi2.rate]:-n/a}" "$floor")")"
    echo
    echo "Targets (issue 3):"
    target "slipway first import >= 20x skopeo inspect" "$sk1" "$(times "$sk1")" 20 ">="
    target "slipway unchanged re-import (HEAD only) >= 20x skopeo inspect" "$sk2" \
        "$(times "$sk2")" 20 ">="
    r=$(ratio "${R[isi2.rate]:-n/a}" "$floor")
    target "slipway unchanged re-import >= 80% of the HEAD floor" "$r" "$(percent "$r")" 0.8 ">="
    target "notification push-to-status p99 < 1 s (ms)" "${R[notify.p99]:-n/a}" \
        "${R[notify.p99]:-n/a}" 1000 "<"
}

main() {
    set -m
    local t0 ports t i idx round phase
    for t in docker-registry skopeo umoci curl python3; do
        command -v "$t" >/dev/null || fail "$t not found (run scripts/install-deps)"
    done
    ensure_tools
    export HOME=$TMP # skopeo and umoci write nothing into the real home
    reg_init "$TMP/reg"
    ports=$(reg_free_ports 2)
    read -r REG_PORT METRICS_PORT <<<"$ports"
    REG=127.0.0.1:$REG_PORT
    if declare -f reg_start | grep -q -- '--debug)'; then
        METRICS=http://127.0.0.1:$METRICS_PORT/metrics
    else
        log "tests/lib/registry.sh has no reg_start --debug: the registry request counts are n/a"
    fi
    log "== setup (untimed): registry on $REG, $NTAGS tags + latency repositories"
    t0=$(now)
    registry_start
    populate || fail "could not fill the registry"
    log "  $(cat "$TMP/populate.out") pushed in $(elapsed "$t0") s"
    write_urls
    for ((i = 0; i < SKOPEO_SAMPLE; i++)); do
        idx=$((i * NTAGS / SKOPEO_SAMPLE))
        printf 'docker://%s/bench/r%03d:t%d\n' "$REG" $((idx / TAGS)) $((idx % TAGS + 1))
    done >"$TMP/skopeo.in"
    tool "warm-up, every tag's manifest and config (untimed)" "$IMPORTGEN" head --get \
        --registry "$REG" --repos "$REPOS" --tags "$TAGS" --inflight "$P" ||
        fail "the registry does not serve every tag"
    LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    # Rounds interleave the throughput phases, so a burst of outside load hits one round of
    # each rather than every round of one; each figure keeps its best round.
    for ((round = 1; round <= ROUNDS; round++)); do
        log "==== round $round of $ROUNDS"
        for phase in floor skopeo isi controller; do
            if [[ ,$ONLY, == *,$phase,* ]]; then "measure_$phase"; fi
        done
    done
    for phase in notify scheduled; do
        if [[ ,$ONLY, == *,$phase,* ]]; then "measure_$phase"; fi
    done
    LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
    reg_alive || log "WARNING: the registry died during the run"
    report
}

main "$@"
