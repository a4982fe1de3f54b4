#!/usr/bin/env bash
# bench/crd.sh: custom resources against a built-in kind, in one run (issue 14's benchmark).
# 1. create and update (merge patch) rate of a custom resource with a realistic schema (30
#    fields, nested, enums, patterns, defaults) against an ImageStream of similar size, both
#    driven by ApacheBench (ab) with the same concurrency and keep-alive on one plain-HTTP
#    slipway server (--plain-http --insecure-anonymous);
# 2. time from a CRD's create to its resource in discovery (median of BENCH_CRDS creates);
# 3. `slipway server` start to ready with 100 CRDs installed, against the start of the Debian
#    etcd alone (what envtest waits for before a kube-apiserver even starts).
# Prints each figure, the ratio and the goal (1.3x, 100 ms, 100 ms). Knobs: BENCH_N (requests
# per rate figure, default 20000), BENCH_C (concurrency, default 8), BENCH_CRDS (default 20),
# BENCH_KEEP=1 keeps the temp dir. Not a test: see bench/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLIPWAY=${SLIPWAY:-$ROOT/build/slipway}
ETCD=${ETCD:-etcd}
N=${BENCH_N:-20000}
C=${BENCH_C:-8}
NCRDS=${BENCH_CRDS:-20}
TMP=$(mktemp -d /tmp/slipway-bench-crd.XXXXXX)
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    [[ ${BENCH_KEEP:-0} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

command -v ab >/dev/null || { echo "bench/crd.sh needs ab (apache2-utils)" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

start_slipway() { # DIR PORT: starts a plain-HTTP server, waits for /readyz; START_MS = ms to ready
    local dir=$1 port=$2 t0
    t0=$(now_ms)
    "$SLIPWAY" server --data-dir "$dir" --listen "127.0.0.1:$port" --plain-http \
        --insecure-anonymous --no-controllers >"$dir.log" 2>&1 &
    PIDS+=($!)
    until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
        kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$dir.log" >&2; exit 1; }
        sleep 0.002
    done
    START_MS=$(($(now_ms) - t0))
}

stop_last() { local p=${PIDS[-1]}; kill "$p"; wait "$p" 2>/dev/null || true; unset 'PIDS[-1]'; }

PORT=$(free_port)
URL=http://127.0.0.1:$PORT
start_slipway "$TMP/a" "$PORT"

# ---- the CRD: 30 fields, nested, enums, patterns, defaults ----
cat >"$TMP/crd.json" <<'EOF'
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"notebooks.bench.example.com"},
 "spec":{"group":"bench.example.com","scope":"Namespaced",
  "names":{"plural":"notebooks","singular":"notebook","kind":"Notebook"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","required":["image","owner"],"properties":{
     "image":{"type":"string","pattern":"^[a-z0-9./:@-]+$","maxLength":255},
     "owner":{"type":"string","pattern":"^[a-z][a-z0-9-]*$"},
     "displayName":{"type":"string","maxLength":63},
     "description":{"type":"string","maxLength":1024},
     "size":{"type":"string","enum":["S","M","L","XL"],"default":"M"},
     "replicas":{"type":"integer","minimum":0,"maximum":10,"default":1},
     "culling":{"type":"boolean","default":true},
     "idleMinutes":{"type":"integer","minimum":5,"default":60},
     "gpu":{"type":"object","properties":{
       "count":{"type":"integer","minimum":0,"maximum":8,"default":0},
       "vendor":{"type":"string","enum":["nvidia","amd","none"],"default":"none"}}},
     "resources":{"type":"object","properties":{
       "cpu":{"type":"string","pattern":"^[0-9]+m?$"},
       "memory":{"type":"string","pattern":"^[0-9]+(Mi|Gi)$"},
       "storage":{"type":"string","pattern":"^[0-9]+(Mi|Gi)$","default":"10Gi"}}},
     "env":{"type":"array","maxItems":64,"items":{"type":"object","required":["name"],
       "properties":{"name":{"type":"string","pattern":"^[A-Za-z_][A-Za-z0-9_]*$"},
                     "value":{"type":"string"}}}},
     "volumes":{"type":"array","items":{"type":"object","properties":{
       "name":{"type":"string"},"mountPath":{"type":"string","pattern":"^/"},
       "readOnly":{"type":"boolean","default":false}}}},
     "network":{"type":"object","properties":{
       "exposed":{"type":"boolean"},"port":{"type":"integer","minimum":1,"maximum":65535},
       "protocol":{"type":"string","enum":["HTTP","HTTPS"],"default":"HTTP"},
       "hostname":{"type":"string","format":"hostname"}}},
     "schedule":{"type":"object","properties":{
       "start":{"type":"string","format":"date-time"},
       "stopAfterHours":{"type":"integer","minimum":1}}},
     "labelsToCopy":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"},
     "tolerations":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}},
    "status":{"type":"object","properties":{"phase":{"type":"string"},
      "url":{"type":"string"}}}}}}}]}}
