#!/usr/bin/env bash
# test_hardening.sh: issue 17's findings, one regression check each, against `slipway server`.
# Finding 1, secrets at rest: in a data directory the operator made 0755, under umask 022,
# every file slipway writes (store, WAL, shm, lock, tokens, kubeconfig, TLS key) is 0600 and
# no other local user can read a Secret's bytes; the start warns about the open directory; a
# directory slipway creates is 0700 with no warning; a store file an older run left 0644 is
# narrowed at the next start.
# Finding 2: a webhook's secret never reaches the log. Finding 3: webhook and notification calls
# are judged from their headers, before any body is read (300 connections sending 3 MB each
# leave the RSS where it was), and the bodies of authenticated requests in flight together are
# bounded (--max-body-memory: past it 429). Finding 4: with --max-connections 200, one address
# holds at most --max-connections-per-address unauthenticated connections, connections from
# many addresses that fill the server make room for a new one, a header trickled a line at a
# time is cut at --request-header-timeout, and an authenticated keep-alive connection is not.
# Finding 5: the watch cache is bounded by bytes (--watch-cache-memory 64 here; 256 MiB by default). Finding 6: /readyz fails while etcd refuses
# writes (a NOSPACE alarm). Finding 7: the smaller ones, one check each.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

umask 022
mkdir -m 0755 "$SW_DIR"
sw_start_server
SECRET_VALUE=hardening-secret-value-7f3a9c
B64=$(printf %s "$SECRET_VALUE" | base64 -w0)
expect_ok "create a Secret" kc create secret generic s1 --from-literal=k="$SECRET_VALUE"
expect_ok "its bytes are in the store" grep -rqF "$B64" "$SW_DIR"
expect_eq "no file in the data directory is open to others" "" \
    "$(find "$SW_DIR" -type f -perm /077 -printf '%m %p\n')"
expect_eq "no directory under it is open to others" "" \
    "$(find "$SW_DIR" -mindepth 1 -type d -perm /077 -printf '%m %p\n')"
# (the unix-excl VFS keeps the WAL index in memory: no -shm file)
expect_ok "the store and its WAL exist" test -f "$SW_DIR/state.db" -a -f "$SW_DIR/state.db-wal"
expect_eq "another user reads none of it" 0 \
    "$(runuser -u nobody -- grep -rcF "$B64" "$SW_DIR" 2>/dev/null | awk -F: '{n += $NF} END {print n + 0}')"
expect_contains "the start warns about the open data directory" "is open to other users (mode 0755)" \
    "$(cat "$SW_LOG")"

# an older run's store file, 0644: narrowed at the next start
sw_stop_server
chmod 0644 "$SW_DIR/state.db"
sw_start_server
expect_eq "state.db is 0600 again after a restart" 600 "$(stat -c %a "$SW_DIR/state.db")"
sw_stop_server

# a data directory slipway creates (sw_start_server would make it itself)
FRESH=$SW_TMP/fresh-data
PORT=$(sw_free_port)
"$SLIPWAY" server --data-dir "$FRESH" --listen "127.0.0.1:$PORT" >"$SW_TMP/fresh.log" 2>&1 </dev/null &
FPID=$!
SW_BG_PIDS+=("$FPID")
has_kubeconfig() { [ -s "$FRESH/admin.kubeconfig" ]; }
wait_for "the second server writes its kubeconfig" 20 has_kubeconfig
expect_eq "a data directory slipway creates is 0700" 700 "$(stat -c %a "$FRESH")"
expect_eq "its files are 0600 too" "" "$(find "$FRESH" -type f -perm /077 -printf '%m %p\n')"
kill -TERM "$FPID"
wait "$FPID"
expect_not_contains "and it draws no warning" "open to other users" "$(cat "$SW_TMP/fresh.log")"

# ---- finding 2: webhook secrets stay out of the log ----
# Memory is measured from /proc: under AddressSanitizer, freed memory stays in its quarantine
# (256 MB by default), which would hide what the server holds.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4
HOSTILE=$SW_TESTS/e2e/tools/hostile.py
sw_start_server --max-connections 200 --max-connections-per-address 100 \
    --request-header-timeout 2 --max-body-memory 32 --watch-cache-memory 64
