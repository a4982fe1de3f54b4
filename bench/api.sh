#!/usr/bin/env bash
# bench/api.sh: slipway's API server against etcd 3.4 (JSON gateway), side by side, in one run.
# Columns: slipway on SQLite, raw etcd (one member), and slipway on a fresh one-member and a
# fresh three-member etcd (--store etcd://...). Starts each on free 127.0.0.1 ports with temp
# data dirs, drives it with the same client (build/sw-loadgen), same concurrency and the same
# ~1 KiB ImageStream bytes, prints one table with each column's ratio to raw etcd and the
# issue-2 and issue-15 targets, and cleans up on any exit.
# Knobs (environment): BENCH_SECS (timed phase per throughput figure, default 10),
# BENCH_OBJECTS (default 10000), BENCH_KEEP=1 (keep the temp dir and logs),
# BENCH_SLIPWAY_TLS=1 (slipway over HTTPS instead of plain HTTP like etcd's gateway),
# BENCH_ETCD_COLUMNS=0 (skip the two slipway-on-etcd columns), BENCH_AUTHZ=0 (skip the
# authorizer phases: admin token against a ServiceAccount token under RBAC),
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
ETCD_COLUMNS=${BENCH_ETCD_COLUMNS:-1}
ETCD_MAX_REQUEST_BYTES=4194304   # for the etcd behind slipway: it sends objects up to 3.5 MiB

TMP=$(mktemp -d /tmp/slipway-bench.XXXXXX)
PIDS=()   # servers we started
CHILD=    # the loadgen running right now
STARTERS=()   # the loadgens starting the members of an etcd cluster right now
LINE=     # its result line
TLSA=()   # see tls_args
declare -A R=()   # R[column.figure] = value
declare -A FAILED=()   # FAILED[column] = 1 when it did not run to the end



