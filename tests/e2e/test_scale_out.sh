#!/usr/bin/env bash
# test_scale_out: a three-member etcd cluster (Debian's etcd, loopback ports) and three slipway
# servers on it, as docs/scale-out.md sets them up. Checked: every server sees the others'
# writes, and an update through one server right after another's is never lost to the first
# server's stale copy; a watch on one server gets the writes made through the other two in
# revision order, exactly once; exactly one server's controllers act (one import per stream change), and when
# the leader is killed another takes over within leaseDuration + retryPeriod (and imports once);
# kill -9 of an etcd member and of a server, three times, during acknowledged writes loses no
# acknowledged write, revisions only increase, and a watch that resumes on another server sees
# every later event exactly once; with compaction on, one server compacts per interval and a
# watch from a compacted revision gets 410 on every server.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib/registry.sh
. "$SW_TESTS/lib/registry.sh"
sw_with_registry
TOOLS=$SW_TESTS/e2e/tools

# ---- the etcd cluster ----
declare -a EC EP EPID SPORT SPID ENDPOINTS
read -r EC[1] EC[2] EC[3] EP[1] EP[2] EP[3] SPORT[1] SPORT[2] SPORT[3] REG_PORT \
    <<<"$(reg_free_ports 10)"
CLUSTER="m1=http://127.0.0.1:${EP[1]},m2=http://127.0.0.1:${EP[2]},m3=http://127.0.0.1:${EP[3]}"

start_member()
{
    local i=$1
    etcd --name "m$i" --data-dir "$SW_TMP/m$i" \
        --listen-client-urls "http://127.0.0.1:${EC[i]}" \
        --advertise-client-urls "http://127.0.0.1:${EC[i]}" \
        --listen-peer-urls "http://127.0.0.1:${EP[i]}" \
        --initial-advertise-peer-urls "http://127.0.0.1:${EP[i]}" \
        --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token tkn \
        --max-request-bytes 4194304 >>"$SW_TMP/m$i.log" 2>&1 </dev/null &
    EPID[i]=$!
    SW_ETCD_PIDS+=("${EPID[i]}")
}

# a linearizable read answered by member i: it is in a cluster with a leader
member_ok()
{
    curl -s --max-time 2 -X POST -d '{"key":"Zm9v"}' "http://127.0.0.1:${EC[$1]}/v3/kv/range" |
        grep -q '"revision"'
}

all_members_ok() { member_ok 1 && member_ok 2 && member_ok 3; }

for i in 1 2 3; do start_member "$i"; done
wait_for "the three etcd members answer linearizable reads" 30 all_members_ok

# ---- three servers; each prefers another member ----
ENDPOINTS[1]="127.0.0.1:${EC[1]},127.0.0.1:${EC[2]},127.0.0.1:${EC[3]}"
ENDPOINTS[2]="127.0.0.1:${EC[2]},127.0.0.1:${EC[3]},127.0.0.1:${EC[1]}"
ENDPOINTS[3]="127.0.0.1:${EC[3]},127.0.0.1:${EC[1]},127.0.0.1:${EC[2]}"
for i in 1 2 3; do mkdir -p "$SW_TMP/s$i"; done
SRV_EXTRA=()