BAPI=/apis/build.openshift.io/v1/namespaces/default
HOOK_SECRET=WebhookSecretXYZ789
cat >"$SW_TMP/bc.json" <<EOF
{"apiVersion": "build.openshift.io/v1", "kind": "BuildConfig", "metadata": {"name": "hooked"},
 "spec": {"source": {"type": "Git", "git": {"uri": "https://example.invalid/x.git"}},
  "strategy": {"type": "Docker", "dockerStrategy": {}},
  "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:1/x/y:latest"}},
  "triggers": [{"type": "Generic", "generic": {"secret": "$HOOK_SECRET"}}]}}
EOF
expect_eq "a BuildConfig with a generic webhook" 201 "$(sw_api POST "$BAPI/buildconfigs" -o /dev/null \
    -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$SW_TMP/bc.json")"
hook() { curl -sSk --max-time 30 -X POST -o /dev/null -w '%{http_code}' "$SW_URL$BAPI/buildconfigs/$1/webhooks/$2/generic"; }
expect_match "the webhook with its secret starts a build" '^20[01]$' "$(hook hooked "$HOOK_SECRET")"
expect_eq "a GET of the webhook URL with the admin token: 405" 405 \
    "$(sw_api GET "$BAPI/buildconfigs/hooked/webhooks/$HOOK_SECRET/generic" -o /dev/null -w '%{http_code}')"
curl -sSk --max-time 30 -X POST -o /dev/null "$SW_URL$BAPI/buildconfigs/hooked/webhooks/$HOOK_SECRET/generic/"
curl -sSk --max-time 30 -X POST -o /dev/null "$SW_URL$BAPI/buildconfigs/hooked//webhooks//$HOOK_SECRET//generic"
expect_not_contains "the secret is nowhere in the log (--v=2), whatever the path's shape" "$HOOK_SECRET" "$(cat "$SW_LOG")"
expect_contains "the webhook requests are logged, the secret redacted" \
    "buildconfigs/hooked/webhooks/<redacted>/generic" "$(cat "$SW_LOG")"

# ---- finding 7: webhooks answer alike for a wrong secret and a missing BuildConfig ----
expect_eq "a wrong secret: 401" 401 "$(hook hooked not-the-secret)"
expect_eq "a BuildConfig that does not exist: 401 as well" 401 "$(hook no-such-bc not-the-secret)"
expect_eq "a namespace that does not exist: 401 as well" 401 \
    "$(curl -sSk --max-time 30 -X POST -o /dev/null -w '%{http_code}' \
        "$SW_URL/apis/build.openshift.io/v1/namespaces/nons/buildconfigs/x/webhooks/s/generic")"

# ---- finding 3: unauthenticated bodies are never read ----
out=$(python3 "$HOSTILE" bodies --port "$SW_PORT" --pid "$SW_PID" --conns 300 --size 3000000 \
    --path "$BAPI/buildconfigs/hooked/webhooks/wrong/generic" --seconds 30)
echo "webhook flood: $out"
grew=$(echo "$out" | sw_json 'at("rss_peak_mb") - at("rss_before_mb")')
expect_ok "300 webhook calls of 3 MB with a wrong secret: RSS grew by less than 60 MB ($grew)" \
    test "$grew" -lt 60
expect_eq "... and none was accepted" "" "$(echo "$out" | sw_json '[c for c in at("codes") if c.startswith("2")] or None')"
out=$(python3 "$HOSTILE" bodies --port "$SW_PORT" --pid "$SW_PID" --conns 300 --size 3000000 \
    --path /notifications/registry --seconds 30)
echo "notification flood: $out"
grew=$(echo "$out" | sw_json 'at("rss_peak_mb") - at("rss_before_mb")')
expect_ok "300 notifications of 3 MB without the token: RSS grew by less than 60 MB ($grew)" \
    test "$grew" -lt 60
expect_eq "an anonymous path takes no large body (Content-Length checked first)" 413 \
    "$(curl -sSk --max-time 30 -o /dev/null -w '%{http_code}' -X POST -H 'Content-Length: 100000' \
        --data-binary @/dev/null "$SW_URL/version")"