cleanup() {
    local pid f
    if [[ -n $CHILD ]]; then
        kill -TERM "$CHILD" 2>/dev/null
        # interrupted during `sw-loadgen start`: the server it forked is not in PIDS yet
        pid=$(kv "$(cat "$TMP/line" 2>/dev/null)" pid) && PIDS+=("$pid")
    fi
    for pid in "${STARTERS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for f in "$TMP"/*.start; do # etcd members forked by those, not yet in PIDS
        [[ -e $f ]] && pid=$(kv "$(cat "$f")" pid) && PIDS+=("$pid")
    done
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

# ---- columns and per-column plumbing ----
# A column T is one server under test. KIND[T] is what sw-loadgen talks to (--target): slipway's
# API or etcd's gateway. MEMBERS[T], for slipway on etcd, is the size of the fresh etcd cluster
# started for that column alone (and stopped and removed after it).

COLS=(slipway etcd)
[[ $ETCD_COLUMNS == 1 ]] && COLS+=(swetcd1 swetcd3)
declare -A KIND=([slipway]=slipway [etcd]=etcd [swetcd1]=slipway [swetcd3]=slipway)
declare -A MEMBERS=([swetcd1]=1 [swetcd3]=3)
declare -A HEAD=([slipway]=sw+sqlite [etcd]=etcd [swetcd1]=sw+etcd1 [swetcd3]=sw+etcd3)
declare -A RHEAD=([slipway]=sq/etcd [swetcd1]=e1/etcd [swetcd3]=e3/etcd)

declare -A URL=() PID=() DATA=() PORTS=() TOKEN=()
declare -A ENDPOINTS=() MEMBER_PIDS=() MEMBER_DIRS=()   # the etcd behind a slipway column

# etcd_cmd NAME DIR CLIENT_PORT PEER_PORT INITIAL_CLUSTER [FLAG...]: one etcd member's argv.
# Defaults otherwise: the WAL is fdatasync'ed before each raft batch is acknowledged.
etcd_cmd() {
    local name=$1 dir=$2 client=$3 peer=$4 cluster=$5
    shift 5
    printf '%s\n' "$ETCD" --name "$name" --data-dir "$dir" \
        --listen-client-urls "http://127.0.0.1:$client" \
        --advertise-client-urls "http://127.0.0.1:$client" \
        --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "$cluster" --log-level warn --logger zap "$@"
}

server_cmd() {
    local t=$1 client=${PORTS[$1]%%,*} peer=${PORTS[$1]##*,}
    if [[ ${KIND[$t]} == etcd ]]; then
        etcd_cmd bench "${DATA[$t]}" "$client" "$peer" "bench=http://127.0.0.1:$peer"
    else
        printf '%s\n' "$SLIPWAY" server --data-dir "${DATA[$t]}" \
            --listen "127.0.0.1:$client" --no-controllers
        # the authorizer column authenticates every request; the others are anonymous
        [[ $t == authz ]] || printf '%s\n' --insecure-anonymous
        if [[ -n ${MEMBERS[$t]:-} ]]; then
            printf '%s\n' --store "etcd://${ENDPOINTS[$t]}"
        else
            printf '%s\n' --store-sync full
        fi
        [[ $TLS == 1 ]] || printf '%s\n' --plain-http
    fi
}

# tls_args T: sets TLSA to loadgen's flag for slipway's self-signed serving certificate.
tls_args() {
    TLSA=()
    if [[ ${KIND[$1]} == slipway && $TLS == 1 ]]; then TLSA=(--insecure-tls); fi
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
    if ! run_bg "$TMP/line" "$LOADGEN" start --target "${KIND[$t]}" --url "${URL[$t]}" "${TLSA[@]}" \
        --timeout "$START_TIMEOUT" -- "${cmd[@]}" 2>>"$TMP/$t.log"; then
        : >"$TMP/line"
        return 1
    fi
    line=$(<"$TMP/line")
    : >"$TMP/line" # cleanup() reads a pid from it after an interrupted start
    PID[$t]=$(kv "$line" pid)
    PIDS+=("${PID[$t]}")
    if [[ ${KIND[$t]} == slipway && -f ${DATA[$t]}/admin.kubeconfig ]]; then
        TOKEN[$t]=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' \
            "${DATA[$t]}/admin.kubeconfig")
    fi
    START_MS=$(kv "$line" start_ms)
}

stop_server() {
    stop_pid "${PID[$1]}"
    forget_pid "${PID[$1]}"
}

# start_backing_etcd T: a fresh cluster of MEMBERS[T] members on loopback for slipway column T,
# with etcd-triggers.md §2.3's flags (and docs/scale-out.md's --max-request-bytes). The members
# start at once, each under its own `sw-loadgen start`, since a member of three is healthy only
# once a quorum is up; it returns when every member's /health says true.
start_backing_etcd() {
    local t=$1 n=${MEMBERS[$1]} i p=() cluster='' eps='' cmd=() rc=0 pid line
    line=$("$LOADGEN" ports --n $((2 * n)))
    IFS=, read -r -a p <<<"${line#ports=}"
    for ((i = 0; i < n; i++)); do # member m<i+1>: client port p[2i], peer port p[2i+1]
        cluster+=${cluster:+,}m$((i + 1))=http://127.0.0.1:${p[2 * i + 1]}
        eps+=${eps:+,}127.0.0.1:${p[2 * i]}
    done
    ENDPOINTS[$t]=$eps
    MEMBER_PIDS[$t]=''
    MEMBER_DIRS[$t]=''
    log "== etcd for $t: $n member(s) on $eps"
    for ((i = 1; i <= n; i++)); do
        MEMBER_DIRS[$t]+="$TMP/$t-m$i "
        mapfile -t cmd < <(etcd_cmd "m$i" "$TMP/$t-m$i" "${p[2 * i - 2]}" "${p[2 * i - 1]}" \
            "$cluster" --initial-cluster-state new --initial-cluster-token "bench-$t" \
            --max-request-bytes "$ETCD_MAX_REQUEST_BYTES")
        "$LOADGEN" start --target etcd --url "http://127.0.0.1:${p[2 * i - 2]}" \
            --timeout "$START_TIMEOUT" -- "${cmd[@]}" >"$TMP/$t-m$i.start" 2>>"$TMP/$t-etcd.log" &
        STARTERS+=($!)
    done
    for pid in "${STARTERS[@]}"; do
        wait "$pid" || rc=1
    done
    STARTERS=()
    for ((i = 1; i <= n; i++)); do
        line=$(<"$TMP/$t-m$i.start")
        rm -f "$TMP/$t-m$i.start" # cleanup() reads pids from these after an interrupted start
        pid=$(kv "$line" pid) || continue
        PIDS+=("$pid")
        MEMBER_PIDS[$t]+="$pid "
        log "  m$i: pid $pid, ready after $(kv "$line" start_ms || echo n/a) ms"
    done
    ((rc == 0)) || { log "  etcd for $t did not start; see $TMP/$t-etcd.log"; return 1; }
}

# stop_backing_etcd T: stops the members behind T and removes their data (kept with BENCH_KEEP=1).
stop_backing_etcd() {
    local t=$1 pid
    for pid in ${MEMBER_PIDS[$t]:-}; do
        stop_pid "$pid"
        forget_pid "$pid"
    done
    MEMBER_PIDS[$t]=
    # shellcheck disable=SC2086 # MEMBER_DIRS is a space-separated list of our own temp paths
    [[ ${BENCH_KEEP:-0} == 1 ]] || rm -rf ${MEMBER_DIRS[$t]:-} "${DATA[$t]}"
}

# lg T MODE ARGS...: one loadgen run; its result line lands in LINE (and on stderr as progress).
lg() {
    local t=$1 mode=$2 rc=0 auth=()
    shift 2
    [[ -n ${TOKEN[$t]:-} ]] && auth=(--token "${TOKEN[$t]}")
    tls_args "$t"
    run_bg "$TMP/line" "$LOADGEN" "$mode" --target "${KIND[$t]}" --url "${URL[$t]}" "${TLSA[@]}" \
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

# backing_rss T: the RSS of the etcd members behind T, their sum and each ("a+b+c").
backing_rss() {
    local t=$1 pid each=()
    for pid in ${MEMBER_PIDS[$t]}; do
        each+=("$(rss_mib "$pid")")
    done
    R[$t.etcd_rss]=$(printf '%s\n' "${each[@]}" | awk '{s += $1} END {printf "%.1f", s}')
    R[$t.etcd_rss_each]=$(IFS=+ && echo "${each[*]}")
}

measure_restart() {
    local t=$1
    R[$t.rss]=$(rss_mib "${PID[$t]}")
    if [[ -n ${MEMBERS[$t]:-} ]]; then
        backing_rss "$t"
    elif [[ $t == etcd ]]; then
        R[$t.etcd_rss]=${R[$t.rss]}   # the reference for the backing etcds' RSS
    fi
    # slipway on etcd: its data dir (certs, token) plus its members' (the objects)
    # shellcheck disable=SC2086
    R[$t.disk]=$(du -smc "${DATA[$t]}" ${MEMBER_DIRS[$t]:-} | awk 'END {print $1}')
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
    if [[ -n ${MEMBERS[$t]:-} ]]; then start_backing_etcd "$t" || return 1; fi
    ports=$("$LOADGEN" ports --n 2)
    PORTS[$t]=${ports#ports=}
    local scheme=http
    [[ ${KIND[$t]} == slipway && $TLS == 1 ]] && scheme=https
    URL[$t]="$scheme://127.0.0.1:${PORTS[$t]%%,*}"
    DATA[$t]=$TMP/$t-data
    mkdir -p "${DATA[$t]}"
    log "== $t on ${URL[$t]} (data ${DATA[$t]}${ENDPOINTS[$t]:+, etcd ${ENDPOINTS[$t]}})"
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

# run_column T: run_target, then stops whatever of T is left (its etcd too); status 1 if it failed.
loadavg() { awk '{print $1}' /proc/loadavg; }

run_column() {
    local t=$1 rc=0 load0
    load0=$(loadavg)
    run_target "$t" || rc=1
    R[$t.load]="$load0/$(loadavg)"   # the machine is shared: how busy it was around this column
    if ((rc)); then
        log "== $t failed; its figures are n/a"
        [[ -n ${PID[$t]:-} ]] && stop_server "$t"
    fi
    if [[ -n ${MEMBERS[$t]:-} ]]; then stop_backing_etcd "$t"; fi
    return $rc
}

# ---- the authorizer (issue 17) ----
# One slipway on SQLite with authentication and RBAC on: the same update/get/create phases with
# the admin token (system:masters: no RBAC lookup) and with a ServiceAccount token from the
# TokenRequest API bound to edit by a RoleBinding (token verified, ServiceAccount looked up,
# RBAC rules evaluated on every request), alternated over two rounds on the same server.

AUTHZ=${BENCH_AUTHZ:-1}
AUTHZ_OBJECTS=2000

# sw_curl PATH BODY: a POST with the admin token to the authz column.
authz_post() {
    curl -sf --max-time 10 -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H 'Content-Type: application/json' -d "$2" "${URL[authz]}$1"
}

run_authz() {
    local t=authz ports who round k
    KIND[authz]=slipway
    ports=$("$LOADGEN" ports --n 2)
    PORTS[authz]=${ports#ports=}
    URL[authz]="http://127.0.0.1:${PORTS[authz]%%,*}"
    DATA[authz]=$TMP/authz-data
    mkdir -p "${DATA[authz]}"
    log "== authz: slipway with RBAC on ${URL[authz]}"
    start_server authz || { log "  authz failed to start"; return 1; }
    ADMIN_TOKEN=${TOKEN[authz]}
    authz_post /api/v1/namespaces/default/serviceaccounts \
        '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bench"}}' >/dev/null &&
        authz_post /apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings \
            '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bench-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"ServiceAccount","name":"bench","namespace":"default"}]}' \
            >/dev/null || { log "  could not create the ServiceAccount and its RoleBinding"; return 1; }
    SA_TOKEN=$(authz_post /api/v1/namespaces/default/serviceaccounts/bench/token \
        '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":7200}}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["status"]["token"])') ||
        { log "  no ServiceAccount token"; return 1; }
    lg authz create --inflight 16 --count "$AUTHZ_OBJECTS" --duration 300 || return 1
    local next=$((AUTHZ_OBJECTS + 1000000))
    local order
    for round in 1 2; do
        # alternated: the store grows with every create phase, so whoever runs second in a round
        # writes into a bigger database
        [[ $round == 1 ]] && order="admin sa" || order="sa admin"
        for who in $order; do
            [[ $who == admin ]] && TOKEN[authz]=$ADMIN_TOKEN || TOKEN[authz]=$SA_TOKEN
            lg authz update --inflight 16 --objects "$AUTHZ_OBJECTS" --duration "$SECS" || true
            R[authz.$who.update16.$round]=$(val rate)
            lg authz get --inflight 16 --objects "$AUTHZ_OBJECTS" --duration "$SECS" || true
            R[authz.$who.get16.$round]=$(val rate)
            lg authz create --inflight 16 --start "$next" --count 1000000 --duration "$SECS" || true
            R[authz.$who.create16.$round]=$(val rate)
            next=$((next + $(kv "$LINE" ops || echo 0)))
        done
    done
    for who in admin sa; do
        for k in update16 get16 create16; do
            R[authz.$who.$k]=$(awk -v a="${R[authz.$who.$k.1]:-n/a}" -v b="${R[authz.$who.$k.2]:-n/a}" \
                'BEGIN { if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/) print "n/a"; else printf "%.0f", (a + b) / 2 }')
        done
    done
    TOKEN[authz]=$ADMIN_TOKEN
    stop_server authz
}

authz_report() {
    local k r
    echo
    echo "Authorizer (issue 17): one slipway on SQLite (plain HTTP, tokens on), 16 in flight," \
        "mean of 2 rounds of ${SECS}s each (admin first in round 1, sa first in round 2)."
    echo "  admin = the admin token (system:masters, no RBAC lookup); sa = a ServiceAccount token" \
        "(TokenRequest) bound to edit by a RoleBinding."
    printf '  %-28s %10s %10s %8s  %s\n' figure admin sa sa/admin "goal: >= 0.95 (cost < 5%)"
    for k in create16 update16 get16; do
        r=$(ratio "${R[authz.sa.$k]:-n/a}" "${R[authz.admin.$k]:-n/a}")
        printf '  %-28s %10s %10s %8s  %s\n' "$k/s" "${R[authz.admin.$k]:-n/a}" \
            "${R[authz.sa.$k]:-n/a}" "$r" "$(verdict "$r" 0.95 ">=")"
    done
}

# ---- report ----

# row LABEL KEY NOTE: one figure for every column, then each column's ratio to raw etcd.
row() {
    local t out
    out=$(printf '%-34s' "$1")
    for t in "${COLS[@]}"; do
        out+=$(printf ' %10s' "${R[$t.$2]:-n/a}")
    done
    for t in "${COLS[@]}"; do
        [[ $t == etcd ]] || out+=$(printf ' %8s' "$(ratio "${R[$t.$2]:-n/a}" "${R[etcd.$2]:-n/a}")")
    done
    printf '%s  %s\n' "$out" "$3"
}

header_row() {
    local t out
    out=$(printf '%-34s' figure)
    for t in "${COLS[@]}"; do
        out+=$(printf ' %10s' "${HEAD[$t]}")
    done
    for t in "${COLS[@]}"; do
        [[ $t == etcd ]] || out+=$(printf ' %8s' "${RHEAD[$t]}")
    done
    printf '%s  %s\n' "$out" note
}

# verdict VALUE LIMIT OP: PASS/MISS (or n/a) for one target; OP is >=, <= or <.
verdict() {
    awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN {
        if (v !~ /^[0-9.]+$/) { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= lim + 0) : (op == "<=") ? (v + 0 <= lim + 0) : (v + 0 < lim + 0)
        print ok ? "PASS" : "MISS" }'
}

# target T KEY LIMIT OP TEXT: one line of a targets block, on the ratio T/etcd of figure KEY.
target() {
    local r
    r=$(ratio "${R[$1.$2]:-n/a}" "${R[etcd.$2]:-n/a}")
    printf '  %-66s %7s  %s\n' "$5" "$(times "$r")" "$(verdict "$r" "$3" "$4")"
}

report() {
    local t k
    echo
    echo "slipway API server vs etcd $("$ETCD" --version 2>/dev/null | awk '/etcd Version/ {print $3}')" \
        "(JSON gateway) — $(nproc) cores, $(uname -r), one run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "Columns: sw+sqlite = slipway on its SQLite store; etcd = raw etcd, one member (the" \
        "reference of every ratio)."
    if [[ $ETCD_COLUMNS == 1 ]]; then
        echo "  sw+etcd1 / sw+etcd3 = slipway --store etcd:// on a fresh 1- / 3-member etcd" \
            "(loopback, --max-request-bytes $ETCD_MAX_REQUEST_BYTES), each started for its column."
    fi
    echo "Same client (sw-loadgen: libcurl, one keep-alive connection per in-flight request)," \
        "same ~1 KiB ImageStream JSON (the bytes are etcd's value)."
    echo "Durability: equal — every commit is fsync'ed before the answer. etcd: default WAL" \
        "fdatasync per raft batch (on every member); slipway on SQLite: --store-sync full" \
        "(synchronous=FULL, group commit)."
    echo "Updates: slipway = PUT carrying the resourceVersion of its previous write (CAS, no GET;" \
        "on etcd a Txn on mod_revision); etcd = plain /v3/kv/put (no compare)."
    if [[ $TLS == 1 ]]; then
        echo "Transport: slipway over HTTPS (its generated serving cert), etcd over plain HTTP."
    else
        echo "Transport: all plain HTTP/1.1 on 127.0.0.1 (slipway --plain-http --insecure-anonymous" \
            "--no-controllers)."
    fi
    echo "Gets: slipway GET .../imagestreams/NAME; etcd /v3/kv/range on one key. Each throughput" \
        "figure is a ${SECS}s timed phase; $OBJECTS objects are stored first (untimed) for"
    echo "gets/list/RSS/restart/watch; creates run last, on new names, on top of those $OBJECTS." \
        "Ratios are column / etcd."
    for t in "${COLS[@]}"; do
        [[ -z ${FAILED[$t]:-} ]] || echo "NOTE: ${HEAD[$t]} did not run to the end (see above); its missing figures are n/a."
    done
    echo
    header_row
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
    row "RSS with ${OBJECTS} objects (MiB)" rss "lower is better; the server's own, after the load above"
    if [[ $ETCD_COLUMNS == 1 ]]; then
        row "RSS of the etcd behind (MiB)" etcd_rss "sum over its members, same moment; etcd: its own"
    fi
    row "RSS after restart (MiB)" rss_restart "lower is better; on etcd only slipway restarts"
    row "data dir size (MiB)" disk "lower is better; on etcd: slipway's + every member's"
    row "start, empty (ms)" start_empty "lower is better; fork to ready"
    row "start with ${OBJECTS} objects (ms)" start "lower is better; fork to ready"
    row "load average, 1 min, start/end" load "of the machine, around each column's run"
    if [[ $ETCD_COLUMNS == 1 ]]; then
        echo "RSS of each etcd member (MiB): sw+etcd1 ${R[swetcd1.etcd_rss_each]:-n/a};" \
            "sw+etcd3 ${R[swetcd3.etcd_rss_each]:-n/a}"
    fi
    echo
    echo "Targets (issue 2, slipway on SQLite against raw etcd):"
    for k in create1 create16 update1 update16; do
        target slipway "$k" 2 ">=" "slipway $k >= 2x etcd put rate (same in-flight)"
    done
    printf '  %-66s %7s  %s\n' "slipway watch p99 < 5 ms at $WATCHERS watchers (ms)" \
        "${R[slipway.watch99]:-n/a}" "$(verdict "${R[slipway.watch99]:-n/a}" 5 "<")"
    target slipway rss 1 "<" "slipway RSS with $OBJECTS streams < etcd's"
    [[ $ETCD_COLUMNS == 1 ]] || return 0
    echo
    echo "Targets (issue 15, slipway on etcd against raw etcd: the cost of the API layer):"
    for t in swetcd1 swetcd3; do
        target "$t" create16 0.7 ">=" "${HEAD[$t]} creates/s at 16 in flight >= 0.7x etcd puts/s"
        target "$t" update16 0.7 ">=" "${HEAD[$t]} updates/s at 16 in flight >= 0.7x etcd puts/s"
        target "$t" list 1 "<=" "${HEAD[$t]} list $OBJECTS in one request: time <= etcd's"
        target "$t" listpaged 1 "<=" "${HEAD[$t]} list $OBJECTS in pages of 500: time <= etcd's"
        target "$t" watch99 1 "<=" "${HEAD[$t]} watch p99 at $WATCHERS watchers <= etcd's"
        target "$t" rss 1 "<" "${HEAD[$t]} slipway RSS with $OBJECTS objects < etcd's"
    done
}

main() {
    set -m
    command -v "$ETCD" >/dev/null || { log "etcd not found (Debian: etcd-server)"; exit 1; }
    ensure_loadgen
    local t slipway_ok=1
    if [[ ! -x $SLIPWAY ]]; then
        log "== slipway: $SLIPWAY not built; skipping the slipway columns"
        slipway_ok=0
    elif ! "$SLIPWAY" server --help >/dev/null 2>&1; then
        log "== slipway: '$SLIPWAY server --help' fails (server not built yet?); skipping the slipway columns"
        slipway_ok=0
    fi
    for t in "${COLS[@]}"; do
        if [[ ${KIND[$t]} == slipway && $slipway_ok == 0 ]]; then
            FAILED[$t]=1
        elif ! run_column "$t"; then
            FAILED[$t]=1
            [[ $t != etcd ]] || { log "== etcd failed: no reference for the ratios"; report; exit 1; }
        fi
    done
    if [[ $AUTHZ == 1 && $slipway_ok == 1 ]]; then
        run_authz || log "== authz failed; its figures are n/a"
    fi
    report
    [[ $AUTHZ != 1 ]] || authz_report
}

main "$@"