EOF
T0=$(now_ms)
curl -fs -X POST -H 'Content-Type: application/json' --data @"$TMP/crd.json" \
    "$URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
until curl -fs "$URL/apis/bench.example.com/v1" | grep -q '"notebooks"'; do sleep 0.001; done
FIRST_MS=$(($(now_ms) - T0))

cat >"$TMP/cr.json" <<'EOF'
{"apiVersion":"bench.example.com/v1","kind":"Notebook","metadata":{"generateName":"nb-",
 "labels":{"team":"data","tier":"dev"}},
 "spec":{"image":"quay.io/example/jupyter:2024.1","owner":"alice","displayName":"Alice's notebook",
  "description":"A notebook for the quarterly analysis","size":"L","replicas":1,"idleMinutes":90,
  "gpu":{"count":1,"vendor":"nvidia"},"resources":{"cpu":"2000m","memory":"8Gi"},
  "env":[{"name":"MODE","value":"lab"},{"name":"THEME","value":"dark"},{"name":"PIP_INDEX","value":"https://pypi.example.com"}],
  "volumes":[{"name":"data","mountPath":"/data"},{"name":"cache","mountPath":"/cache","readOnly":true}],
  "network":{"exposed":true,"port":8888,"protocol":"HTTPS","hostname":"alice.notebooks.example.com"},
  "schedule":{"start":"2026-12-01T09:00:00Z","stopAfterHours":8},
  "labelsToCopy":["team","tier"],"tolerations":[{"key":"gpu","operator":"Exists"}]}}
EOF
cat >"$TMP/is.json" <<'EOF'
{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"generateName":"is-",
 "labels":{"team":"data","tier":"dev"},"annotations":{"description":"A notebook image stream for the quarterly analysis"}},
 "spec":{"lookupPolicy":{"local":true},"tags":[
  {"name":"2024.1","annotations":{"owner":"alice","size":"L"},"from":{"kind":"DockerImage","name":"quay.io/example/jupyter:2024.1"},"importPolicy":{"scheduled":false,"insecure":false},"referencePolicy":{"type":"Source"}},
  {"name":"2024.2","annotations":{"owner":"alice","gpu":"nvidia"},"from":{"kind":"DockerImage","name":"quay.io/example/jupyter:2024.2"},"importPolicy":{"scheduled":false},"referencePolicy":{"type":"Local"}},
  {"name":"latest","from":{"kind":"ImageStreamTag","name":"2024.2"},"referencePolicy":{"type":"Source"}}]}}
EOF
echo '{"metadata":{"labels":{"bench":"x"}},"spec":{"replicas":2}}' >"$TMP/cr-patch.json"
echo '{"metadata":{"labels":{"bench":"x"}},"spec":{"lookupPolicy":{"local":false}}}' >"$TMP/is-patch.json"

