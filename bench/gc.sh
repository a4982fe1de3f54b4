#!/usr/bin/env bash
# gc.sh: the garbage collector's cascade against deleting the same objects directly, in one run
# (issue 11). `slipway server --no-controllers` serves the API; the collector runs alone as
# `slipway controllers --controllers garbagecollector`, so its CPU time and RSS are its own.
#
#   1. 10,000 owners with 5 dependents each (50,000 dependents); the owners are deleted with
#      propagationPolicy Background by 20 clients in flight; timed until no dependent is left.
#   2. the same with Foreground (the owners wait for their dependents).
#   3. 50,000 objects deleted directly through the API by 20 clients in flight (the collector's
#      default of 20 concurrent syncs).
# Printed: dependents deleted per second and the ratio to the direct rate (goal: >= 0.5), the
# collector's CPU-seconds per deleted object and its RSS per tracked object (goal: < 1 KiB).
#
# Settings: GC_OWNERS (10000), GC_PER (5), GC_INFLIGHT (20), SLIPWAY / GCGEN (binaries,
# default build/), BENCH_KEEP=1 keeps the temp directory. Needs nothing but the build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build}
SLIPWAY=${SLIPWAY:-$BUILD/slipway}
GCGEN=${GCGEN:-$BUILD/sw-gcgen}
OWNERS=${GC_OWNERS:-10000}
PER=${GC_PER:-5}
INFLIGHT=${GC_INFLIGHT:-20}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-gcbench.XXXXXX")
PIDS=()
trap 'stop_all_and_clean' EXIT
trap 'exit 130' INT TERM

[[ -x $GCGEN ]] || { cmake -S "$ROOT" -B "$BUILD" >/dev/null && cmake --build "$BUILD" --target sw-gcgen >/dev/null; }

port=$((20000 + RANDOM % 30000))
URL=https://127.0.0.1:$port
"$SLIPWAY" server --data-dir "$TMP/data" --listen "127.0.0.1:$port" --no-controllers \
    >"$TMP/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
    [[ -f $TMP/data/admin.kubeconfig ]] && [[ $(curl -sk -o /dev/null -w '%{http_code}' "$URL/readyz") == 200 ]] && break
    sleep 0.05
done
TOKEN=$(awk '$1 == "token:" {gsub(/"/, "", $2); print $2; exit}' "$TMP/data/admin.kubeconfig")
"$SLIPWAY" controllers --kubeconfig "$TMP/data/admin.kubeconfig" --controllers garbagecollector \
    >"$TMP/gc.log" 2>&1 &
GC=$!
PIDS+=("$GC")

gen() { "$GCGEN" "$@" --url "$URL" --token "$TOKEN" --insecure-tls; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)
mkns() {
    [[ $(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' -X POST "$URL/api/v1/namespaces" \
        -d "{\"metadata\":{\"name\":\"$1\"}}") == 201 ]]
}
# idle PID: waits until PID used no CPU over half a second (the collector caught up).
idle() {
    local a b
    for _ in $(seq 600); do
        a=$(cpu "$1")
        sleep 0.5
        b=$(cpu "$1")
        [[ $a == "$b" ]] && return 0
    done
    log "pid $1 never went idle"
    return 1
}

sleep 2
idle "$GC"
RSS0=$(rss_kib "$GC")
DEPS=$((OWNERS * PER))
declare -A RATE CPUOBJ
for policy in Background Foreground; do
    ns=gc-$(tr 'A-Z' 'a-z' <<<"$policy")
    mkns "$ns"
    log "== $policy: $OWNERS owners x $PER dependents in $ns"
    line=$(gen populate --ns "$ns" --owners "$OWNERS" --per "$PER" --inflight "$INFLIGHT")
    log "populate: $line"
    idle "$GC"
    if [[ $policy == Background ]]; then
        RSS1=$(rss_kib "$GC")
    fi
    c0=$(cpu "$GC")
    t0=$(date +%s.%N)
    line=$(gen delete --ns "$ns" --owners "$OWNERS" --inflight "$INFLIGHT" --policy "$policy")
    log "delete owners: $line"
    line=$(gen drain --ns "$ns" --timeout 1200)
    t1=$(date +%s.%N)
    c1=$(cpu "$GC")
    RATE[$policy]=$(awk -v n="$DEPS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}')
    CPUOBJ[$policy]=$(awk -v n="$DEPS" -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) / hz / n * 1e6}')
    log "$policy: ${RATE[$policy]} dependents/s, ${CPUOBJ[$policy]} us collector CPU per object"
done

mkns gc-direct
log "== direct: $DEPS objects deleted through the API, $INFLIGHT in flight"
gen populate --ns gc-direct --owners "$DEPS" --per 0 --inflight "$INFLIGHT" >/dev/null
idle "$GC"
line=$(gen delete --ns gc-direct --owners "$DEPS" --inflight "$INFLIGHT" --policy Background)
DIRECT=$(kv "$line" rate)
DIRECT=${DIRECT%.*}
TRACKED=$((OWNERS * (PER + 1)))
RSSOBJ=$(awk -v a="$RSS0" -v b="$RSS1" -v n="$TRACKED" 'BEGIN {printf "%.0f", (b - a) * 1024 / n}')

printf '\n%-44s %12s %12s %8s\n' "" slipway-gc direct ratio
for policy in Background Foreground; do
    printf '%-44s %12s %12s %7.2fx\n' "cascade $policy (dependents/s)" "${RATE[$policy]}" "$DIRECT" \
        "$(awk -v a="${RATE[$policy]}" -v b="$DIRECT" 'BEGIN {print a / b}')"
done
printf '%-44s %12s\n' "collector CPU per deleted object, Background" "${CPUOBJ[Background]} us"
printf '%-44s %12s\n' "collector CPU per deleted object, Foreground" "${CPUOBJ[Foreground]} us"
printf '%-44s %12s   (RSS %s -> %s KiB over %s objects)\n' "collector RSS per tracked object" \
    "$RSSOBJ B" "$RSS0" "$RSS1" "$TRACKED"
awk -v a="${RATE[Background]}" -v f="${RATE[Foreground]}" -v d="$DIRECT" -v r="$RSSOBJ" 'BEGIN {
    printf "goals: cascade >= 0.5x direct: %s (background), %s (foreground); RSS < 1024 B/object: %s\n",
        (a / d >= 0.5) ? "PASS" : "MISS", (f / d >= 0.5) ? "PASS" : "MISS", (r < 1024) ? "PASS" : "MISS" }'
