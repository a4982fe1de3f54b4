# lib.sh: shared helpers for the end-to-end tests (sourced, never run).
# sw_start_server starts `$SLIPWAY server` on a free 127.0.0.1 port in a temporary data dir, waits
# for /readyz and exports KUBECONFIG; an EXIT trap stops the server and its helpers and removes
# the directory on every exit path. fail/expect_* print what was expected and what came, plus the
# tail of the server log, and exit non-zero. sw_finish stops the server cleanly and checks its
# exit status and log for sanitizer reports. sw_api sends one request with the admin token and
# sw_json reads a field of the JSON it answers.
# shellcheck shell=bash disable=SC2034 # SW_* variables are read by the sourcing scripts

set -u
set -o pipefail

: "${SLIPWAY:?SLIPWAY must name the slipway binary}"
SW_TESTS=${SW_TESTS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SW_FIXTURES=$SW_TESTS/e2e/fixtures
SW_NAME=$(basename "$0" .sh)

SW_TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-$SW_NAME.XXXXXX")
SW_DIR=$SW_TMP/data
SW_LOG=$SW_TMP/server.log
SW_PID=
SW_PORT=
SW_URL=
SW_TOKEN=
SW_BG_PIDS=()
SW_ETCD_PIDS=()
SW_CHECKS=0
export KUBECACHEDIR=$SW_TMP/kube-cache # no discovery cache shared with other runs
export HOME=$SW_TMP                    # kubectl writes nothing into the real home

sw_log_tail()
{
    if [ -n "$SW_LOG" ] && [ -f "$SW_LOG" ]; then
        echo "---- last 40 lines of the server log ($SW_LOG) ----" >&2
        tail -n 40 "$SW_LOG" >&2
        echo "----" >&2
    fi
}

# fail MESSAGE...: reports a failed check and exits 1 (the trap cleans up). After
# sw_with_registry it prints the registries' logs too, and a script's sw_fail_extra (when it
# defines one) adds its own.
fail()
{
    echo "FAIL [$SW_NAME]: $*" >&2
    sw_log_tail
    if [ -n "${SW_WITH_REGISTRY:-}" ]; then
        reg_logs
    fi
    if declare -F sw_fail_extra >/dev/null; then
        sw_fail_extra
    fi
    exit 1
}

# sw_with_registry: for a script that also sources tests/lib/registry.sh: checks its tools,
# gives it $SW_TMP/reg, stops its processes on exit, and adds its logs to fail's report.
sw_with_registry()
{
    reg_require
    reg_init "$SW_TMP/reg"
    trap 'reg_cleanup; sw_cleanup' EXIT
    SW_WITH_REGISTRY=1
}

pass()
{
    SW_CHECKS=$((SW_CHECKS + 1))
    echo "ok: $*"
}

sw_cleanup()
{
    local rc=$?
    local p
    for p in "${SW_BG_PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    if [ -n "$SW_PID" ] && kill -0 "$SW_PID" 2>/dev/null; then
        kill "$SW_PID" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$SW_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$SW_PID" 2>/dev/null
        wait "$SW_PID" 2>/dev/null
    fi
    for p in "${SW_ETCD_PIDS[@]}"; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    if [ "$rc" -ne 0 ] && [ -n "${SW_KEEP_TMP:-}" ]; then
        echo "kept $SW_TMP" >&2
    else
        rm -rf "$SW_TMP"
    fi
    exit "$rc"
}
trap sw_cleanup EXIT
trap 'exit 130' INT TERM

# expect_eq WHAT EXPECTED ACTUAL
expect_eq()
{
    [ "$2" = "$3" ] || fail "$1: expected [$2], got [$3]"
    pass "$1"
}

# expect_contains WHAT NEEDLE HAYSTACK (fixed string)
expect_contains()
{
    case "$3" in
    *"$2"*) pass "$1" ;;
    *) fail "$1: expected output containing [$2], got:
$3" ;;
    esac
}

# expect_not_contains WHAT NEEDLE HAYSTACK
expect_not_contains()
{
    case "$3" in
    *"$2"*) fail "$1: expected no [$2] in output, got:
$3" ;;
    *) pass "$1" ;;
    esac
}

# expect_match WHAT ERE HAYSTACK: some line of HAYSTACK matches the extended regex.
expect_match()
{
    # a here-string, not a pipe: under pipefail, grep -q quitting early kills printf (SIGPIPE)
    grep -Eq -- "$2" <<<"$3" || fail "$1: expected a line matching /$2/, got:
$3"
    pass "$1"
}

# run CMD...: runs CMD, keeping stdout+stderr in OUT and the exit status in RC.
run()
{
    OUT=$("$@" 2>&1)
    RC=$?
}

# expect_ok WHAT CMD...: CMD must succeed; its output is left in OUT.
expect_ok()
{
    local what=$1
    shift
    run "$@"
    [ "$RC" -eq 0 ] || fail "$what: expected success from [$*], got exit $RC:
$OUT"
    pass "$what"
}

