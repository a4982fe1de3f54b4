#!/usr/bin/env bash
# test_triggers.sh: image-change triggers on workloads (issue 13, the seed's scenario) with
# every real party: `slipway server` with its import and image trigger controllers, Debian's
# docker-registry notifying the server of pushes, skopeo/umoci building the images, kubectl and
# `slipway import-image`. Three streams (backend-redis, system-redis, system-mysql), each with a
# versioned tag and `latest` following it, and a Deployment per stream triggered on
# `<stream>:latest`. Covers: the first import rolls each out once, to the digest form; a
# re-tag onto the same digest rolls out nothing; a CVE re-push under the versioned tag (picked
# up by the notification) rolls out exactly that workload once; the same through `slipway
# import-image`; an `external` tag at the same digest under another host name rolls out
# nothing (OpenShift would); a paused trigger does nothing; a malformed annotation gives one
# Warning Event and no change; a manual `kubectl set image` is put back; StatefulSet,
# DaemonSet, CronJob and Pod triggers resolve; a strategic merge patch keeps the trigger's
# image; lookupPolicy.local resolves short names in Pods and annotated Deployments; each rollout
# reaches a webhook receiver once, signed, also when the receiver was down for a while.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"
# shellcheck source=seed.sh
. "$SW_TESTS/e2e/seed.sh"

START=$(date +%s)
sw_with_registry
NS=ops

read -r PORT < <(reg_free_ports 1)
REG=127.0.0.1:$PORT
ALIAS=localhost:$PORT # the same registry under another host name
TOKEN=notify-$RANDOM$RANDOM$RANDOM$RANDOM
echo "$TOKEN" >"$SW_TMP/notify.token"
# the rollout webhook receiver (tools/hookrecv.py checks each record's signature)
HOOK_KEY=hook-$RANDOM$RANDOM$RANDOM
HOOK_LOG=$SW_TMP/hook.jsonl
touch "$HOOK_LOG"
reg_start_tool hook "$SW_TESTS/e2e/tools/hookrecv.py" --key "$HOOK_KEY" --log "$HOOK_LOG"
HOOK_PORT=${REG_TOOL_PORT[hook]}
SW_CONTROLLERS=1 sw_start_server --insecure-registry "$REG" --insecure-registry "$ALIAS" \
    --registry-notifications-token-file "$SW_TMP/notify.token" --scheduled-import-interval 3600 \
    --rollout-webhook-secret "$NS/rollout-hook"
reg_start main "$PORT" --notify "$SW_URL/notifications/registry" "$TOKEN" --ca "$SW_DIR/tls.crt"
kc create namespace "$NS" >/dev/null || fail "create namespace $NS"
kc create secret generic -n "$NS" rollout-hook --from-literal=url="http://127.0.0.1:$HOOK_PORT/hook" \
    --from-literal=secret="$HOOK_KEY" >/dev/null || fail "create the webhook secret"
# hooked NAME IMAGE: how many records say NAME was rolled out to IMAGE
hooked() { sw_json "len([1 for l in open('$HOOK_LOG') for r in [__import__('json').loads(l)['record']] if r['object']['name'] == '$1' and r['newImage'] == '$2'])" </dev/null; }

apply() { kc apply -n "$NS" -f - >/dev/null <<<"$1" || fail "kubectl apply: $1"; }
# image KIND NAME [PATH]: the first container's image.
image()
{
    local path=${3:-.spec.template.spec.containers[0].image}
    kc get -n "$NS" "$1" "$2" -o jsonpath="{$path}"
}
gen() { kc get -n "$NS" "$1" "$2" -o jsonpath='{.metadata.generation}'; }
digest() { reg_digest "$REG/$1"; }

