#!/usr/bin/env bash
# bench/api.sh: slipway's API server against etcd 3.4 (JSON gateway), side by side, in one run.
# Starts both servers on free 127.0.0.1 ports with temp data dirs, drives them with the same
# client (build/sw-loadgen), same concurrency and the same ~1 KiB ImageStream bytes, prints a
# table with each slipway/etcd ratio and the issue-2 targets, and cleans up on any exit.
# Knobs (environment): BENCH_SECS (timed phase per throughput figure, default 10),
# BENCH_OBJECTS (default 10000), BENCH_KEEP=1 (keep the temp dir and logs),
# BENCH_SLIPWAY_TLS=1 (slipway over HTTPS instead of plain HTTP like etcd's gateway),
# SLIPWAY, LOADGEN, ETCD (binaries). See bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build}
SLIPWAY=${SLIPWAY:-$BUILD/slipway}
LOADGEN=${LOADGEN:-$BUILD/sw-loadgen}
ETCD=${ETCD:-etcd}
SECS=${BENCH_SECS:-10}
OBJECTS=${BENCH_OBJECTS:-10000}
UPDATE_SET=$((OBJECTS < 1024 ? OBJECTS : 1024))   # objects the update workers cycle over
WATCHERS=100
WATCH_WRITES=500
WATCH_RATE=100    # writes/s during the watch test
START_TIMEOUT=60
TLS=${BENCH_SLIPWAY_TLS:-0}

TMP=$(mktemp -d /tmp/slipway-bench.XXXXXX)
PIDS=()   # servers we started
CHILD=    # the loadgen running right now
LINE=     # its result line
TLSA=()   # see tls_args
declare -A R=()   # R[target.figure] = value