# authenticated bodies in flight together: --max-body-memory 32 (MiB)
out=$(python3 "$HOSTILE" bodies --port "$SW_PORT" --pid "$SW_PID" --conns 40 --size 3000000 \
    --token "$SW_TOKEN" --path /api/v1/namespaces/default/configmaps --seconds 60)
echo "authenticated bodies: $out"
expect_match "40 authenticated 3 MB bodies at once: some get 429 (the budget)" '"429": [0-9]' "$out"
expect_match "... and the others are read (400: they are not JSON)" '"400": [0-9]' "$out"
# ---- finding 4: connections ----
expect_eq "the admin token works before the hold" 200 "$(sw_api GET /api -o /dev/null -w '%{http_code}')"
python3 "$HOSTILE" hold --port "$SW_PORT" --source 127.0.0.2 --conns 200 --seconds 4 >"$SW_TMP/hold1" &
HOLD=$!
sleep 1.5
expect_eq "while one address holds 200 idle connections, a client with a token is served" 200 \
    "$(sw_api GET /api -o /dev/null -w '%{http_code}')"
wait "$HOLD"
expect_eq "... that address holds 100 at once (--max-connections-per-address)" 100 \
    "$(sw_json 'at("open_at")' <"$SW_TMP/hold1")"
HOLDS=()
for a in 2 3 4 5; do
    python3 "$HOSTILE" hold --port "$SW_PORT" --source "127.0.0.$a" --conns 50 --seconds 5 \
        --reconnect >"$SW_TMP/hold-$a" &
    HOLDS+=("$!")
done
sleep 2.5
for i in 1 2 3; do
    expect_eq "four addresses filling all 200 connections, reconnecting: a client with a token is served ($i)" \
        200 "$(sw_api GET /api -o /dev/null -w '%{http_code}')"
done
wait "${HOLDS[@]}"
out=$(python3 "$HOSTILE" trickle --port "$SW_PORT" --interval 0.5 --seconds 10)
echo "trickle: $out"
expect_ok "a header trickled a line every 0.5 s is cut near --request-header-timeout 2 ($out)" \
    python3 -c 'import json, sys; t = json.loads(sys.argv[1])["closed_after_s"]; sys.exit(not (t and 1.5 <= t <= 5))' "$out"
out=$(python3 "$HOSTILE" trickle --body --port "$SW_PORT" --interval 0.5 --seconds 10)
expect_ok "an anonymous request's body trickled a byte every 0.5 s is cut too ($out)" \
    python3 -c 'import json, sys; t = json.loads(sys.argv[1])["closed_after_s"]; sys.exit(not (t and 1.5 <= t <= 5))' "$out"
expect_eq "an authenticated keep-alive connection outlives the header timeout" \
    '{"first": 200, "second": 200}' "$(python3 "$HOSTILE" keepalive --port "$SW_PORT" --token "$SW_TOKEN" --wait 3.5)"

# ---- finding 7: the smaller ones ----
CM=/api/v1/namespaces/default/configmaps
t0=$(date +%s)
expect_eq "Content-Length: 2147483648 is answered 413 from the header" 413 \
    "$(sw_api POST "$CM" -o /dev/null -w '%{http_code}' --max-time 20 -H 'Expect:' \
        -H 'Content-Type: application/json' -H 'Content-Length: 2147483648' --data-binary @/dev/null)"
expect_ok "... at once, not after a body that never comes" test $(($(date +%s) - t0)) -le 5
expect_eq "kind given as a JSON object: 400" 400 "$(sw_api POST "$CM" -o "$SW_TMP/out" -w '%{http_code}' \
    -H 'Content-Type: application/json' -d '{"apiVersion": "v1", "kind": {"a": 1}, "metadata": {"name": "k1"}}')"
expect_contains "... says why" "kind in the request body must be a string" "$(cat "$SW_TMP/out")"
expect_eq "labelSelector=%00: 400" 400 "$(sw_api GET "$CM?labelSelector=%00" -o /dev/null -w '%{http_code}')"
expect_match "duplicate JSON keys are taken with a Warning (fieldValidation Warn, the default)" \
    '^Warning: 299 - ".*duplicate' "$(sw_api POST "$CM" -o /dev/null -D - -H 'Content-Type: application/json' \
        -d '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"a": "1", "a": "2"}}' | tr -d '\r')"
