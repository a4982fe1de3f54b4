#!/usr/bin/env bash
# test_metrics.sh: /metrics beyond the request counters (issue 17), parsed with Debian's
# python3-prometheus-client after a known workload: store writes (a latency histogram by
# operation and result), compactions and the compacted revision, the SQLite WAL size, image
# imports per registry and result with their latency, builds by final phase with their
# durations, and client-go's work-queue metrics per controller. Also: /metrics needs `get` on
# the URL (a ServiceAccount token without system:monitoring gets 403).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$SW_TESTS/lib/registry.sh"

sw_with_registry
read -r P_OPEN <<<"$(reg_free_ports 1)" || fail "no free port"
OPEN=127.0.0.1:$P_OPEN
reg_start open "$P_OPEN"
reg_push_new m1 amd64 "$OPEN/demo/metrics:v1"

SW_CONTROLLERS=1 sw_start_server --image-registry "$OPEN" --insecure-registry "$OPEN" \
    --compact-interval 1 --compact-keep 5
scrape() { sw_api GET /metrics >"$1" || fail "scrape /metrics"; }
scrape "$SW_TMP/m1"

for i in 1 2 3 4 5; do
    expect_eq "ConfigMap $i" 201 "$(sw_api POST /api/v1/namespaces/default/configmaps -o /dev/null \
        -w '%{http_code}' -H 'Content-Type: application/json' -d "{\"metadata\":{\"name\":\"m-$i\"}}")"
done
expect_eq "a create that exists: 409" 409 "$(sw_api POST /api/v1/namespaces/default/configmaps \
    -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"metadata":{"name":"m-1"}}')"
expect_ok "a namespace (the namespace controller's queue)" kc create namespace metrics-ns
wait_for "  its default ServiceAccount" 20 kc get serviceaccount default -n metrics-ns
expect_ok "import a tag that exists" "$SLIPWAY" import-image demo:v1 --from="$OPEN/demo/metrics:v1" \
    --confirm --insecure
expect_fails "import a tag that does not" "" "$SLIPWAY" import-image demo:v2 \
    --from="$OPEN/demo/metrics:nope" --confirm --insecure
expect_ok "a build that completes (FROM scratch)" "$SLIPWAY" new-build --name=ok \
    --dockerfile=$'FROM scratch\nLABEL a=b'
expect_ok "  start-build --wait" "$SLIPWAY" start-build ok --wait
expect_ok "a build that fails (RUN)" "$SLIPWAY" new-build --name=bad \
    --dockerfile=$'FROM scratch\nRUN true'
expect_fails "  start-build --wait fails" "" "$SLIPWAY" start-build bad --wait
wait_for "a compaction ran" 20 bash -c \
    "curl -sk -H 'Authorization: Bearer $SW_TOKEN' '$SW_URL/metrics' | grep -q '^slipway_store_compactions_total{result=\"ok\"} [1-9]'"
scrape "$SW_TMP/m2"

expect_eq "the figures moved by what was done (prometheus_client's parser)" \
    "creates>=5 conflicts>=1 compactions>=1 compacted>=1 wal>=1 imported>=1 failed>=1 import_timed>=2 complete>=1 failed_build>=1 build_timed>=2 ns_adds>=1 ns_work>=1" \
    "$(/usr/bin/python3 - "$SW_TMP/m1" "$SW_TMP/m2" "$OPEN" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
def load(path):
    out = {}
    for fam in text_string_to_metric_families(open(path).read()):
        for s in fam.samples:
            key = (s.name,) + tuple(sorted(s.labels.items()))
            out[key] = s.value
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
reg = sys.argv[3]
def v(d, metric, **labels):
    return d.get((metric,) + tuple(sorted(labels.items())), 0)
def d(metric, **labels):
    return v(b, metric, **labels) - v(a, metric, **labels)
def sum_over(metric, **want):
    return sum(val for k, val in b.items() if k[0] == metric and all(
        (lk, lv) in k[1:] for lk, lv in want.items()))