cleanup() {
    local pid
    if [[ -n $CHILD ]]; then
        kill -TERM "$CHILD" 2>/dev/null
        # interrupted during `sw-loadgen start`: the server it forked is not in PIDS yet
        pid=$(kv "$(cat "$TMP/line" 2>/dev/null)" pid) && PIDS+=("$pid")
    fi
    stop_all_and_clean
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forget_pid() {
    local keep=() p
    for p in "${PIDS[@]}"; do
        [[ $p == "$1" ]] || keep+=("$p")
    done
    PIDS=("${keep[@]}")
}

rss_mib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

ensure_loadgen() {
    if [[ ! -x $LOADGEN ]]; then
        log "building sw-loadgen in $BUILD"
        cmake -S "$ROOT" -B "$BUILD" >/dev/null
        cmake --build "$BUILD" --target sw-loadgen >/dev/null
    fi
}

# ---- per-target plumbing (T is slipway or etcd) ----

declare -A URL=() PID=() DATA=() PORTS=() TOKEN=()

server_cmd() {
    local t=$1 client=${PORTS[$1]%%,*} peer=${PORTS[$1]##*,}
    if [[ $t == etcd ]]; then
        # defaults otherwise: the WAL is fdatasync'ed before each raft batch is acknowledged
        printf '%s\n' "$ETCD" --name bench --data-dir "${DATA[$t]}" \
            --listen-client-urls "http://127.0.0.1:$client" \
            --advertise-client-urls "http://127.0.0.1:$client" \
            --listen-peer-urls "http://127.0.0.1:$peer" \
            --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
            --initial-cluster "bench=http://127.0.0.1:$peer" \
            --log-level warn --logger zap
    else
        printf '%s\n' "$SLIPWAY" server --data-dir "${DATA[$t]}" \
            --listen "127.0.0.1:$client" --insecure-anonymous --store-sync full --no-controllers
        [[ $TLS == 1 ]] || printf '%s\n' --plain-http
    fi
}

# tls_args T: sets TLSA to loadgen's flag for slipway's self-signed serving certificate.
tls_args() {
    TLSA=()
    if [[ $1 == slipway && $TLS == 1 ]]; then TLSA=(--insecure-tls); fi
}

# run_bg (bench/lib.sh) runs each tool in the background and waits, so a signal reaches our
# traps at once (bash defers traps while a foreground child runs). Job control (set -m in main)
# puts each such child and the server it may fork in a process group of its own: Ctrl-C
# reaches only this shell, whose trap then stops everything by pid.

# start_server T: launches T, records its pid and sets START_MS (fork to ready). Fails if it is
# not ready in time.
start_server() {
    local t=$1 line cmd
    START_MS=n/a
    mapfile -t cmd < <(server_cmd "$t")
    tls_args "$t"
    if ! run_bg "$TMP/line" "$LOADGEN" start --target "$t" --url "${URL[$t]}" "${TLSA[@]}" \
        --timeout "$START_TIMEOUT" -- "${cmd[@]}" 2>>"$TMP/$t.log"; then
        : >"$TMP/line"
        return 1
    fi
    line=$(<"$TMP/line")
    : >"$TMP/line" # cleanup() reads a pid from it after an interrupted start
    PID[$t]=$(kv "$line" pid)
    PIDS+=("${PID[$t]}")
    if [[ $t == slipway && -f ${DATA[$t]}/admin.kubeconfig ]]; then
        TOKEN[$t]=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' \
            "${DATA[$t]}/admin.kubeconfig")
    fi
    START_MS=$(kv "$line" start_ms)
}

stop_server() {
    stop_pid "${PID[$1]}"
    forget_pid "${PID[$1]}"
}

# lg T MODE ARGS...: one loadgen run; its result line lands in LINE (and on stderr as progress).
lg() {
    local t=$1 mode=$2 rc=0 auth=()
    shift 2
    [[ -n ${TOKEN[$t]:-} ]] && auth=(--token "${TOKEN[$t]}")
    tls_args "$t"
    run_bg "$TMP/line" "$LOADGEN" "$mode" --target "$t" --url "${URL[$t]}" "${TLSA[@]}" \
        "${auth[@]}" "$@" 2>>"$TMP/$t.log" || rc=$?
    LINE=$(<"$TMP/line")
    log "  $t $mode $*: ${LINE:-failed (see $TMP/$t.log)}"
    return $rc
}

# val KEY: KEY from the last result line, or n/a.
val() { kv "$LINE" "$1" || echo n/a; }

alive() { kill -0 "${PID[$1]}" 2>/dev/null; }

# ---- the measurements for one target ----

# fill_objects T: stores objects 0..OBJECTS-1 (untimed, 16 in flight).
fill_objects() {
    lg "$1" create --inflight 16 --count "$OBJECTS" --duration 300 || return 1
    [[ $(val ops) == "$OBJECTS" ]]
}

measure_reads_writes() {
    local t=$1
    lg "$t" update --inflight 1 --objects "$UPDATE_SET" --duration "$SECS" || true
    R[$t.update1]=$(val rate)
    lg "$t" update --inflight 16 --objects "$UPDATE_SET" --duration "$SECS" || true
    R[$t.update16]=$(val rate)
    lg "$t" get --inflight 16 --objects "$OBJECTS" --duration "$SECS" || true
    R[$t.get16]=$(val rate)
}

measure_lists() {
    local t=$1
    lg "$t" list --repeat 3 --timeout 120 || true
    R[$t.list]=$(val median_ms)
    lg "$t" list --repeat 3 --limit 500 --timeout 120 || true
    R[$t.listpaged]=$(val median_ms)
}

measure_restart() {
    local t=$1
    R[$t.rss]=$(rss_mib "${PID[$t]}")
    R[$t.disk]=$(du -sm "${DATA[$t]}" | awk '{print $1}')
    stop_server "$t"
    if start_server "$t"; then
        R[$t.start]=$START_MS
        R[$t.rss_restart]=$(rss_mib "${PID[$t]}")
        return 0
    fi
    log "  $t did not come back after a restart; see $TMP/$t.log"
    return 1
}

measure_watch() {
    local t=$1
    lg "$t" watch-latency --watchers $WATCHERS --writes $WATCH_WRITES --rate $WATCH_RATE \
        --objects "$OBJECTS" --duration 60 || true
    R[$t.watch_events]="$(val events)/$(val expected)"
    if [[ $(val events) =~ ^[1-9][0-9]*$ ]]; then
        R[$t.watch50]=$(val p50_ms)
        R[$t.watch99]=$(val p99_ms)
    fi
    [[ $(val events) == "$(val expected)" ]] ||
        log "  WARNING: $t delivered ${R[$t.watch_events]} (watcher, event) pairs"
}

# measure_creates T: timed creates of new objects (index >= OBJECTS), so they run against a
# store that already holds OBJECTS objects; last, so nothing after depends on the count.
measure_creates() {
    local t=$1 next=$OBJECTS
    lg "$t" create --inflight 1 --start "$next" --count 1000000 --duration "$SECS" || true
    R[$t.create1]=$(val rate)
    next=$((next + $(kv "$LINE" ops || echo 0)))
    lg "$t" create --inflight 16 --start "$next" --count 1000000 --duration "$SECS" || true
    R[$t.create16]=$(val rate)
}

run_target() {
    local t=$1 ports
    ports=$("$LOADGEN" ports --n 2)
    PORTS[$t]=${ports#ports=}
    local scheme=http
    [[ $t == slipway && $TLS == 1 ]] && scheme=https
    URL[$t]="$scheme://127.0.0.1:${PORTS[$t]%%,*}"
    DATA[$t]=$TMP/$t-data
    mkdir -p "${DATA[$t]}"
    log "== $t on ${URL[$t]} (data ${DATA[$t]})"
    if ! start_server "$t"; then
        log "  $t failed to start; last log lines:"
        tail -n 5 "$TMP/$t.log" >&2 || true
        return 1
    fi
    R[$t.start_empty]=$START_MS
    fill_objects "$t" || { log "  $t: could not store $OBJECTS objects"; return 1; }
    measure_reads_writes "$t"
    measure_lists "$t"
    alive "$t" || { log "  $t died; see $TMP/$t.log"; return 1; }
    measure_restart "$t" || return 1
    measure_watch "$t"
    alive "$t" || { log "  $t died during the watch test"; return 1; }
    measure_creates "$t"
    stop_server "$t"
}

# ---- report ----


row() { # row LABEL KEY NOTE
    local s=${R[slipway.$2]:-n/a} e=${R[etcd.$2]:-n/a}
    printf '%-34s %12s %12s %9s  %s\n' "$1" "$s" "$e" "$(ratio "$s" "$e")" "$3"
}

# verdict KIND ARGS: PASS/MISS (or n/a) for one target of the issue.
verdict() {
    awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN {
        if (v !~ /^[0-9.]+$/) { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= lim + 0) : (v + 0 < lim + 0)
        print ok ? "PASS" : "MISS" }'
}


report() {
    local s_ok=$1
    echo
    echo "slipway API server vs etcd $("$ETCD" --version 2>/dev/null | awk '/etcd Version/ {print $3}')" \
        "(JSON gateway) — $(nproc) cores, $(uname -r), one run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "Same client (sw-loadgen: libcurl, one keep-alive connection per in-flight request)," \
        "same ~1 KiB ImageStream JSON (the bytes are etcd's value)."
    echo "Durability: equal — both fsync every commit before answering. etcd: default WAL" \
        "fdatasync per raft batch; slipway: --store-sync full (SQLite synchronous=FULL, group commit)."
    echo "Updates: slipway = PUT carrying the resourceVersion of its previous write (CAS, no GET);" \
        "etcd = plain /v3/kv/put (no compare)."
    if [[ $TLS == 1 ]]; then
        echo "Transport: slipway over HTTPS (its generated serving cert), etcd over plain HTTP."
    else
        echo "Transport: both plain HTTP/1.1 on 127.0.0.1 (slipway --plain-http --insecure-anonymous)."
    fi
    echo "Gets: slipway GET .../imagestreams/NAME; etcd /v3/kv/range on one key. Each throughput" \
        "figure is a ${SECS}s timed phase; $OBJECTS objects are stored first (untimed) for"
    echo "gets/list/RSS/restart/watch; creates run last, on new names, on top of those $OBJECTS."
    [[ $s_ok == 1 ]] || echo "NOTE: the slipway half did not run (see above); its column is n/a."
    echo
    printf '%-34s %12s %12s %9s  %s\n' "figure" "slipway" "etcd" "sw/etcd" "note"
    row "creates/s, 1 in flight" create1 "higher is better"
    row "creates/s, 16 in flight" create16 "higher is better"
    row "updates/s, 1 in flight" update1 "higher is better"
    row "updates/s, 16 in flight" update16 "higher is better"
    row "gets/s, 16 in flight" get16 "higher is better"
    row "list ${OBJECTS}, one request (ms)" list "lower is better; median of 3, transfer only"
    row "list ${OBJECTS}, pages of 500 (ms)" listpaged "lower is better; etcd pages by key"
    row "watch p50, ${WATCHERS} watchers (ms)" watch50 "lower is better"
    row "watch p99, ${WATCHERS} watchers (ms)" watch99 "lower is better"
    row "watch events received" watch_events "(watcher, event) pairs / expected"
    row "RSS with ${OBJECTS} objects (MiB)" rss "lower is better; after the load above"
    row "RSS after restart (MiB)" rss_restart "lower is better"
    row "data dir size (MiB)" disk "lower is better"
    row "start, empty (ms)" start_empty "lower is better; fork to ready"
    row "start with ${OBJECTS} objects (ms)" start "lower is better; fork to ready"
    echo
    echo "Targets (issue 2):"
    local r
    for k in create1 create16 update1 update16; do
        r=$(ratio "${R[slipway.$k]:-n/a}" "${R[etcd.$k]:-n/a}")
        printf '  %-58s %7s  %s\n' "slipway $k >= 2x etcd put rate (same in-flight)" "$(times "$r")" \
            "$(verdict "$r" 2 ">=")"
    done
    printf '  %-58s %7s  %s\n' "slipway watch p99 < 5 ms at $WATCHERS watchers (ms)" \
        "${R[slipway.watch99]:-n/a}" "$(verdict "${R[slipway.watch99]:-n/a}" 5 "<")"
    r=$(ratio "${R[slipway.rss]:-n/a}" "${R[etcd.rss]:-n/a}")
    printf '  %-58s %7s  %s\n' "slipway RSS with $OBJECTS streams < etcd's" "$(times "$r")" \
        "$(verdict "$r" 1 "<")"
}

main() {
    set -m
    command -v "$ETCD" >/dev/null || { log "etcd not found (Debian: etcd-server)"; exit 1; }
    ensure_loadgen
    local s_ok=0
    if [[ ! -x $SLIPWAY ]]; then
        log "== slipway: $SLIPWAY not built; skipping the slipway half"
    elif ! "$SLIPWAY" server --help >/dev/null 2>&1; then
        log "== slipway: '$SLIPWAY server --help' fails (server not built yet?); skipping the slipway half"
    elif run_target slipway; then
        s_ok=1
    else
        log "== slipway half failed; its figures are n/a"
        [[ -n ${PID[slipway]:-} ]] && stop_server slipway
    fi
    run_target etcd || { log "== etcd half failed"; report "$s_ok"; exit 1; }
    report "$s_ok"
}

main "$@"