rate() { # METHOD PATH BODY CTYPE: requests per second reported by ab
    local out
    local body=(-p "$3")
    [[ $1 == POST ]] || body=(-u "$3" -m "$1") # ab wants the method after the body flag
    out=$(ab -q -k -n "$N" -c "$C" -T "$4" "${body[@]}" "$URL$2" 2>&1) || { echo "$out" >&2; exit 1; }
    # generateName has 5 random characters: a few 409 AlreadyExists in thousands are expected
    local bad
    bad=$(awk '/^Non-2xx responses/ {print $3}' <<<"$out")
    if [[ -n $bad ]] && ((bad * 100 > N)); then echo "ab saw $bad errors on $1 $2:" >&2; echo "$out" >&2; exit 1; fi
    awk '/^Requests per second/ {print $4}' <<<"$out"
}
CR_CREATE=$(rate POST /apis/bench.example.com/v1/namespaces/default/notebooks "$TMP/cr.json" application/json)
IS_CREATE=$(rate POST /apis/image.openshift.io/v1/namespaces/default/imagestreams "$TMP/is.json" application/json)
CR_ONE=$(curl -fs "$URL/apis/bench.example.com/v1/namespaces/default/notebooks?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["metadata"]["name"])')
IS_ONE=$(curl -fs "$URL/apis/image.openshift.io/v1/namespaces/default/imagestreams?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["metadata"]["name"])')
CR_UPDATE=$(rate PATCH "/apis/bench.example.com/v1/namespaces/default/notebooks/$CR_ONE" "$TMP/cr-patch.json" application/merge-patch+json)
IS_UPDATE=$(rate PATCH "/apis/image.openshift.io/v1/namespaces/default/imagestreams/$IS_ONE" "$TMP/is-patch.json" application/merge-patch+json)

# ---- CRD create to discovery, median of NCRDS ----
TIMES=()
for i in $(seq 1 "$NCRDS"); do
    sed "s/notebooks/nbs$i/g; s/\"Notebook\"/\"Nb$i\"/; s/\"notebook\"/\"nb$i\"/" "$TMP/crd.json" >"$TMP/crd$i.json"
    t0=$(now_ms)
    curl -fs -X POST -H 'Content-Type: application/json' --data @"$TMP/crd$i.json" \
        "$URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
    until curl -fs "$URL/apis/bench.example.com/v1" | grep -q "\"nbs$i\""; do sleep 0.001; done
    TIMES+=($(($(now_ms) - t0)))
done
MEDIAN=$(printf '%s\n' "${TIMES[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
stop_last

# ---- start to ready with 100 CRDs installed, against etcd alone ----
PORT2=$(free_port)
start_slipway "$TMP/b" "$PORT2"
for i in $(seq 1 100); do
    sed "s/notebooks/many$i/g; s/\"Notebook\"/\"Many$i\"/; s/\"notebook\"/\"many$i\"/" "$TMP/crd.json" |
        curl -fs -X POST -H 'Content-Type: application/json' --data @- \
            "http://127.0.0.1:$PORT2/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
done
stop_last
start_slipway "$TMP/b" "$PORT2"
START_100=$START_MS
curl -fs "http://127.0.0.1:$PORT2/apis/bench.example.com/v1" | grep -q '"many100"' ||
    { echo "the 100 CRDs are not served after the restart" >&2; exit 1; }
stop_last
EPORT=$(free_port)
T0=$(now_ms)
"$ETCD" --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
    --advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$(free_port)" \
    >"$TMP/etcd.log" 2>&1 &
PIDS+=($!)
until curl -fs "http://127.0.0.1:$EPORT/health" 2>/dev/null | grep -q true; do sleep 0.002; done
ETCD_MS=$(($(now_ms) - T0))
stop_last

ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
printf '\n%-46s %12s %12s %8s %s\n' "figure" "slipway CR" "built-in" "ratio" "goal"
printf '%-46s %12s %12s %8s %s\n' "create/s (30-field CR vs ImageStream)" "$CR_CREATE" "$IS_CREATE" "$(ratio "$IS_CREATE" "$CR_CREATE")x" "<= 1.3x slower"
printf '%-46s %12s %12s %8s %s\n' "update/s (merge patch)" "$CR_UPDATE" "$IS_UPDATE" "$(ratio "$IS_UPDATE" "$CR_UPDATE")x" "<= 1.3x slower"
printf '%-46s %12s %12s %8s %s\n' "CRD create to discovery (first, median ms)" "$FIRST_MS" "$MEDIAN" "" "< 100 ms"
printf '%-46s %12s %12s %8s %s\n' "start to ready, 100 CRDs vs etcd alone (ms)" "$START_100" "$ETCD_MS" "$(ratio "$START_100" "$ETCD_MS")x" "< 100 ms"
echo "(n=$N requests per rate, c=$C, ab keep-alive over plain HTTP; ratio = built-in/CR rate)"
