#!/usr/bin/env bash
# bench/build.sh: slipway's daemonless build (`slipway builder`) against umoci + skopeo copy,
# against buildah bud --storage-driver vfs + buildah push, against the single-stream floor
# (tar | gzip -6 | sha256sum, tar | zstd -3 | sha256sum), and (issue 16) the same context plus
# two RUN lines through slipway's buildah backend against plain buildah bud + push, in one run
# (issue 4). A deterministic
# context of BENCH_FILES files (~BENCH_MB MB of text and random data, a Dockerfile `FROM scratch`
# + `COPY . /app/`) is built and pushed by each to one local docker-registry
# (tests/lib/registry.sh); slipway cold and unchanged, gzip and zstd, plus the user path
# (start-build --from-dir --wait through the controllers) once. Everything runs on free
# 127.0.0.1 ports in a temp dir that is removed on any exit (Ctrl-C included). Prints medians,
# ratios and PASS/MISS for the issue's targets; progress goes to stderr.
# Knobs (environment): BENCH_FILES (2000), BENCH_MB (50), BENCH_RUNS (3), BENCH_ONLY (phases),
# BENCH_KEEP=1; SLIPWAY (binary). See bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build}
SLIPWAY=${SLIPWAY:-$BUILD/slipway}
FILES=${BENCH_FILES:-2000}
MB=${BENCH_MB:-50}
RUNS=${BENCH_RUNS:-3}
ONLY=${BENCH_ONLY:-floor,slipway,umoci,buildah,run,user}
NS=default
START_TIMEOUT=60

TMP=$(mktemp -d /tmp/slipway-build-bench.XXXXXX)
CTX=$TMP/ctx
PIDS=()   # slipway servers we started (the registry is in REG_PIDS)
CHILD=    # the foreground command running right now (its own process group)
declare -A R=()    # R[key.runs] = seconds of each run; also R[key.digests/.blobs/.note/.size]
declare -A NA=()   # NA[tool] = why it is n/a


# fail MESSAGE: registry.sh's helpers call this on errors too.
fail() {
    log "build.sh: $*"
    exit 1
}

# shellcheck source=tests/lib/registry.sh
source "$ROOT/tests/lib/registry.sh"


cleanup() {
    local rc=$?
    if [[ -n $CHILD ]]; then
        kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    stop_all_and_clean
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

RUN_BG_STDERR=1 # run_bg (bench/lib.sh) captures stderr as well here

since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}'; }

# timed KEY OUT CMD...: runs CMD (output in OUT), adds its wall time to KEY's runs. A failed
# run adds "fail", and its last lines go to stderr.
timed() {
    local key=$1 out=$2 t0 secs rc=0
    shift 2
    t0=$(now)
    run_bg "$out" "$@" || rc=$?
    secs=$(since "$t0")
    if [[ $rc != 0 ]]; then
        log "  $key: FAILED (exit $rc):"
        tail -n 8 "$out" | sed 's/^/    /' >&2
        secs=fail
    else
        log "  $key: $secs s"
    fi
    R[$key.runs]="${R[$key.runs]:+${R[$key.runs]} }$secs"
    return $rc
}

# add KEY SECS: records a computed run (a sum of timed parts).
add() { R[$1.runs]="${R[$1.runs]:+${R[$1.runs]} }$2"; }

sum() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/) print "fail"; else printf "%.3f", a + b }'; }

minus() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/) print "n/a"; else printf "%.3f", a - b }'; }