# expect_exit WHAT CODE CMD...: CMD exits with CODE; its output is left in OUT.
expect_exit()
{
    local what=$1 code=$2
    shift 2
    run "$@"
    [ "$RC" -eq "$code" ] || fail "$what: expected exit $code from [$*], got $RC:
$OUT"
    pass "$what"
}

# expect_fails WHAT NEEDLE CMD...: CMD must fail and print NEEDLE; its output is left in OUT.
expect_fails()
{
    local what=$1 needle=$2
    shift 2
    run "$@"
    [ "$RC" -ne 0 ] || fail "$what: expected [$*] to fail, it succeeded:
$OUT"
    expect_contains "$what" "$needle" "$OUT"
}

# wait_for WHAT SECONDS CMD...: runs CMD until it succeeds (again each time: pass a command,
# not a "$(...)" expanded once), then passes WHAT; fails after SECONDS.
wait_for()
{
    local what=$1 deadline=$(($(date +%s) + $2))
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within the time allowed"
        sleep 0.2
    done
    pass "$what"
}

# is_eq WANT CMD... / is_ge MIN CMD...: CMD prints WANT / a number >= MIN (for wait_for).
is_eq() { [ "$("${@:2}")" = "$1" ]; }
is_ge() { [ "$("${@:2}")" -ge "$1" ]; }

# kc ARGS...: kubectl against the test server, with a bounded request time.
kc()
{
    kubectl --request-timeout=30s "$@"
}

# sw_bg CMD...: starts CMD in the background; the EXIT trap kills it if still running.
sw_bg()
{
    "$@" &
    SW_BG_PIDS+=($!)
}

# sw_bg_stop: ends every command sw_bg started.
sw_bg_stop()
{
    local p
    for p in "${SW_BG_PIDS[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    SW_BG_PIDS=()
}

