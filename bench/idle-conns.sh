#!/usr/bin/env bash
# bench/idle-conns.sh: the server's memory with 2,000 idle unauthenticated connections open
# (issue 17), slipway beside etcd 3.4 (a Go server, as kube-apiserver is) in one run. Each
# server starts on free 127.0.0.1 ports in a temp dir; tests/e2e/tools/hostile.py then holds
# CONNS idle TCP connections from ADDRS loopback source addresses (slipway admits at most
# --max-connections-per-address unauthenticated ones per address, 512 by default), and VmRSS
# is read from /proc after SETTLE seconds. slipway runs with --request-header-timeout 0 so the
# connections stay for the measurement (by default they are cut after 10 s). Prints one table
# with the growth per server, per connection, and slipway's ratio to etcd.
# Knobs: BENCH_CONNS (default 2000), BENCH_ADDRS (default 4), BENCH_SETTLE (default 4),
# BENCH_KEEP=1, SLIPWAY, ETCD.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
SLIPWAY=${SLIPWAY:-$ROOT/build/slipway}
ETCD=${ETCD:-etcd}
CONNS=${BENCH_CONNS:-2000}
ADDRS=${BENCH_ADDRS:-4}
SETTLE=${BENCH_SETTLE:-4}
HOSTILE=$ROOT/tests/e2e/tools/hostile.py
TMP=$(mktemp -d /tmp/sw-bench-idle.XXXXXX)
PIDS=()
trap stop_all_and_clean EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# hold PORT: CONNS idle connections from ADDRS addresses for SETTLE + 2 s; prints the RSS
# growth (KiB) of PID $2 measured after SETTLE s, and how many connections stayed open.
hold() {
    local port=$1 pid=$2 before after a per=$((CONNS / ADDRS)) hp=()
    before=$(rss_kb "$pid")
    for ((a = 2; a < 2 + ADDRS; a++)); do
        python3 "$HOSTILE" hold --port "$port" --source "127.0.0.$a" --conns "$per" \
            --seconds $((SETTLE + 2)) >"$TMP/hold-$port-$a" &
        hp+=("$!")
    done
    sleep "$SETTLE"
    after=$(rss_kb "$pid")
    wait "${hp[@]}"
    local open
    open=$(cat "$TMP"/hold-"$port"-* | python3 -c 'import json, sys; print(sum(json.loads(l)["accepted"] for l in sys.stdin))')
    echo "$before $after $open"
}

SP=$(free_port)
"$SLIPWAY" server --data-dir "$TMP/sw" --listen "127.0.0.1:$SP" --no-controllers \
    --request-header-timeout 0 >"$TMP/sw.log" 2>&1 &
PIDS+=("$!")
SW_PID=$!
EP=$(free_port)
PP=$(free_port)
"$ETCD" --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
    --advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
    --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
    --initial-cluster "default=http://127.0.0.1:$PP" >"$TMP/etcd.log" 2>&1 &
PIDS+=("$!")
ETCD_PID=$!
for _ in $(seq 100); do
    curl -sk -o /dev/null "https://127.0.0.1:$SP/readyz" && curl -s -o /dev/null -X POST -d '{}' \
        "http://127.0.0.1:$EP/v3/maintenance/status" && break
    sleep 0.1
done
sleep 1
read -r sb sa so <<<"$(hold "$SP" "$SW_PID")"
read -r eb ea eo <<<"$(hold "$EP" "$ETCD_PID")"
sg=$((sa - sb)) eg=$((ea - eb))
printf '%-10s %10s %10s %10s %8s %12s\n' server "RSS before" "RSS after" growth open "KiB per conn"
printf '%-10s %9dM %9dM %9dM %8d %12s\n' slipway $((sb / 1024)) $((sa / 1024)) $((sg / 1024)) "$so" \
    "$(awk -v g="$sg" -v n="$so" 'BEGIN { printf n ? "%.1f" : "n/a", g / n }')"
printf '%-10s %9dM %9dM %9dM %8d %12s\n' etcd $((eb / 1024)) $((ea / 1024)) $((eg / 1024)) "$eo" \
    "$(awk -v g="$eg" -v n="$eo" 'BEGIN { printf n ? "%.1f" : "n/a", g / n }')"
echo "slipway/etcd RSS after: $(ratio "$sa" "$ea")   growth: $(ratio "$sg" "$eg")"