start_server()
{
    local i=$1
    echo "---- start" >>"$SW_TMP/s$i.log"
    "$SLIPWAY" server --data-dir "$SW_TMP/s$i" --listen "127.0.0.1:${SPORT[i]}" --v=2 \
        --store "etcd://${ENDPOINTS[i]}" --image-registry "$REG" --insecure-registry "$REG" \
        ${SRV_EXTRA[@]+"${SRV_EXTRA[@]}"} >>"$SW_TMP/s$i.log" 2>&1 </dev/null &
    SPID[i]=$!
    SW_BG_PIDS+=("${SPID[i]}")
    for _ in $(seq 150); do
        [ "$(curl -sk --max-time 2 -o /dev/null -w '%{http_code}' \
            "https://127.0.0.1:${SPORT[i]}/readyz")" = 200 ] && return 0
        kill -0 "${SPID[i]}" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 30 "$SW_TMP/s$i.log" >&2
    fail "server $i did not become ready"
}

sw_fail_extra()
{
    local i
    for i in 1 2 3; do
        echo "---- server $i log tail ----" >&2
        tail -n 25 "$SW_TMP/s$i.log" >&2
    done
}

REG=127.0.0.1:$REG_PORT
reg_start open "$REG_PORT"
reg_push_new v1 amd64 "$REG/demo/app:v1"

start_server 1
# one admin token and build-token key for all three, as behind a load balancer
cp "$SW_TMP/s1/token" "$SW_TMP/s1/build-token.key" "$SW_TMP/s2/"
cp "$SW_TMP/s1/token" "$SW_TMP/s1/build-token.key" "$SW_TMP/s3/"
start_server 2
start_server 3
TOKEN=$(cat "$SW_TMP/s1/token")
URL() { echo "https://127.0.0.1:${SPORT[$1]}"; }
ALL="$(URL 1),$(URL 2),$(URL 3)"
k() { local i=$1; shift; kubectl --kubeconfig "$SW_TMP/s$i/admin.kubeconfig" "$@"; }
for i in 1 2 3; do expect_eq "server $i uses the shared token" "$TOKEN" \
    "$(awk '$1 == "token:" {print $2}' "$SW_TMP/s$i/admin.kubeconfig")"; done

leaders()
{
    # the servers whose current process last said it leads
    local i
    for i in 1 2 3; do
        awk -v i="$i" '/^---- start/ {l = ""} /leading as/ {l = i " "}
            /stopping the controllers/ {l = ""} END {printf "%s", l}' "$SW_TMP/s$i.log"
    done
}
some_leader() { [ -n "$(leaders)" ]; }
wait_for "one server leads the controllers" 20 some_leader
sleep 3 # a second leader would show by now (candidates try every 2 s)
L=$(leaders)
expect_eq "exactly one server leads" 1 "$(echo "$L" | wc -w)"
L=${L// /}

# ---- every server sees the others' writes ----
for i in 1 2 3; do
    expect_ok "create cm from-$i through server $i" k "$i" create configmap "from-$i" --from-literal=a=$i
done
for i in 1 2 3; do
    for j in 1 2 3; do
        expect_eq "server $i reads the ConfigMap written through server $j" "$j" \
            "$(k "$i" get configmap "from-$j" -o jsonpath='{.data.a}')"
    done
done
expect_eq "a list through server 2 has all three" "from-1 from-2 from-3" \
    "$(k 2 get configmaps -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep '^from-' | xargs)"

# ---- an update starts from the server's recent copy, and a stale copy never wins ----
expect_ok "create cm pp" k 1 create configmap pp --from-literal=a=x
expect_ok "200 rounds: x through server 1, y through 2, x again through 1 holds x" \
    /usr/bin/python3 "$TOOLS/scaleout.py" pingpong --servers "$(URL 1),$(URL 2)" --token "$TOKEN" \
    --prefix pp --count 200

# ---- a watch on server 1 gets the writes through servers 2 and 3, in order, once ----
R0=$(k 1 get configmap pp -o jsonpath='{.metadata.resourceVersion}') # the newest write
/usr/bin/python3 "$TOOLS/scaleout.py" watch --servers "$(URL 1)" --token "$TOKEN" \
    --from-rv "$R0" --expect 30 --timeout 60 >"$SW_TMP/watch1.out" 2>"$SW_TMP/watch1.err" &
WPID=$!
sleep 0.5
expect_ok "30 creates alternating between servers 2 and 3" /usr/bin/python3 "$TOOLS/scaleout.py" \
    write --servers "$(URL 2),$(URL 3)" --token "$TOKEN" --prefix bc --count 30
printf '%s\n' "$OUT" >"$SW_TMP/write1.out"
wait "$WPID"
expect_eq "the watch on server 1: the 30 writes, in revision order, each once" \
    "$(awk '{print "ADDED", $1, $2}' "$SW_TMP/write1.out")" \
    "$(awk '{print $1, $2, $3}' "$SW_TMP/watch1.out")"

# ---- leader election: one import per change, and a takeover after kill -9 ----
imports()
{
    cat "$SW_TMP"/s[123].log | grep -c "POST /apis/image.openshift.io/v1/namespaces/default/imagestreamimports"
}
before=$(imports)
expect_ok "an ImageStream tracking $REG/demo/app:v1" k 2 create -f - <<EOF
{"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "app"},
 "spec": {"tags": [{"name": "v1", "from": {"kind": "DockerImage", "name": "$REG/demo/app:v1"}}]}}
EOF
imported()
{
    k "$1" get is app -o jsonpath="{.status.tags[?(@.tag==\"$2\")].items[0].image}" |
        grep -q sha256
}
wait_for "the tag is imported" 30 imported 3 v1
sleep 3
expect_eq "the stream change was imported once, by the leader alone" 1 $(($(imports) - before))

T0=$(date +%s%N)
kill -9 "${SPID[L]}"
wait "${SPID[L]}" 2>/dev/null
NEW=
for _ in $(seq 250); do
    for i in 1 2 3; do
        [ "$i" = "$L" ] && continue
        case " $(leaders)" in *" $i "*) NEW=$i ;; esac
    done
    [ -n "$NEW" ] && break
    sleep 0.1
done
TAKEOVER_MS=$((($(date +%s%N) - T0) / 1000000))
[ -n "$NEW" ] || fail "no server took over the controllers within 25 s of the leader's kill -9"
echo "# takeover after the leader's kill -9: $TAKEOVER_MS ms (leaseDuration 15 s + retryPeriod 2 s)"
[ "$TAKEOVER_MS" -le 19000 ] || fail "takeover took $TAKEOVER_MS ms (at most 17 s + 2 s slack)"
pass "server $NEW took over the controllers $TAKEOVER_MS ms after server $L was killed"
reg_push_new v2 amd64 "$REG/demo/app:v2"
before=$(imports)
expect_ok "a second tag on the stream" k "$NEW" patch is app --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/spec/tags/-\",\"value\":{\"name\":\"v2\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"$REG/demo/app:v2\"}}}]"
wait_for "the new leader imports it" 30 imported "$NEW" v2
sleep 3
expect_eq "... once" 1 $(($(imports) - before))
start_server "$L" # back, as a candidate
sleep 3
expect_eq "still exactly one leader after the old one came back" 1 "$(leaders | wc -w)"

# ---- kill -9 of a member and a server, three times, during acknowledged writes ----
R1=$(k 1 create configmap mark -o jsonpath='{.metadata.resourceVersion}')
N=150
/usr/bin/python3 "$TOOLS/scaleout.py" watch --servers "$ALL" --token "$TOKEN" --from-rv "$R1" \
    --expect "$N" --timeout 120 >"$SW_TMP/watch2.out" 2>"$SW_TMP/watch2.err" &
WPID=$!
/usr/bin/python3 "$TOOLS/scaleout.py" write --servers "$ALL" --token "$TOKEN" --prefix kw \
    --count $N --pause 0.04 >"$SW_TMP/write2.out" 2>"$SW_TMP/write2.err" &
WRPID=$!
for round in 1 2 3; do
    sleep 1.5
    kill -9 "${EPID[round]}" "${SPID[round]}"
    wait "${SPID[round]}" 2>/dev/null
    wait "${EPID[round]}" 2>/dev/null
    sleep 1
    start_member "$round"
    start_server "$round"
    wait_for "member $round rejoined, the cluster has a leader" 30 all_members_ok
done
wait "$WRPID"
expect_eq "the writer finished (every write acknowledged eventually)" 0 $?
wait "$WPID"
expect_eq "acknowledged writes" "$N" "$(wc -l <"$SW_TMP/write2.out")"
expect_eq "acknowledged revisions strictly increase" "" \
    "$(awk 'NR > 1 && $2 + 0 <= prev { print "not increasing at " $1 } { prev = $2 + 0 }' "$SW_TMP/write2.out")"
for i in 1 2 3; do
    expect_eq "server $i lists every acknowledged write" "$N" \
        "$(k "$i" get configmaps -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep -c '^kw-')"
done
expect_eq "the resumed watch: every acknowledged write once, in order" \
    "$(awk '{print "ADDED", $1, $2}' "$SW_TMP/write2.out")" \
    "$(awk '$2 ~ /^kw-/ {print $1, $2, $3}' "$SW_TMP/watch2.out")"
expect_eq "the watch's revisions strictly increase" "" \
    "$(awk 'NR > 1 && $3 + 0 <= prev { print "not increasing at " $2 } { prev = $3 + 0 }' "$SW_TMP/watch2.out")"
# It was on server 1 when that was killed, so it resumed at least once (on whichever server
# answered first: a server whose etcd is electing a leader sends nothing for a while).
n=$(grep -c "ended\|end of stream" "$SW_TMP/watch2.err")
[ "$n" -ge 1 ] || fail "the watch was never cut, so it never resumed"
pass "the watch was cut and resumed $n times, on $(awk '{print $4}' "$SW_TMP/watch2.out" |
    sort -u | wc -l) server(s)"