creates = d("slipway_store_write_duration_seconds_count", operation="create", result="ok")
conflicts = d("slipway_store_write_duration_seconds_count", operation="create", result="conflict")
# histogram buckets are cumulative: the +Inf bucket equals the count
assert v(b, "slipway_store_write_duration_seconds_bucket", operation="create", result="ok",
         le="+Inf") == v(b, "slipway_store_write_duration_seconds_count", operation="create",
                         result="ok")
ge = lambda x, n: ">=%d" % n if x >= n else "=%g" % x
imported = d("slipway_image_imports_total", registry=reg, result="imported")
failed = d("slipway_image_imports_total", registry=reg, result="failed")
complete = sum_over("slipway_builds_finished_total", phase="Complete")
failed_build = sum_over("slipway_builds_finished_total", phase="Failed", reason="DockerBuildFailed")
# new-build starts a build of its own (ConfigChange) and the import controller imports the
# spec tags import-image wrote, maybe during the scrape itself: other actors add to these, so
# each counts at least what the test did
print("creates%s conflicts%s compactions%s compacted%s wal%s imported%s failed%s "
      "import_timed%s complete%s failed_build%s build_timed%s ns_adds%s ns_work%s" % (
    ge(creates, 5), ge(conflicts, 1),
    ge(sum_over("slipway_store_compactions_total", result="ok"), 1),
    ge(v(b, "slipway_store_compacted_revision"), 1),
    ge(v(b, "slipway_store_wal_bytes"), 1),
    ge(imported, 1), ge(failed, 1),
    ge(d("slipway_image_import_duration_seconds_count", registry=reg), 2),
    ge(complete, 1), ge(failed_build, 1),
    ge(sum_over("slipway_build_duration_seconds_count", phase="Complete") +
       sum_over("slipway_build_duration_seconds_count", phase="Failed"), 2),
    ge(d("workqueue_adds_total", name="namespace-controller"), 1),
    ge(d("workqueue_work_duration_seconds_count", name="namespace-controller"), 1)))
PY
)"

# watches: one more registered watcher while ours runs, one fewer after; its events counted
watchers() {
    sw_api GET /metrics | awk '$1 == "apiserver_registered_watchers{group=\"\",version=\"v1\",kind=\"Secret\"}" {print $2}'
}
events() {
    sw_api GET /metrics | awk '$1 == "apiserver_watch_events_total{group=\"\",version=\"v1\",kind=\"Secret\"}" {print $2}'
}
W0=$(watchers)
E0=$(events)
curl -sSkN -H "Authorization: Bearer $SW_TOKEN" \
    "$SW_URL/api/v1/namespaces/default/secrets?watch=1&resourceVersion=0" >"$SW_TMP/watch.out" &
WATCH_PID=$!
wait_for "our watch is registered" 10 is_eq "$((${W0:-0} + 1))" watchers
expect_ok "a Secret for it" kc create secret generic w1 --from-literal=a=b
wait_for "  the watch got it" 10 grep -q '"name":"w1"' "$SW_TMP/watch.out"
expect_eq "  events sent to Secret watchers grew" 1 "$(( $(events) > ${E0:-0} ))"
kill "$WATCH_PID"
wait "$WATCH_PID" 2>/dev/null
# a server learns that a watcher left when a write to it fails (as kube-apiserver does): each
# try makes another event
POKE=0
poked_watchers() {
    POKE=$((POKE + 1))
    kubectl create secret generic "poke-$POKE" --from-literal=a=b >/dev/null 2>&1
    is_eq "${W0:-0}" watchers
}
wait_for "  the ended watch is no longer counted" 20 poked_watchers

expect_ok "a ServiceAccount" kc create serviceaccount watcher
expect_ok "  its token" kc create token watcher
TOKEN=$OUT
expect_eq "/metrics without system:monitoring: 403" 403 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $TOKEN" "$SW_URL/metrics")"
expect_ok "bind system:monitoring" kc create clusterrolebinding watcher-metrics \
    --clusterrole=system:monitoring --serviceaccount=default:watcher
expect_eq "  then 200" 200 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $TOKEN" "$SW_URL/metrics")"
sw_finish