expect_eq "... and the last value wins" 2 "$(sw_api GET "$CM/dup" | sw_json 'at("data.a")')"
expect_eq "a list with resourceVersion=abc: 400" 400 \
    "$(sw_api GET "$CM?resourceVersion=abc" -o /dev/null -w '%{http_code}')"
expect_eq "a list with resourceVersionMatch=Bogus: 400" 400 \
    "$(sw_api GET "$CM?resourceVersion=0&resourceVersionMatch=Bogus" -o /dev/null -w '%{http_code}')"
expect_eq "a watch from a revision far ahead: 504" 504 \
    "$(sw_api GET "$CM?watch=1&resourceVersion=99999999" -o "$SW_TMP/out" -w '%{http_code}' --max-time 15)"
expect_contains "... Too large resource version" "Too large resource version: 99999999" "$(cat "$SW_TMP/out")"

# ---- finding 5: the watch cache is bounded by bytes ----
python3 - "$SW_TMP/big-cm.json" <<'PY'
import json, sys
json.dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
           "data": {"v": "x" * 2900000}}, open(sys.argv[1], "w"))
PY
expect_eq "a 2.9 MB ConfigMap" 201 "$(sw_api POST /api/v1/namespaces/default/configmaps -o /dev/null \
    -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$SW_TMP/big-cm.json")"
rss() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$SW_PID/status"; }
before=$(rss)
for i in $(seq 60); do
    printf '[{"op": "add", "path": "/metadata/labels", "value": {"round": "r%d"}}]' "$i" >"$SW_TMP/p.json"
    c=$(sw_api PATCH /api/v1/namespaces/default/configmaps/big -o /dev/null -w '%{http_code}' \
        -H 'Content-Type: application/json-patch+json' --data-binary @"$SW_TMP/p.json")
    [ "$c" = 200 ] || fail "patch $i: $c"
done
after=$(rss)
echo "RSS before $before MB, after 60 updates of a 2.9 MB ConfigMap $after MB"
expect_ok "60 updates of a 2.9 MB ConfigMap: RSS grew by less than 200 MB ($before -> $after; unbounded: ~335)" \
    test $((after - before)) -lt 200
sw_stop_server

# ---- --log-format json: one object per line, requests with their fields, no secret ----
from=$(($(wc -l <"$SW_LOG") + 1))
sw_start_server --log-format json
expect_match "the webhook of the BuildConfig made above" '^20[01]$' "$(hook hooked "$HOOK_SECRET")"
expect_eq "a 404" 404 "$(sw_api GET "$CM/nothing-here" -o /dev/null -w '%{http_code}')"
# /metrics, parsed with the Prometheus client's own text parser, counts what was done
expect_eq "/metrics without a token: 401" 401 "$(curl -sk -o /dev/null -w '%{http_code}' "$SW_URL/metrics")"
sw_api GET /metrics >"$SW_TMP/m1" || fail "scrape /metrics"
for i in 1 2 3; do
    expect_eq "ConfigMap $i" 201 "$(sw_api POST /api/v1/namespaces/default/configmaps -o /dev/null -w '%{http_code}' \
        -H 'Content-Type: application/json' -d "{\"metadata\": {\"name\": \"metrics-$i\"}}")"
done
sw_api GET /api/v1/namespaces/default/configmaps/metrics-1 -o /dev/null
sw_api GET /api/v1/namespaces/default/configmaps/metrics-2 -o /dev/null
sw_api GET /api/v1/namespaces/default/configmaps/absent -o /dev/null
sw_api GET /api/v1/namespaces/default/configmaps -o /dev/null
sw_api GET /metrics >"$SW_TMP/m2" || fail "scrape /metrics"
curl -sk -o /dev/null -X FOOBAR "$SW_URL/metrics"
expect_not_contains "a client's made-up method mints no label value" 'verb="foobar"' "$(sw_api GET /metrics)"
expect_eq "the counters moved by what was done (prometheus_client's parser)" \
    "create/configmaps/201=3 get/configmaps/200=2 get/configmaps/404=1 list/configmaps/200>=1 get//200>=1" \
    "$(/usr/bin/python3 - "$SW_TMP/m1" "$SW_TMP/m2" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