# deploy NAME STREAM [PAUSED]: a Deployment with one container "redis" triggered on STREAM:latest.
deploy()
{
    apply "apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  annotations:
    image.openshift.io/triggers: '[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"$2:latest\"},\"fieldPath\":\"spec.template.spec.containers[?(@.name==\\\"redis\\\")].image\"${3:+,\"paused\":true}}]'
spec:
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers:
      - {name: redis, image: \"placeholder:1\"}
      - {name: sidecar, image: busybox}"
}

# ---- the images and streams ----

seed_images

deploy backend backend-redis
deploy system system-redis
deploy db system-mysql
deploy still backend-redis paused
seed_streams

# ---- 1. the first import rolls each out once, to the digest form ----

wait_for "backend rolls out to its digest" 20 is_eq "$REG/lib/backend-redis@$DB" image deploy backend
wait_for "system rolls out to its digest" 20 is_eq "$REG/lib/system-redis@$DS" image deploy system
wait_for "db rolls out to its digest" 20 is_eq "$REG/lib/mysql@$DM" image deploy db
sleep 2
for d in backend system db; do
    expect_eq "$d: rolled out once (generation 2)" 2 "$(gen deploy $d)"
done
expect_eq "the sidecar is left alone" busybox "$(image deploy backend '.spec.template.spec.containers[1].image')"
expect_eq "a paused trigger does nothing" "placeholder:1" "$(image deploy still)"

wait_for "a signed rollout record per Deployment" 10 is_eq 1 hooked db "$REG/lib/mysql@$DM"
expect_eq "backend's record" 1 "$(hooked backend "$REG/lib/backend-redis@$DB")"
expect_eq "system's record" 1 "$(hooked system "$REG/lib/system-redis@$DS")"
expect_eq "the record's fields" "Deployment apps/v1 $NS redis placeholder:1 ImageStreamTag system-redis:latest" \
    "$(sw_json "[' '.join([r['object']['kind'], r['object']['apiVersion'], r['object']['namespace'], r['container'], r['oldImage'], r['from']['kind'], r['from']['name']]) for l in open('$HOOK_LOG') for r in [__import__('json').loads(l)['record']] if r['object']['name'] == 'system'][0]" </dev/null)"

# ---- 2. a re-tag onto the same digest rolls out nothing ----

seed_retag
sleep 3
expect_eq "re-tagging the same digest: no rollout" 2 "$(gen deploy backend)"

# ---- 3. a CVE fix re-pushed under 2.7 (notification) rolls out exactly that workload ----
# (the webhook receiver is down meanwhile: the record waits and comes once it is back)

reg_stop hook
reg_build_image sysredis2 amd64
reg_push sysredis2 "$REG/lib/system-redis:2.7"
DS2=$(digest lib/system-redis:2.7)
wait_for "system rolls out to the fixed image" 20 is_eq "$REG/lib/system-redis@$DS2" image deploy system
sleep 2
expect_eq "system: exactly one more rollout" 3 "$(gen deploy system)"
expect_eq "backend: untouched" 2 "$(gen deploy backend)"
expect_eq "db: untouched" 2 "$(gen deploy db)"
sleep 2
expect_eq "the receiver is down: nothing delivered yet" 0 "$(hooked system "$REG/lib/system-redis@$DS2")"
reg_start_tool hook "$SW_TESTS/e2e/tools/hookrecv.py" --port "$HOOK_PORT" --key "$HOOK_KEY" --log "$HOOK_LOG"
wait_for "the record arrives once the receiver is back" 20 is_eq 1 hooked system "$REG/lib/system-redis@$DS2"
sleep 2
expect_eq "each rollout delivered once" 4 "$(wc -l <"$HOOK_LOG")"

# ---- 4. the same through slipway import-image (system-mysql is not scheduled) ----

reg_build_image mysql2 amd64
reg_push mysql2 "$REG/lib/mysql:8.0"
DM2=$(digest lib/mysql:8.0)
sleep 2
expect_eq "an unscheduled tag is not re-imported by the notification" 2 "$(gen deploy db)"
expect_ok "slipway import-image system-mysql:8.0" "$SLIPWAY" import-image -n "$NS" system-mysql:8.0
wait_for "db rolls out after import-image" 20 is_eq "$REG/lib/mysql@$DM2" image deploy db
sleep 1
expect_eq "db: exactly one more rollout" 3 "$(gen deploy db)"

# ---- 5. an external tag at the same digest under another host name: nothing ----

seed_external "$DS2"
sleep 3
expect_eq "the same digest under another host name: no rollout" 3 "$(gen deploy system)"
expect_eq "the image stays as it was" "$REG/lib/system-redis@$DS2" "$(image deploy system)"

# ---- 6. a manual edit is put back; a strategic merge patch keeps the trigger's image ----

kc set image -n "$NS" deploy/system redis=redis:9 >/dev/null || fail "kubectl set image"
# put back as the tag shows it now: latest follows the external tag, so the alias's name
wait_for "a manual image edit is put back" 10 is_eq "$ALIAS/lib/system-redis@$DS2" image deploy system
kc patch -n "$NS" deploy/system -p '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","env":[{"name":"X","value":"1"}]}]}}}}' >/dev/null ||
    fail "strategic merge patch"
expect_eq "the patch merged by container name, the image kept" "$ALIAS/lib/system-redis@$DS2|X" \
    "$(kc get -n "$NS" deploy/system -o jsonpath='{.spec.template.spec.containers[0].image}|{.spec.template.spec.containers[1].env[0].name}')"

# ---- 7. a malformed annotation: one Warning Event, no change ----

apply "apiVersion: apps/v1
kind: Deployment
metadata:
  name: broken
  annotations:
    image.openshift.io/triggers: '[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"backend-redis:latest\"},\"fieldPath\":\"spec.template.spec.containers[?(@.name==\\\"redis\\\")].image\",\"paused\":\"true\"}]'
spec:
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec:
      containers: [{name: redis, image: \"placeholder:1\"}]"
warnings() { kc get events -n "$NS" -o json | sw_json 'len([e for e in o["items"] if e["involvedObject"]["name"] == "broken" and e["reason"] == "InvalidImageTrigger"])'; }
wait_for "a Warning Event InvalidImageTrigger" 10 is_eq 1 warnings
kc label -n "$NS" deploy/broken touched=yes >/dev/null
sleep 2
expect_eq "the same problem is reported once" 1 "$(warnings)"
expect_contains "the event says what is wrong" "paused must be a boolean" \
    "$(kc get events -n "$NS" -o json | sw_json '" ".join(e["message"] for e in o["items"] if e["involvedObject"]["name"] == "broken")')"
expect_eq "no change to the broken one" "placeholder:1" "$(image deploy broken)"

# two triggers on one container (by index and by name): refused, nothing written back and forth
apply "apiVersion: apps/v1
kind: Deployment
metadata:
  name: twice
  annotations:
    image.openshift.io/triggers: '[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"backend-redis:latest\"},\"fieldPath\":\"spec.template.spec.containers[0].image\"},{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"system-mysql:latest\"},\"fieldPath\":\"spec.template.spec.containers[?(@.name==\\\"redis\\\")].image\"}]'
spec:
  selector: {matchLabels: {app: twice}}
  template:
    metadata: {labels: {app: twice}}
    spec: {containers: [{name: redis, image: \"placeholder:1\"}]}"
twice_warnings() { kc get events -n "$NS" -o json | sw_json 'len([e for e in o["items"] if e["involvedObject"]["name"] == "twice" and "update the same container" in e["message"]])'; }
wait_for "two triggers on one container: a Warning Event" 10 is_eq 1 twice_warnings
expect_eq "and no write" "placeholder:1" "$(image deploy twice)"
kc annotate -n "$NS" deploy/twice image.openshift.io/triggers='not json' --overwrite >/dev/null
expect_fails "set triggers never overwrites an annotation it cannot read" "is not a JSON array of triggers" \
    "$SLIPWAY" set triggers -n "$NS" deploy/twice --manual
expect_eq "the annotation is left as it was" "not json" \
    "$(kc get -n "$NS" deploy/twice -o jsonpath='{.metadata.annotations.image\.openshift\.io/triggers}')"

# ---- 8. other kinds: StatefulSet, DaemonSet, CronJob, Pod ----

ann="image.openshift.io/triggers: '[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"system-mysql:latest\"},\"fieldPath\":\"PATH.containers[0].image\"}]'"
apply "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts, annotations: {${ann/PATH/spec.template.spec}}}
spec:
  selector: {matchLabels: {app: sts}}
  serviceName: sts
  template:
    metadata: {labels: {app: sts}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, annotations: {${ann/PATH/spec.template.spec}}}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj, annotations: {${ann/PATH/spec.jobTemplate.spec.template.spec}}}
spec:
  schedule: '@hourly'
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: Never, containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pod, annotations: {${ann/PATH/spec}}}
spec: {containers: [{name: c, image: x}]}"
want="$REG/lib/mysql@$DM2"
wait_for "a StatefulSet trigger resolves" 10 is_eq "$want" image sts sts
wait_for "a DaemonSet trigger resolves" 10 is_eq "$want" image ds ds
wait_for "a CronJob trigger resolves" 10 is_eq "$want" image cronjob cj '.spec.jobTemplate.spec.template.spec.containers[0].image'
wait_for "a Pod trigger resolves" 10 is_eq "$want" image pod pod '.spec.containers[0].image'

# ---- 9. lookupPolicy.local resolves short names, as OpenShift's admission does ----

kc patch is -n "$NS" system-mysql --type merge -p '{"spec":{"lookupPolicy":{"local":true}}}' >/dev/null ||
    fail "turn on local lookup"
apply "apiVersion: v1
kind: Pod
metadata: {name: local-pod}
spec:
  containers:
  - {name: a, image: \"system-mysql:8.0\"}
  - {name: b, image: \"backend-redis:2.7\"}
  - {name: c, image: \"nothere:1\"}
  initContainers:
  - {name: i, image: system-mysql}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: local-deploy
  annotations: {alpha.image.policy.openshift.io/resolve-names: '*'}
spec:
  selector: {matchLabels: {app: local}}
  template:
    metadata: {labels: {app: local}}
    spec: {containers: [{name: a, image: \"system-mysql:8.0\"}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: plain-deploy}
spec:
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec: {containers: [{name: a, image: \"system-mysql:8.0\"}]}"
expect_eq "a Pod's short name resolves through a local-lookup stream" "$want" \
    "$(image pod local-pod '.spec.containers[0].image')"
expect_eq "a bare name means :latest" "$want" "$(image pod local-pod '.spec.initContainers[0].image')"
expect_eq "a stream without local lookup: left as written" "backend-redis:2.7" \
    "$(image pod local-pod '.spec.containers[1].image')"
expect_eq "no such stream: left as written" "nothere:1" "$(image pod local-pod '.spec.containers[2].image')"
expect_eq "a Deployment with resolve-names resolves" "$want" "$(image deploy local-deploy)"
expect_eq "a Deployment without it does not" "system-mysql:8.0" "$(image deploy plain-deploy)"
k_set() { kc set image -n "$NS" deploy/local-deploy a=system-mysql:latest >/dev/null; }
k_set || fail "set image to a short name"
expect_eq "an update resolves too" "$want" "$(image deploy local-deploy)"

# ---- 10. slipway set triggers ----

apply "apiVersion: apps/v1
kind: Deployment
metadata: {name: cli}
spec:
  selector: {matchLabels: {app: cli}}
  template:
    metadata: {labels: {app: cli}}
    spec: {containers: [{name: app, image: x}, {name: side, image: busybox}]}"
expect_fails "two containers and no -c: refused" "name the ones the trigger updates" \
    "$SLIPWAY" set triggers -n "$NS" deploy/cli --from-image=system-mysql:latest
expect_fails "an unknown container: refused" 'no container named "nope"' \
    "$SLIPWAY" set triggers -n "$NS" deploy/cli --from-image=system-mysql:latest -c nope
expect_exit "a kind without triggers: usage error" 1 "$SLIPWAY" set triggers -n "$NS" bc/x --from-image=a:b
expect_exit "--remove without --from-image: usage error" 2 "$SLIPWAY" set triggers -n "$NS" deploy/cli --remove
expect_ok "set triggers --from-image -c app" "$SLIPWAY" set triggers -n "$NS" deploy/cli --from-image=system-mysql:latest -c app
expect_contains "it says so" "deployment.apps/cli triggers updated" "$OUT"
wait_for "the new trigger rolls the container out" 10 is_eq "$want" image deploy cli
expect_ok "list the triggers" "$SLIPWAY" set triggers -n "$NS" deploy/cli
expect_contains "the listing names the tag and container" "system-mysql:latest (app)	true" "$OUT"
expect_ok "set triggers --manual" "$SLIPWAY" set triggers -n "$NS" deploy/cli --manual
expect_ok "list again" "$SLIPWAY" set triggers -n "$NS" deploy/cli
expect_contains "the trigger is paused" "system-mysql:latest (app)	false" "$OUT"
expect_ok "set triggers --remove" "$SLIPWAY" set triggers -n "$NS" deploy/cli --from-image=system-mysql:latest -c app --remove
expect_eq "the annotation is gone" "" "$(kc get -n "$NS" deploy/cli -o jsonpath='{.metadata.annotations.image\.openshift\.io/triggers}')"

echo "took $(($(date +%s) - START)) s"
sw_finish