expect_eq "no ERROR in the resumed watch" "" "$(grep ERROR "$SW_TMP/watch2.out")"

# ---- two members of three down: no quorum, not ready; quorum back: ready ----
readyz_is() { [ "$(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "$(URL "$1")/readyz")" = "$2" ]; }
kill -9 "${EPID[2]}" "${EPID[3]}"
wait "${EPID[2]}" "${EPID[3]}" 2>/dev/null
wait_for "two etcd members of three down: server 1 is not ready" 10 readyz_is 1 500
expect_contains "... and says the store check failed" "[-]store failed" \
    "$(curl -sk --max-time 5 "$(URL 1)/readyz?verbose")"
expect_eq "... while it is alive" 200 \
    "$(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "$(URL 1)/livez")"
start_member 2
start_member 3
wait_for "the cluster has a leader again" 30 all_members_ok
wait_for "server 1 is ready again" 10 readyz_is 1 200

# ---- compaction: one server per interval; a compacted revision is 410 everywhere ----
for i in 1 2 3; do
    kill -TERM "${SPID[i]}"
    wait "${SPID[i]}"
    expect_eq "server $i exits 0 on SIGTERM" 0 $?
done
compactions()
{
    cat "$SW_TMP"/s[123].log | grep -c "compacted the store to revision"
}
c0=$(compactions)
SRV_EXTRA=(--compact-interval 2 --compact-keep 5)
for i in 1 2 3; do start_server "$i"; done
T0=$(date +%s)
expect_ok "writes during compaction" /usr/bin/python3 "$TOOLS/scaleout.py" write \
    --servers "$ALL" --token "$TOKEN" --prefix cx --count 20 --pause 0.4
sleep 1
SECS=$(($(date +%s) - T0))
C=$(($(compactions) - c0))
echo "# $C compactions in $SECS s by three servers compacting every 2 s"
[ "$C" -ge 1 ] || fail "no compaction in $SECS s"
[ "$C" -le $((SECS / 2 + 2)) ] || fail "$C compactions in $SECS s: more than one per 2 s interval"
pass "$C compactions in $SECS s: one per interval between the three servers"
for i in 1 2 3; do
    out=$(curl -sk -N --max-time 5 -H "Authorization: Bearer $TOKEN" \
        "$(URL "$i")/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=2")
    expect_contains "server $i: a watch from compacted revision 2 gets 410 Expired" '"code":410' "$out"
done

for i in 1 2 3; do
    kill -TERM "${SPID[i]}"
    wait "${SPID[i]}"
    expect_eq "server $i exits 0 at the end" 0 $?
done
grep -En "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error" "$SW_TMP"/s[123].log >&2 &&
    fail "sanitizer report in a server log"
pass "no sanitizer report in the server logs"
echo "PASS [$SW_NAME]: $SW_CHECKS checks"