def load(path):
    out, fams = {}, {}
    for fam in text_string_to_metric_families(open(path).read()):
        fams[fam.name] = fam
        for s in fam.samples:
            if s.name == "apiserver_request_total":
                k = "%s/%s/%s" % (s.labels["verb"], s.labels["resource"], s.labels["code"])
                out[k] = out.get(k, 0) + s.value
    return out, fams
a, _ = load(sys.argv[1])
b, fams = load(sys.argv[2])
# the garbage collector relists every resource now and then: lists count at least ours
d = lambda k: b.get(k, 0) - a.get(k, 0)
print("create/configmaps/201=%d get/configmaps/200=%d get/configmaps/404=%d "
      "list/configmaps/200>=%d get//200>=%d" % (
          d("create/configmaps/201"), d("get/configmaps/200"), d("get/configmaps/404"),
          min(d("list/configmaps/200"), 1), min(d("get//200"), 1)))
h = [s for s in fams["apiserver_request_duration_seconds"].samples
     if s.labels.get("verb") == "create" and s.labels.get("resource") == "configmaps"
     and s.name.endswith("_count")]
assert h and h[0].value >= 3, h
for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
             "apiserver_current_inflight_requests"):
    assert name in fams or name.replace("_total", "") in fams, name
PY
)"
sw_stop_server
tail -n "+$from" "$SW_LOG" >"$SW_TMP/json.log"
expect_ok "every line of the JSON log parses, with time, level and msg" python3 -c '
import json, sys
for n, line in enumerate(open(sys.argv[1]), 1):
    if line.startswith("server pid "):  # the test harness, not the server
        continue
    o = json.loads(line)
    assert {"time", "level", "msg"} <= set(o), (n, line)
' "$SW_TMP/json.log"
expect_eq "request lines carry verb, path, code, latency_ms and user" "GET 404 slipway-admin" \
    "$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        o = json.loads(line)
        if o.get("msg") == "request" and o["path"].endswith("/configmaps/nothing-here"):
            assert isinstance(o["latency_ms"], int)
            print(o["verb"], o["code"], o["user"])
' "$SW_TMP/json.log")"
expect_contains "the webhook line is there, redacted" 'webhooks/<redacted>/generic' "$(cat "$SW_TMP/json.log")"
expect_not_contains "... and the secret is not" "$HOOK_SECRET" "$(cat "$SW_TMP/json.log")"

# ---- finding 6: /readyz fails while the store refuses writes (etcd under a NOSPACE alarm) ----
sw_start_etcd
SW_STORE_FLAGS=(--store "etcd://$SW_ETCD_ENDPOINT")
sw_start_server
alarm() { curl -sS --max-time 5 -X POST -d "{\"action\": \"$1\", \"memberID\": \"0\", \"alarm\": \"NOSPACE\"}" \
    "http://$SW_ETCD_ENDPOINT/v3/maintenance/alarm" >/dev/null; }
readyz() { curl -sk --max-time 10 -o /dev/null -w '%{http_code}' "$SW_URL/readyz"; }
expect_eq "on etcd: ready" 200 "$(readyz)"
alarm ACTIVATE
expect_match "under the alarm a write fails" '^5' "$(sw_api POST "$CM" -o /dev/null -w '%{http_code}' \
    -H 'Content-Type: application/json' -d '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nospace"}}')"
not_ready() { [ "$(readyz)" = 500 ]; }
wait_for "/readyz turns 500 while etcd refuses writes" 10 not_ready
expect_contains "/readyz/store says so" "store failed" "$(curl -sk --max-time 10 "$SW_URL/readyz/store")"
alarm DEACTIVATE
ready() { [ "$(readyz)" = 200 ]; }
wait_for "/readyz is 200 again once the alarm is cleared" 10 ready
expect_eq "and writes are taken again" 201 "$(sw_api POST "$CM" -o /dev/null -w '%{http_code}' \
    -H 'Content-Type: application/json' -d '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nospace"}}')"
sw_finish
