# lib.sh: the shell helpers bench/api.sh, import.sh and build.sh share (sourced, never run).
# Each script keeps its own cleanup trap (ending in stop_all_and_clean) and tables; these are the
# pieces that were the same.
# shellcheck shell=bash

log() { printf '%s\n' "$*" >&2; }

# stop_pid PID: SIGTERM, wait up to 10 s (a zombie counts as stopped), then SIGKILL.
stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 200; i++)); do
        if ! kill -0 "$pid" 2>/dev/null ||
            [[ $(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null) == Z ]]; then
            return 0
        fi
        sleep 0.05
    done
    log "pid $pid ignored SIGTERM for 10 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# stop_all_and_clean: the common end of each script's cleanup trap: stops every pid in PIDS, the
# registries of tests/lib/registry.sh when that is loaded, and removes TMP (kept with
# BENCH_KEEP=1).
stop_all_and_clean() {
    local pid
    for pid in "${PIDS[@]}"; do
        stop_pid "$pid"
    done
    if declare -F reg_cleanup >/dev/null; then
        reg_cleanup || true
    fi
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then
        log "kept $TMP"
    else
        rm -rf "$TMP"
    fi
}

# kv LINE KEY: the value of KEY in a "k=v k=v" result line (status 1 when absent).
kv() {
    local tok
    for tok in $1; do
        if [[ $tok == "$2="* ]]; then
            printf '%s' "${tok#*=}"
            return 0
        fi
    done
    return 1
}

# run_bg OUT CMD...: runs CMD in the background with stdout to OUT (and stderr too when
# RUN_BG_STDERR=1) and waits, so Ctrl-C reaches the caller's trap at once; CHILD holds its pid
# meanwhile, for the trap to stop it.
run_bg() {
    local out=$1 rc=0
    shift
    if [[ ${RUN_BG_STDERR:-0} == 1 ]]; then
        "$@" >"$out" 2>&1 &
    else
        "$@" >"$out" &
    fi
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=
    return $rc
}

now() { printf '%s' "$EPOCHREALTIME"; }

# ratio A B: A / B to two decimals, or n/a when either is not a number (or B is 0).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) { print "n/a"; exit }
        printf "%.2f", a / b }'
}

times() { [[ $1 == n/a ]] && echo n/a || echo "${1}x"; }