# med KEY: the median of KEY's runs ("n/a" when any run failed or none ran).
med() {
    local runs=${R[$1.runs]:-}
    [[ -n $runs && $runs != *fail* ]] || { echo n/a; return; }
    tr ' ' '\n' <<<"$runs" | sort -g | awk '{v[NR] = $1}
        END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ensure_slipway() {
    if [[ ! -x $SLIPWAY ]]; then
        [[ $SLIPWAY == "$BUILD/"* ]] || fail "$SLIPWAY is not an executable"
        log "building slipway in $BUILD"
        cmake -S "$ROOT" -B "$BUILD" >/dev/null
        cmake --build "$BUILD" -j2 --target slipway >/dev/null
    fi
    "$SLIPWAY" builder --help >/dev/null 2>&1 ||
        fail "'$SLIPWAY builder --help' fails (an older build without the builder? run make build)"
}

# ---- the context ----

# make_context DIR FILES MB: FILES files in 20 directories of 7 each: a Dockerfile, round.txt
# (rewritten every round, see set_round) and FILES-2 data files whose sizes are log-uniform
# (100 B-1 MB before scaling to MB in all), alternately text (lines of made-up words, ~3:1 under
# gzip) and random bytes, so that about half the bytes are each. Every run gives the same tree.
make_context() {
    python3 - "$@" <<'PY'
import math, os, random, sys
root, nfiles, mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(20240404)
alpha = "abcdefghijklmnopqrstuvwxyz"
words = ["".join(rng.choices(alpha, k=rng.randint(2, 10))) for _ in range(1000)]
lines = [" " * rng.choice((0, 4, 8)) + " ".join(rng.choices(words, k=rng.randint(1, 12))) + "\n"
         for _ in range(5000)]
n = max(1, nfiles - 2)
weights = [math.exp(rng.uniform(math.log(100), math.log(1_000_000))) for _ in range(n)]
scale = (mb * 1_000_000 - 100) / sum(weights)
text = rand = 0
dirs = set()
for i, w in enumerate(weights):
    size = max(1, int(w * scale))
    d = os.path.join(root, "d%02d" % (i % 20), "s%d" % (i % 7))
    if d not in dirs:
        os.makedirs(d, exist_ok=True)
        dirs.add(d)
    if text <= rand:
        data = b""
        while len(data) < size:
            data += "".join(rng.choices(lines, k=size // 30 + 1)).encode()
        data, ext = data[:size], "txt"
        text += size
    else:
        data, ext = rng.randbytes(size), "bin"
        rand += size
    path = os.path.join(d, "f%04d.%s" % (i, ext))
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o755 if i % 50 == 0 else 0o644)
with open(os.path.join(root, "Dockerfile"), "w") as f:
    f.write("FROM scratch\nCOPY . /app/\n")
with open(os.path.join(root, "round.txt"), "w") as f:
    f.write("round 0\n")
ndirs = len(dirs) + len({os.path.dirname(d) for d in dirs})
print("files=%d dirs=%d bytes=%d text=%d random=%d" % (n + 2, ndirs, text + rand + 34, text, rand))
PY
}

# set_round N: a different round.txt every round, so no round's layers match another's: skopeo's
# and buildah's blob-info cache (/var/lib/containers/cache for root) would otherwise mount a
# layer pushed in an earlier round instead of uploading it. Also writes the upload tar.
set_round() {
    printf 'round %d\n' "$1" >"$CTX/round.txt"
    find "$CTX" -exec touch -h -d @1700000000 {} +
    tar -C "$CTX" -cf "$TMP/upload.tar" .
}

# ---- slipway ----

REG=
SURL='' SDATA='' STOKEN=''

# start_slipway NAME [FLAGS...]: slipway server (HTTPS) on a free port with a fresh data dir;
# sets SURL, SDATA, STOKEN; the pid goes into PIDS.
start_slipway() {
    local name=$1 port pid i
    shift
    port=$(reg_free_ports 1)
    SDATA=$TMP/$name
    SURL=https://127.0.0.1:$port
    mkdir -p "$SDATA"
    "$SLIPWAY" server --data-dir "$SDATA" --listen "127.0.0.1:$port" --insecure-registry "$REG" \
        "$@" >>"$TMP/$name.log" 2>&1 </dev/null &
    pid=$!
    PIDS+=("$pid")
    for ((i = 0; i < START_TIMEOUT * 20; i++)); do
        if [[ $(curl -sk --max-time 2 -o /dev/null -w '%{http_code}' "$SURL/readyz") == 200 ]] &&
            [[ -f $SDATA/admin.kubeconfig ]]; then
            STOKEN=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$SDATA/admin.kubeconfig")
            log "  slipway $name on $SURL"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    tail -n 5 "$TMP/$name.log" >&2
    fail "slipway server ($name) did not start; see $TMP/$name.log"
}

stop_slipway() {
    local p
    for p in "${PIDS[@]}"; do
        stop_pid "$p"
    done
    PIDS=()
}

# api METHOD PATH [curl args...]: build.openshift.io in namespace NS, with the admin token.
api() {
    local method=$1 path=$2
    shift 2
    curl -sSk --max-time 120 -X "$method" -H "Authorization: Bearer $STOKEN" "$@" \
        "$SURL/apis/build.openshift.io/v1/namespaces/$NS/$path"
}

# field EXPR < JSON: a Python expression over the document o.
field() { python3 -c 'import json, sys; o = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# mkbc NAME IMAGE [DOCKERFILE]: a BuildConfig with a Binary source, the context's Dockerfile
# (or DOCKERFILE's text instead), output IMAGE.
mkbc() {
    local out df=
    [[ -n ${3:-} ]] && df=", \"dockerfile\": $(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' "$3")"
    out=$(api POST buildconfigs -H 'Content-Type: application/json' -d "{\"apiVersion\":
        \"build.openshift.io/v1\", \"kind\": \"BuildConfig\", \"metadata\": {\"name\": \"$1\"},
        \"spec\": {\"source\": {\"type\": \"Binary\"$df}, \"strategy\": {\"type\": \"Docker\",
        \"dockerStrategy\": {}}, \"output\": {\"to\": {\"kind\": \"DockerImage\",
        \"name\": \"$2\"}}}}") || fail "create BuildConfig $1"
    [[ $(field 'o["metadata"]["name"]' <<<"$out" 2>/dev/null) == "$1" ]] ||
        fail "create BuildConfig $1: $out"
}

# start_binary BC: instantiatebinary with the round's upload tar; prints the Build's name.
start_binary() {
    api POST "buildconfigs/$1/instantiatebinary" -H 'Content-Type: application/octet-stream' \
        --data-binary "@$TMP/upload.tar" | field 'o["metadata"]["name"]'
}

# builder KEY BC COMPRESSION: one Build of BC (upload untimed, token minted untimed), then
# `slipway builder` timed from start to exit. Log in $TMP/KEY.log; the pushed digest and the
# "Source ... at X s" time are kept.
builder() {
    local key=$1 bc=$2 comp=$3 b out=$TMP/$1.log src digest pushed
    b=$(start_binary "$bc") || fail "instantiatebinary $bc"
    api POST "builds/$b/token" | field 'o["token"]' >"$TMP/token" || fail "token for $b"
    mkdir -p "$TMP/work"
    timed "$key" "$out" env SLIPWAY_COMPRESSION="$comp" "$SLIPWAY" builder --server "$SURL" \
        --ca "$SDATA/tls.crt" --token-file "$TMP/token" --namespace "$NS" --build "$b" \
        --insecure-registry "$REG" --workdir "$TMP/work" || return 0
    digest=$(grep -o 'Successfully pushed .*@sha256:[0-9a-f]*' "$out" | sed 's/.*@//') || digest=none
    R[$key.digests]="${R[$key.digests]:+${R[$key.digests]} }$digest"
    src=$(sed -n 's/^Source: .* at \([0-9.]*\) s$/\1/p' "$out" | head -n 1)
    add "${key}_src" "${src:-fail}"
    pushed=$(sed -n 's/^Successfully pushed .* in \([0-9.]*\) s$/\1/p' "$out" | head -n 1)
    add "${key}_pushed" "${pushed:-fail}"
    R[$key.blobs]=$(grep -o 'Blobs: [0-9]* uploaded' "$out" | head -n 1)
    cp "$out" "$TMP/$key.last.log"
}

measure_slipway() {
    local round=$1 comp
    for comp in gzip zstd; do
        mkbc "bench-$comp-$round" "$REG/slipway/$comp-$round:latest"
        builder "sw_${comp}_cold" "bench-$comp-$round" "$comp"
        builder "sw_${comp}_again" "bench-$comp-$round" "$comp"
        if ! grep -qE 'unchanged, reused from the previous image|unchanged input: reusing' \
            "$TMP/sw_${comp}_again.log"; then
            R[sw_${comp}_again.note]="the $comp layer was NOT reused"
        fi
        layer_size "sw_$comp" "slipway/$comp-$round:latest"
    done
}

# layer_size KEY IMAGE: the compressed size of IMAGE's layer (untimed), for the table.
layer_size() {
    local s
    s=$(skopeo inspect --tls-verify=false --raw "docker://$REG/$2" 2>/dev/null |
        field '"%.1f" % (sum(l["size"] for l in o["layers"]) / 1e6)' 2>/dev/null) || s='?'
    R[$1.size]=$s
}

# ---- the others ----

# shellcheck disable=SC2016 # the inner bash expands its arguments
measure_floor() {
    timed floor_gzip "$TMP/floor.out" bash -c 'set -o pipefail
        tar -C "$1" -cf - . | gzip -6 | sha256sum' _ "$CTX" || true
    if command -v zstd >/dev/null; then
        timed floor_zstd "$TMP/floor.out" bash -c 'set -o pipefail
            tar -C "$1" -cf - . | zstd -3 -q -c | sha256sum' _ "$CTX" || true
    fi
}

# umoci, two ways, each from an empty layout and then `skopeo copy` to the registry (parts and
# total recorded): `ins` = init + new + insert of the tree at /app; `rep` = init + new + unpack
# + cp -a of the tree into rootfs/app (the COPY) + repack. umoci compresses with pgzip.
# shellcheck disable=SC2016 # the inner bash expands its arguments
umoci_run() {
    local how=$1 round=$2 lay=$TMP/umoci-$1 ok=1 rl=()
    [[ $(id -u) == 0 ]] || rl=(--rootless)
    if [[ $how == ins ]]; then
        timed umoci_ins_build "$TMP/umoci.out" bash -c 'set -e
            umoci init --layout "$1"
            umoci new --image "$1:app"
            umoci insert "${@:3}" --image "$1:app" "$2" /app' _ "$lay" "$CTX" "${rl[@]}" || ok=0
    else
        timed umoci_rep_build "$TMP/umoci.out" bash -c 'set -e
            umoci init --layout "$1"
            umoci new --image "$1:app"
            umoci unpack "${@:4}" --image "$1:app" "$3"
            mkdir -p "$3/rootfs/app"
            cp -a "$2/." "$3/rootfs/app/"
            umoci repack --image "$1:app" "$3"' _ "$lay" "$CTX" "$TMP/umoci-bundle" "${rl[@]}" ||
            ok=0
    fi
    if [[ $ok == 1 ]]; then
        timed "umoci_${how}_push" "$TMP/skopeo.out" skopeo copy -q --dest-tls-verify=false \
            "oci:$lay:app" "docker://$REG/umoci/$how-$round:latest" || ok=0
    fi
    if [[ $ok == 1 ]]; then
        add "umoci_${how}_total" "$(sum "${R[umoci_${how}_build.runs]##* }" "${R[umoci_${how}_push.runs]##* }")"
        layer_size "umoci_$how" "umoci/$how-$round:latest"
    else
        add "umoci_${how}_total" fail
    fi
    rm -rf "$lay" "$TMP/umoci-bundle"
}

measure_umoci() {
    umoci_run ins "$1"
    umoci_run rep "$1"
}

buildah_cmd() {
    buildah --root "$TMP/buildah/root" --runroot "$TMP/buildah/run" --storage-driver vfs "$@"
}

# buildah_probe: can buildah bud a FROM scratch + COPY image here? Sets NA[buildah] if not.
buildah_probe() {
    if ! command -v buildah >/dev/null; then
        NA[buildah]="buildah is not installed (scripts/install-deps installs it)"
        return
    fi
    mkdir -p "$TMP/probe"
    echo probe >"$TMP/probe/x"
    printf 'FROM scratch\nCOPY x /x\n' >"$TMP/probe/Dockerfile"
    if ! buildah_cmd bud -q -f "$TMP/probe/Dockerfile" -t localhost/probe:1 "$TMP/probe" \
        >"$TMP/buildah-probe.out" 2>&1; then
        NA[buildah]="buildah bud --storage-driver vfs fails here: $(grep -v '^$' "$TMP/buildah-probe.out" | tail -n 1)"
    fi
    rm -rf "$TMP/buildah" "$TMP/probe"
}

# buildah: bud (FROM scratch, COPY; vfs stores the layer uncompressed) then push (compresses
# with gzip while it uploads), each from an empty storage root.
measure_buildah() {
    local round=$1 ok=1
    timed buildah_bud "$TMP/buildah.out" buildah_cmd bud -q -f "$CTX/Dockerfile" \
        -t "localhost/bench/app:$round" "$CTX" || ok=0
    if [[ $ok == 1 ]]; then
        timed buildah_push "$TMP/buildah.out" buildah_cmd push --tls-verify=false -q \
            "localhost/bench/app:$round" "docker://$REG/buildah/app-$round:latest" || ok=0
    fi
    if [[ $ok == 1 ]]; then
        add buildah_total "$(sum "${R[buildah_bud.runs]##* }" "${R[buildah_push.runs]##* }")"
        layer_size buildah "buildah/app-$round:latest"
    else
        add buildah_total fail
    fi
    rm -rf "$TMP/buildah"
}

# The RUN phase (issue 16): the same context, FROM a busybox base, COPY . /app/ plus two RUN
# lines, through slipway's buildah backend (the builder timed from start to pushed digest) and
# through plain buildah bud (chroot isolation) + buildah push, each from an empty storage root
# (so both pull the base). The base is made once, untimed, by buildah from the static busybox.
setup_run() {
    local bb
    bb=$(command -v busybox) || { NA[run]="busybox is not installed (busybox-static)"; return; }
    [[ -n ${NA[buildah]:-} ]] && { NA[run]=${NA[buildah]}; return; }
    [[ $(id -u) == 0 ]] || { NA[run]="the buildah backend runs RUN as root only"; return; }
    mkdir -p "$TMP/bb"
    cp "$bb" "$TMP/bb/busybox"
    printf 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n' \
        >"$TMP/bb/Dockerfile"
    if ! buildah_cmd bud --isolation chroot -q -t localhost/bench/busybox:1 "$TMP/bb" \
        >"$TMP/bb.out" 2>&1 ||
        ! buildah_cmd push --tls-verify=false -q localhost/bench/busybox:1 \
            "docker://$REG/base/busybox:1" >>"$TMP/bb.out" 2>&1; then
        NA[run]="cannot build the busybox base: $(tail -n 1 "$TMP/bb.out")"
    fi
    rm -rf "$TMP/buildah" "$TMP/bb"
    printf 'FROM %s/base/busybox:1\nCOPY . /app/\nRUN echo built > /app/run1.txt\nRUN find /app -type f | wc -l > /app/run2.txt\n' \
        "$REG" >"$TMP/Dockerfile.run"
}

measure_run() {
    local round=$1 ok=1
    mkbc "bench-run-$round" "$REG/slipway/run-$round:latest" "$TMP/Dockerfile.run"
    builder sw_run "bench-run-$round" gzip
    grep -q '^Backend: buildah' "$TMP/sw_run.log" || R[sw_run.note]="NOT built by the buildah backend"
    timed buildah_run_bud "$TMP/buildah-run.out" buildah_cmd bud --isolation chroot \
        --tls-verify=false -q -f "$TMP/Dockerfile.run" -t "localhost/bench/run:$round" "$CTX" || ok=0
    if [[ $ok == 1 ]]; then
        timed buildah_run_push "$TMP/buildah-run.out" buildah_cmd push --tls-verify=false -q \
            "localhost/bench/run:$round" "docker://$REG/buildah/run-$round:latest" || ok=0
    fi
    if [[ $ok == 1 ]]; then
        add buildah_run_total "$(sum "${R[buildah_run_bud.runs]##* }" "${R[buildah_run_push.runs]##* }")"
    else
        add buildah_run_total fail
    fi
    rm -rf "$TMP/buildah"
}

# the user path once: slipway server with its controllers, `start-build --from-dir --wait`
# (the CLI tars and uploads the directory; the controller spawns the builder), cold then again.
measure_user() {
    local key
    log "== slipway user path: server with controllers, start-build --from-dir --wait"
    start_slipway user
    mkbc bench-user "$REG/slipway/user:latest"
    for key in user_cold user_again; do
        timed "$key" "$TMP/$key.log" env KUBECONFIG="$SDATA/admin.kubeconfig" \
            "$SLIPWAY" start-build bench-user --from-dir "$CTX" --wait -n "$NS" || true
    done
    R[user.dur]=$(api GET builds | field '" / ".join("%.2f" % (int(i["status"].get("duration", 0)) / 1e9)
        for i in sorted(o["items"], key=lambda i: i["metadata"]["name"]))' 2>/dev/null || echo ?)
    stop_slipway
}

# ---- report ----


verdict() { # verdict VALUE LIMIT OP(<=|<)
    awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN {
        if (v !~ /^[0-9.]+$/) { print "n/a"; exit }
        ok = (op == "<=") ? (v + 0 <= lim + 0) : (v + 0 < lim + 0)
        print ok ? "PASS" : "MISS" }'
}

# cell KEY [TOOL]: the median, or n/a when TOOL was not measurable.
cell() {
    if [[ -n ${2:-} && -n ${NA[$2]:-} ]]; then echo n/a; else med "$1"; fi
}

row() { # row LABEL GZIP ZSTD NOTE
    printf '%-46s %8s %8s  %s\n' "$1" "$2" "$3" "$4"
}

runs() { # runs KEY...: "runs a b c" of each key, for the notes
    local k out=
    for k in "$@"; do out="${out:+$out; }${R[$k.runs]:-none}"; done
    printf 'runs %s' "$out"
}

fastest() { # fastest A B: the smaller of two figures, ignoring n/a
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/) { print b; exit }
        if (b !~ /^[0-9.]+$/) { print a; exit }
        print (a + 0 <= b + 0) ? a : b }'
}

ver() { # ver TOOL: the version word of `TOOL --version`, or "?"
    local v
    v=$("$1" --version 2>/dev/null | awk '{print $3; exit}') || true
    printf '%s' "${v:-?}"
}

report() {
    local g z u b r cold_note again_note
    cold_note="source fetch $(med sw_gzip_cold_src) / $(med sw_zstd_cold_src) s of it"
    cold_note+="; layer ${R[sw_gzip.size]:-?} / ${R[sw_zstd.size]:-?} MB"
    again_note="${R[sw_gzip_again.note]:+${R[sw_gzip_again.note]}; }"
    again_note+="${R[sw_zstd_again.note]:+${R[sw_zstd_again.note]}; }"
    again_note+="${R[sw_gzip_again.blobs]:+${R[sw_gzip_again.blobs]}; }"
    echo
    echo "slipway builder vs umoci $(ver umoci) + skopeo $(ver skopeo), buildah $(ver buildah)" \
        "and tar | gzip/zstd | sha256sum — docker-registry $(ver docker-registry),"
    echo "$(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ). Seconds, wall clock, median of $RUNS" \
        "interleaved rounds (each run in the note); load average before/after: $LOAD0 / $LOAD1."
    echo "Context: $CTXINFO; FROM scratch, COPY . /app/; pushed over plain HTTP to 127.0.0.1."
    echo "Every round changes round.txt (8 bytes), so each cold push really uploads its layer."
    echo
    row "figure (seconds)" gzip zstd note
    row "floor: tar | gzip -6 | sha256sum (one core)" "$(cell floor_gzip)" "$(cell floor_zstd zstd)" \
        "zstd -3 in the zstd column; $(runs floor_gzip floor_zstd)"
    row "slipway builder, cold (build + push)" "$(cell sw_gzip_cold)" "$(cell sw_zstd_cold)" \
        "$cold_note; $(runs sw_gzip_cold sw_zstd_cold)"
    row "slipway builder, unchanged rebuild" "$(cell sw_gzip_again)" "$(cell sw_zstd_again)" \
        "$again_note$(runs sw_gzip_again sw_zstd_again)"
    row "umoci init + new + insert" "$(cell umoci_ins_build)" - "$(runs umoci_ins_build)"
    row "  + skopeo copy oci: -> docker://" "$(cell umoci_ins_push)" - "$(runs umoci_ins_push)"
    row "umoci (insert) + skopeo, total" "$(cell umoci_ins_total)" - \
        "layer ${R[umoci_ins.size]:-?} MB (pgzip); $(runs umoci_ins_total)"
    row "umoci init + new + unpack + cp -a + repack" "$(cell umoci_rep_build)" - "$(runs umoci_rep_build)"
    row "  + skopeo copy oci: -> docker://" "$(cell umoci_rep_push)" - "$(runs umoci_rep_push)"
    row "umoci (repack) + skopeo, total" "$(cell umoci_rep_total)" - \
        "layer ${R[umoci_rep.size]:-?} MB; $(runs umoci_rep_total)"
    row "buildah bud --storage-driver vfs" "$(cell buildah_bud buildah)" - "${NA[buildah]:-$(runs buildah_bud)}"
    row "  + buildah push" "$(cell buildah_push buildah)" - \
        "${NA[buildah]:+see above}${NA[buildah]:-$(runs buildah_push)}"
    row "buildah, total" "$(cell buildah_total buildah)" - \
        "${NA[buildah]:+see above}${NA[buildah]:-layer ${R[buildah.size]:-?} MB; $(runs buildah_total)}"
    row "RUN: slipway builder, buildah backend" "$(cell sw_run_pushed run)" - \
        "${NA[run]:-${R[sw_run.note]:+${R[sw_run.note]}; }start to pushed digest; $(runs sw_run_pushed)}"
    row "  the same, to the builder's exit" "$(cell sw_run run)" - \
        "${NA[run]:+see above}${NA[run]:-storage removed too; $(runs sw_run)}"
    row "RUN: buildah bud --isolation chroot" "$(cell buildah_run_bud run)" - \
        "${NA[run]:+see above}${NA[run]:-$(runs buildah_run_bud)}"
    row "  + buildah push" "$(cell buildah_run_push run)" - \
        "${NA[run]:+see above}${NA[run]:-$(runs buildah_run_push)}"
    row "RUN: plain buildah, total" "$(cell buildah_run_total run)" - \
        "${NA[run]:+see above}${NA[run]:-$(runs buildah_run_total)}"
    row "slipway user path, cold (1 run)" "$(cell user_cold)" - \
        "start-build --from-dir --wait, controllers; Build durations ${R[user.dur]:-?} s"
    row "slipway user path, unchanged (1 run)" "$(cell user_again)" - ""
    echo
    echo "Check: every unchanged rebuild pushed the digest of the cold build before it:" \
        "${SAME_GZIP:-n/a} (gzip), ${SAME_ZSTD:-n/a} (zstd)."
    g=$(cell sw_gzip_cold)
    z=$(cell sw_zstd_cold)
    u=$(fastest "$(cell umoci_ins_total)" "$(cell umoci_rep_total)")
    b=$(cell buildah_total buildah)
    echo
    echo "Ratios (lower is better for slipway; umoci + skopeo = the faster umoci way, $u s):"
    printf '  %-58s %8s\n' \
        "slipway cold gzip / umoci + skopeo" "$(ratio "$g" "$u")" \
        "slipway cold gzip / umoci (repack) + skopeo" "$(ratio "$g" "$(cell umoci_rep_total)")" \
        "slipway cold gzip / buildah bud + push" "$(ratio "$g" "$b")" \
        "slipway cold gzip / gzip floor" "$(ratio "$g" "$(cell floor_gzip)")" \
        "slipway cold zstd / zstd floor" "$(ratio "$z" "$(cell floor_zstd zstd)")" \
        "slipway cold zstd / umoci + skopeo (gzip)" "$(ratio "$z" "$u")" \
        "slipway unchanged / cold, gzip" "$(ratio "$(cell sw_gzip_again)" "$g")" \
        "slipway unchanged / cold, zstd" "$(ratio "$(cell sw_zstd_again)" "$z")" \
        "slipway unchanged minus its source fetch / cold, gzip" \
        "$(ratio "$(minus "$(cell sw_gzip_again)" "$(med sw_gzip_again_src)")" "$g")" \
        "umoci + skopeo / gzip floor" "$(ratio "$u" "$(cell floor_gzip)")" \
        "buildah / umoci + skopeo" "$(ratio "$b" "$u")"
    echo
    echo "Targets (issue 4):"
    r=$(ratio "$g" "$u")
    printf '  %-58s %8s  %s\n' "cold gzip build+push <= 0.5 x umoci + skopeo" "$r" "$(verdict "$r" 0.5 "<=")"
    r=$(ratio "$g" "$(cell floor_gzip)")
    printf '  %-58s %8s  %s\n' "cold gzip build+push < the single-core gzip floor" "$r" "$(verdict "$r" 1 "<")"
    r=$(ratio "$(cell sw_gzip_again)" "$g")
    printf '  %-58s %8s  %s\n' "unchanged rebuild <= 0.1 x cold (gzip)" "$r" "$(verdict "$r" 0.1 "<=")"
    r=$(ratio "$(cell sw_zstd_again)" "$z")
    printf '  %-58s %8s  %s\n' "unchanged rebuild <= 0.1 x cold (zstd)" "$r" "$(verdict "$r" 0.1 "<=")"
    echo "Targets (issue 16):"
    r=$(ratio "$(cell sw_run_pushed run)" "$(cell buildah_run_total run)")
    printf '  %-58s %8s  %s\n' "RUN build: slipway's buildah path <= 1.1 x plain buildah" "$r" \
        "$(verdict "$r" 1.1 "<=")"
    echo "  (the COPY-only native figures are the rows above, unchanged in kind)"
}

# same_pair COMP: did every unchanged rebuild push the digest of the cold build before it?
same_pair() {
    local cold again
    read -r -a cold <<<"${R[sw_$1_cold.digests]:-}"
    read -r -a again <<<"${R[sw_$1_again.digests]:-}"
    [[ ${#cold[@]} -gt 0 && ${#cold[@]} == "${#again[@]}" ]] || { echo n/a; return; }
    [[ ${cold[*]} == "${again[*]}" ]] && echo yes || echo NO
}

main() {
    set -m
    local t round phase
    for t in docker-registry skopeo umoci curl python3 tar gzip; do
        command -v "$t" >/dev/null || fail "$t not found (run scripts/install-deps)"
    done
    command -v zstd >/dev/null || NA[zstd]="the zstd tool is not installed"
    ensure_slipway
    export HOME=$TMP/home # skopeo, umoci and buildah write nothing into the real home
    mkdir -p "$HOME"
    reg_init "$TMP/reg"
    local port
    port=$(reg_free_ports 1)
    REG=127.0.0.1:$port
    log "== setup (untimed): context, registry on $REG, slipway server --no-controllers"
    t=$(now)
    CTXINFO=$(make_context "$CTX" "$FILES" "$MB") || fail "could not write the context"
    CTXINFO=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "%d files in %d directories, %.1f MB (%.1f MB text, %.1f MB random)",
            v["files"], v["dirs"], v["bytes"] / 1e6, v["text"] / 1e6, v["random"] / 1e6 }' <<<"$CTXINFO")
    log "  $CTXINFO, written in $(since "$t") s"
    reg_start reg "$port" || fail "the registry did not start"
    [[ ,$ONLY, == *,buildah,* ]] && buildah_probe
    [[ -n ${NA[buildah]:-} ]] && log "  buildah: n/a: ${NA[buildah]}"
    if [[ ,$ONLY, == *,run,* ]]; then
        [[ ,$ONLY, == *,buildah,* ]] || buildah_probe
        setup_run
        [[ -n ${NA[run]:-} ]] && log "  run: n/a: ${NA[run]}"
    fi
    [[ ,$ONLY, == *,slipway,* || ,$ONLY, == *,run,* ]] && start_slipway builder --no-controllers
    LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((round = 1; round <= RUNS; round++)); do
        log "==== round $round of $RUNS"
        set_round "$round"
        for phase in floor slipway umoci buildah run; do
            [[ ,$ONLY, == *,$phase,* ]] || continue
            [[ $phase == buildah && -n ${NA[buildah]:-} ]] && continue
            [[ $phase == run && -n ${NA[run]:-} ]] && continue
            "measure_$phase" "$round"
        done
    done
    stop_slipway
    SAME_GZIP=$(same_pair gzip)
    SAME_ZSTD=$(same_pair zstd)
    if [[ ,$ONLY, == *,user,* ]]; then
        set_round 0
        measure_user
    fi
    LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
    reg_alive || log "WARNING: the registry died during the run"
    report
}

main "$@"