sw_port_busy()
{
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# sw_free_port: a loopback port below the ephemeral range that nothing listens on now.
sw_free_port()
{
    local port
    while :; do
        port=$((20000 + RANDOM % 12768))
        sw_port_busy "$port" || { echo "$port"; return 0; }
    done
}

# sw_start_etcd [NAME]: a fresh single-member etcd (Debian's) on loopback ports, stopped by the
# EXIT trap after the server (not by sw_bg_stop); sets SW_ETCD_ENDPOINT (HOST:PORT) and
# SW_ETCD_PID.
sw_start_etcd()
{
    local name=${1:-etcd} c p
    c=$(sw_free_port)
    p=$(sw_free_port)
    [ "$c" != "$p" ] || p=$((c + 1))
    etcd --name "$name" --data-dir "$SW_TMP/$name" --listen-client-urls "http://127.0.0.1:$c" \
        --advertise-client-urls "http://127.0.0.1:$c" --listen-peer-urls "http://127.0.0.1:$p" \
        --initial-advertise-peer-urls "http://127.0.0.1:$p" \
        --initial-cluster "$name=http://127.0.0.1:$p" --max-request-bytes 4194304 \
        >"$SW_TMP/$name.log" 2>&1 </dev/null &
    SW_ETCD_PID=$!
    SW_ETCD_PIDS+=("$SW_ETCD_PID")
    SW_ETCD_ENDPOINT=127.0.0.1:$c
    for _ in $(seq 100); do
        curl -s --max-time 1 -X POST -d '{}' "http://$SW_ETCD_ENDPOINT/v3/maintenance/status" \
            2>/dev/null | grep -q '"version"' && return 0
        kill -0 "$SW_ETCD_PID" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 20 "$SW_TMP/$name.log" >&2
    fail "etcd did not start on $SW_ETCD_ENDPOINT"
}

# The server's store: SQLite in its data dir, or with SW_STORE=etcd a fresh etcd of the test's
# own (so any suite runs unchanged on etcd).
SW_STORE_FLAGS=()
sw_store_flags()
{
    if [ "${SW_STORE:-sqlite}" = etcd ] && [ ${#SW_STORE_FLAGS[@]} -eq 0 ]; then
        sw_start_etcd
        SW_STORE_FLAGS=(--store "etcd://$SW_ETCD_ENDPOINT")
    fi
}

# sw_start_server [EXTRA SERVER FLAGS...]: sets SW_PORT, SW_URL, SW_TOKEN and KUBECONFIG.
sw_start_server()
{
    local attempt port
    mkdir -p "$SW_DIR"
    sw_store_flags
    for attempt in 1 2 3 4 5; do
        # below the ephemeral range (32768-60999): no outgoing connection takes it meanwhile
        port=$((20000 + RANDOM % 12768))
        sw_port_busy "$port" && continue
        # Without SW_CONTROLLERS=1 the import and build controllers stay off, so only the test
        # writes what it checks; deletion works as on a cluster (garbage collector, namespace
        # controller).
        "$SLIPWAY" server --data-dir "$SW_DIR" --listen "127.0.0.1:$port" --v=2 \
            $([ "${SW_CONTROLLERS:-0}" = 1 ] || echo --controllers=garbagecollector,namespace) \
            ${SW_STORE_FLAGS[@]+"${SW_STORE_FLAGS[@]}"} "$@" \
            >>"$SW_LOG" 2>&1 </dev/null &
        SW_PID=$!
        SW_PORT=$port
        SW_URL=https://127.0.0.1:$port
        for _ in $(seq 150); do
            if [ "$(curl -sk --max-time 2 -o /dev/null -w '%{http_code}' "$SW_URL/readyz" \
                2>/dev/null)" = 200 ]; then
                break
            fi
            kill -0 "$SW_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$SW_PID" 2>/dev/null && [ -f "$SW_DIR/admin.kubeconfig" ]; then
            export KUBECONFIG=$SW_DIR/admin.kubeconfig
            SW_TOKEN=$(awk '$1 == "token:" {print $2}' "$KUBECONFIG")
            [ -n "$SW_TOKEN" ] || fail "no token in $KUBECONFIG"
            echo "server pid $SW_PID on $SW_URL (attempt $attempt)"
            return 0
        fi
        if kill -0 "$SW_PID" 2>/dev/null; then
            fail "server on port $port never answered /readyz with 200"
        fi
        wait "$SW_PID" 2>/dev/null
        SW_PID=
        grep -qi "address already in use" "$SW_LOG" || fail "server exited during start"
    done
    fail "could not find a free port for the server"
}

# sw_restart_server [FLAGS...]: stops the test server (when running) and starts it again on the
# same port, data dir and log with FLAGS (no embedded controllers), so that clients holding the
# kubeconfig (a waiting start-build, a separate `slipway controllers`) reconnect to it.
sw_restart_server()
{
    [ -z "${SW_PID:-}" ] || { kill -TERM "$SW_PID"; wait "$SW_PID" 2>/dev/null; }
    "$SLIPWAY" server --data-dir "$SW_DIR" --listen "127.0.0.1:$SW_PORT" --no-controllers \
        ${SW_STORE_FLAGS[@]+"${SW_STORE_FLAGS[@]}"} "$@" \
        >>"$SW_LOG" 2>&1 </dev/null &
    SW_PID=$!
    for _ in $(seq 100); do
        [ "$(curl -sk --max-time 2 -o /dev/null -w '%{http_code}' "$SW_URL/readyz")" = 200 ] &&
            return 0
        sleep 0.1
    done
    fail "the server did not come back on port $SW_PORT"
}

# sw_finish: /readyz still 200, then SIGTERM; the server must exit 0 with a clean log.
# sw_stop_server: checks the server is still ready, stops it with SIGTERM (it must exit within
# 10 s, with status 0) and checks its log for sanitizer reports.
sw_stop_server()
{
    local code rc
    code=$(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "$SW_URL/readyz")
    expect_eq "server still ready at the end" 200 "$code"
    kill -TERM "$SW_PID"
    for _ in $(seq 100); do
        kill -0 "$SW_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$SW_PID" 2>/dev/null && fail "server did not exit within 10 s of SIGTERM"
    wait "$SW_PID"
    rc=$?
    SW_PID=
    grep -En "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error|Sanitizer" "$SW_LOG" >&2 &&
        fail "sanitizer report in the server log"
    pass "no sanitizer report in the server log"
    expect_eq "server exit status after SIGTERM" 0 "$rc"
}

# sw_finish: stops the server (unless a test did already) and prints the summary.
sw_finish()
{
    [ -z "$SW_PID" ] || sw_stop_server
    echo "PASS [$SW_NAME]: $SW_CHECKS checks"
}

# sw_api METHOD PATH [CURL ARGS...]: one request to the test server with the admin token; the
# response body on stdout, curl's status as the return value.
sw_api()
{
    local method=$1 path=$2
    shift 2
    curl -sSk --max-time 30 -X "$method" -H "Authorization: Bearer $SW_TOKEN" "$@" "$SW_URL$path"
}

# sw_json EXPR < JSON: prints the Python expression EXPR over the document o (a string as it is,
# None as nothing, anything else as sorted JSON); at("a.b.0.c") walks dicts and lists and gives
# None where the path ends early. A document that does not parse is {}; an EXPR that raises
# prints nothing and returns 1.
sw_json()
{
    python3 -c 'import json, sys
try:
    o = json.load(sys.stdin)
except ValueError:
    o = {}
def at(path, d=None):
    d = o if d is None else d
    for k in path.split("."):
        if isinstance(d, list) and k.isdigit() and int(k) < len(d):
            d = d[int(k)]
        elif isinstance(d, dict):
            d = d.get(k)
        else:
            return None
    return d
v = eval(sys.argv[1])
print("" if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True))' "$1" 2>/dev/null
}
