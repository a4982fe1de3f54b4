#!/usr/bin/env bash
# test_deploymentconfigs.sh: DeploymentConfigs (issue 13) with every real party: `slipway
# server` with its import and deployment controllers, Debian's docker-registry notifying the
# server of pushes, skopeo/umoci building the images, kubectl and the slipway CLI. The seed's
# scenario again, with DeploymentConfigs instead of annotated Deployments, and the same
# answers: three streams (backend-redis, system-redis, system-mysql), each with a versioned tag
# and `latest` following it, and a config per stream with an ImageChange trigger on
# `<stream>:latest` and a ConfigChange trigger. Covers: the first version waits for its image
# and then comes once, in the digest form; a re-tag onto the same digest makes no version; a
# CVE re-push (notification) makes exactly one version of that config, cause ImageChange; an
# `external` tag at the same digest under another host name makes none; a template change
# makes one (config change); a paused config does nothing until resumed; a manual trigger
# waits for `rollout latest`; the ReplicationControllers (names, labels, annotations, owner,
# replicas, pruning past revisionHistoryLimit, removal with the config); `slipway rollout
# latest|history|undo|status|pause|resume`; instantiate and rollback errors; validation;
# `slipway set triggers dc/...`; kubectl's table.
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
SW_CONTROLLERS=1 sw_start_server --insecure-registry "$REG" --insecure-registry "$ALIAS" \
    --registry-notifications-token-file "$SW_TMP/notify.token" --scheduled-import-interval 3600
reg_start main "$PORT" --notify "$SW_URL/notifications/registry" "$TOKEN" --ca "$SW_DIR/tls.crt"
kc create namespace "$NS" >/dev/null || fail "create namespace $NS"

apply() { kc apply -n "$NS" -f - >/dev/null <<<"$1" || fail "kubectl apply: $1"; }
dcget() { kc get -n "$NS" dc "$1" -o jsonpath="{$2}"; }
image() { dcget "$1" '.spec.template.spec.containers[0].image'; }
version() { dcget "$1" '.status.latestVersion'; }
rcs() { kc get rc -n "$NS" -l "openshift.io/deployment-config.name=$1" -o name | sort | tr '\n' ' '; }
digest() { reg_digest "$REG/$1"; }
rollout() { "$SLIPWAY" rollout "$@" -n "$NS"; }

# dc NAME STREAM [AUTOMATIC] [PAUSED] [HISTORY]: a config with a container "redis" (no image:
# its trigger sets it) triggered on STREAM:latest, a sidecar, and a ConfigChange trigger.
dc()
{
    apply "apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: $1, labels: {team: ops}}
spec:
  replicas: 2
  paused: ${4:-false}
  revisionHistoryLimit: ${5:-10}
  triggers:
  - type: ImageChange
    imageChangeParams:
      automatic: ${3:-true}
      containerNames: [redis]
      from: {kind: ImageStreamTag, name: \"$2:latest\"}
  - type: ConfigChange
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers:
      - {name: redis, image: \"\"}
      - {name: sidecar, image: busybox}"
}

# ---- the images and streams ----

seed_images

dc backend backend-redis
dc system system-redis
dc db system-mysql
dc still backend-redis true true
dc manual backend-redis false
sleep 1
expect_eq "before its image resolves, no version" "0" "$(version backend)"
expect_eq "and no ReplicationController" "" "$(rcs backend)"
seed_streams

# ---- 1. the first version waits for its image, then comes once, in the digest form ----

wait_for "backend: version 1" 20 is_eq 1 version backend
wait_for "system: version 1" 20 is_eq 1 version system
wait_for "db: version 1" 20 is_eq 1 version db
expect_eq "backend runs its digest" "$REG/lib/backend-redis@$DB" "$(image backend)"
expect_eq "system runs its digest" "$REG/lib/system-redis@$DS" "$(image system)"
expect_eq "db runs its digest" "$REG/lib/mysql@$DM" "$(image db)"
expect_eq "lastTriggeredImage is the digest form" "$REG/lib/backend-redis@$DB" \
    "$(dcget backend '.spec.triggers[0].imageChangeParams.lastTriggeredImage')"
expect_eq "the first version's cause is the config" "ConfigChange config change" \
    "$(dcget backend '.status.details.causes[0].type') $(dcget backend '.status.details.message')"
wait_for "backend-1 is Complete" 20 is_eq Complete kc get rc -n "$NS" backend-1 \
    -o jsonpath='{.metadata.annotations.openshift\.io/deployment\.phase}'
RC=$(kc get rc -n "$NS" backend-1 -o json)
expect_eq "the ReplicationController as OpenShift makes it" \
    "backend 1 2 2 config change backend backend-1 backend-1 DeploymentConfig backend True ops $REG/lib/backend-redis@$DB" \
    "$(sw_json "' '.join(str(x) for x in [o['metadata']['annotations']['openshift.io/deployment-config.name'], o['metadata']['annotations']['openshift.io/deployment-config.latest-version'], o['metadata']['annotations']['kubectl.kubernetes.io/desired-replicas'], o['spec']['replicas'], o['metadata']['annotations']['openshift.io/deployment.status-reason'], o['spec']['selector']['deploymentconfig'], o['spec']['selector']['deployment'], o['spec']['template']['metadata']['labels']['deployment'], o['metadata']['ownerReferences'][0]['kind'], o['metadata']['ownerReferences'][0]['name'], o['metadata']['ownerReferences'][0]['controller'], o['metadata']['labels']['team'], o['spec']['template']['spec']['containers'][0]['image']])" <<<"$RC")"
expect_eq "it carries the config it was made from" "backend 1" \
    "$(sw_json "(lambda d: d['metadata']['name'] + ' ' + str(d['status']['latestVersion']))(json.loads(o['metadata']['annotations']['openshift.io/encoded-deployment-config']))" <<<"$RC")"
wait_for "backend reports its replicas ready" 10 is_eq "2 2 2" dcget backend '.status.replicas} {.status.updatedReplicas} {.status.availableReplicas'
expect_eq "a paused config makes no version" "0" "$(version still)"
expect_eq "a manual trigger makes no version" "0" "$(version manual)"
expect_eq "nor changes the image" "" "$(image manual)"
expect_ok "kubectl get dc" kc get dc -n "$NS" backend
expect_match "its table: revision, desired, current, triggers" \
    '^backend +1 +2 +2 +image\(backend-redis:latest\),config ' "$OUT"

# ---- 2. a re-tag onto the same digest makes no version ----

seed_retag
sleep 3
expect_eq "re-tagging the same digest: no new version" 1 "$(version backend)"

# ---- 3. a CVE fix re-pushed under 2.7 (notification): exactly one version of that config ----

reg_build_image sysredis2 amd64
reg_push sysredis2 "$REG/lib/system-redis:2.7"
DS2=$(digest lib/system-redis:2.7)
wait_for "system: version 2" 20 is_eq 2 version system
expect_eq "it runs the fixed image" "$REG/lib/system-redis@$DS2" "$(image system)"
expect_eq "the cause is the image" "ImageChange $REG/lib/system-redis@$DS2 image change" \
    "$(dcget system '.status.details.causes[0].type} {.status.details.causes[0].imageTrigger.from.name} {.status.details.message')"
wait_for "system-2 takes the replicas, system-1 none" 20 is_eq "0 2" \
    kc get rc -n "$NS" system-1 system-2 -o jsonpath='{.items[0].spec.replicas} {.items[1].spec.replicas}'
sleep 2
expect_eq "system: exactly one more version" 2 "$(version system)"
expect_eq "backend: untouched" 1 "$(version backend)"
expect_eq "db: untouched" 1 "$(version db)"

# ---- 4. the same through slipway import-image (system-mysql is not scheduled) ----

reg_build_image mysql2 amd64
reg_push mysql2 "$REG/lib/mysql:8.0"
DM2=$(digest lib/mysql:8.0)
sleep 2
expect_eq "an unscheduled tag is not re-imported by the notification" 1 "$(version db)"
expect_ok "slipway import-image system-mysql:8.0" "$SLIPWAY" import-image -n "$NS" system-mysql:8.0
wait_for "db: version 2 after import-image" 20 is_eq 2 version db
expect_eq "db runs the new image" "$REG/lib/mysql@$DM2" "$(image db)"

# ---- 5. an external tag at the same digest under another host name: nothing ----

seed_external "$DS2"
sleep 3
expect_eq "the same digest under another host name: no version" 2 "$(version system)"
expect_eq "the image stays as it was" "$REG/lib/system-redis@$DS2" "$(image system)"

# ---- 6. a template change: one version, config change ----

kc patch dc -n "$NS" backend --type=merge -p '{"spec":{"template":{"metadata":{"annotations":{"tier":"cache"}}}}}' >/dev/null ||
    fail "patch the template"
wait_for "backend: version 2 (config change)" 20 is_eq "2 config change" dcget backend '.status.latestVersion} {.status.details.message'
sleep 2
expect_eq "one version, not two" 2 "$(version backend)"
kc scale dc -n "$NS" backend --replicas=3 >/dev/null 2>&1 ||
    kc patch dc -n "$NS" backend --type=merge -p '{"spec":{"replicas":3}}' >/dev/null || fail "scale"
wait_for "scaling the config scales its latest ReplicationController" 20 is_eq 3 \
    kc get rc -n "$NS" backend-2 -o jsonpath='{.spec.replicas}'
expect_eq "scaling is no new version" 2 "$(version backend)"

# ---- 7. paused, manual, and slipway rollout ----

expect_ok "rollout resume dc/still" rollout resume dc/still
expect_contains "it says so" "deploymentconfig.apps.openshift.io/still resumed" "$OUT"
wait_for "resumed: still's first version" 20 is_eq 1 version still
expect_eq "with the image resolved on resume" "$REG/lib/backend-redis@$DB" "$(image still)"
expect_ok "rollout pause dc/still" rollout pause dc/still
expect_fails "rollout latest of a paused config" "cannot deploy a paused deployment config" rollout latest dc/still
expect_fails "rollout undo of a paused config" "cannot rollback a paused config; resume it first with 'rollout resume dc/still'" rollout undo dc/still
INST=/apis/apps.openshift.io/v1/namespaces/$NS/deploymentconfigs
code() { sw_api POST "$INST/$1/$2" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$3"; }
expect_eq "instantiate of a paused config: 422" 422 "$(code still instantiate '{"name":"still","latest":true,"force":true}')"
expect_contains "with OpenShift's message" 'deployment config \"still\" is paused - unpause to request a new deployment' \
    "$(sw_api POST "$INST/still/instantiate" -H 'Content-Type: application/json' -d '{"name":"still","latest":true}')"

expect_ok "rollout latest dc/manual" rollout latest dc/manual
expect_contains "it says so" "deploymentconfig.apps.openshift.io/manual rolled out" "$OUT"
expect_eq "a manual trigger resolves on rollout latest" "$REG/lib/backend-redis@$DB" "$(image manual)"
expect_eq "version 1, cause Manual" "1 Manual manual change" \
    "$(dcget manual '.status.latestVersion} {.status.details.causes[0].type} {.status.details.message')"
expect_ok "rollout status dc/manual" timeout 20 "$SLIPWAY" rollout status -n "$NS" dc/manual
expect_contains "it reports the rollout done" 'replication controller "manual-1" successfully rolled out' "$OUT"
expect_eq "instantiate with nothing to do: 204" 204 "$(code manual instantiate '{"name":"manual","latest":true}')"
expect_eq "and no version" 1 "$(version manual)"
expect_ok "rollout latest --again" rollout latest dc/manual --again
wait_for "manual: version 2" 10 is_eq 2 version manual
apply "apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: orphan}
spec:
  triggers:
  - type: ImageChange
    imageChangeParams: {automatic: true, containerNames: [app], from: {name: \"nowhere:latest\"}}
  template:
    metadata: {labels: {app: orphan}}
    spec: {containers: [{name: app, image: \"\"}]}"
expect_eq "instantiate with an unresolved image: 400" 400 "$(code orphan instantiate '{"name":"orphan","latest":true,"force":true}')"
expect_contains "with OpenShift's message" 'cannot trigger a deployment for \"orphan\" because it contains unresolved images' \
    "$(sw_api POST "$INST/orphan/instantiate" -H 'Content-Type: application/json' -d '{"name":"orphan","latest":true,"force":true}')"
expect_eq "defaults: from.kind, from.namespace, replicas 0" "ImageStreamTag $NS 0" \
    "$(dcget orphan '.spec.triggers[0].imageChangeParams.from.kind} {.spec.triggers[0].imageChangeParams.from.namespace} {.spec.replicas')"
expect_eq "rollback of an undeployed config: 422" 422 "$(code orphan rollback '{"name":"orphan","spec":{"includeTemplate":true}}')"
expect_contains "with OpenShift's message" "cannot rollback an undeployed config" \
    "$(sw_api POST "$INST/orphan/rollback" -H 'Content-Type: application/json' -d '{"name":"orphan","spec":{"includeTemplate":true}}')"
expect_contains "rollback of version 1: no previous deployment" 'no previous deployment exists for \"ops/still\"' \
    "$(sw_api POST "$INST/still/rollback" -H 'Content-Type: application/json' -d '{"name":"still","spec":{"includeTemplate":true}}')"
expect_contains "rollback to the latest version: refused" "version 2 is already the latest" \
    "$(sw_api POST "$INST/backend/rollback" -H 'Content-Type: application/json' -d '{"name":"backend","spec":{"revision":2,"includeTemplate":true}}')"
expect_eq "a DeploymentConfigRollback that is not an object: 400" 400 "$(code backend rollback '[1]')"

# rollback returns, saves nothing; rollout undo saves it
BACK=$(sw_api POST "$INST/backend/rollback" -H 'Content-Type: application/json' -d '{"name":"backend","spec":{"revision":1,"includeTemplate":true}}')
expect_eq "rollback returns version+1, the old template, manual triggers" "3 None False" \
    "$(sw_json "' '.join(str(x) for x in [o['status']['latestVersion'], (o['spec']['template']['metadata'].get('annotations') or {}).get('tier'), o['spec']['triggers'][0]['imageChangeParams']['automatic']])" <<<"$BACK")"
expect_eq "and saves nothing" "2 cache" "$(dcget backend '.status.latestVersion} {.spec.template.metadata.annotations.tier')"
expect_ok "rollout history dc/backend" rollout history dc/backend
expect_match "history: version 1" $'^1\t+Complete\tconfig change$' "$OUT"
expect_match "history: version 2" $'^2\t+Complete\tconfig change$' "$OUT"
expect_ok "rollout history --revision 1" rollout history dc/backend --revision 1
expect_contains "it shows the version's image" "Image:	$REG/lib/backend-redis@$DB" "$OUT"
expect_ok "rollout undo dc/backend" rollout undo dc/backend
expect_contains "it says so" "deploymentconfig.apps.openshift.io/backend rolled back" "$OUT"
expect_contains "and that the image triggers are now manual" "the image triggers were disabled: backend-redis:latest" "$OUT"
wait_for "undo makes version 3" 20 is_eq 3 version backend
sleep 2
expect_eq "exactly one version" 3 "$(version backend)"
expect_eq "with version 1's template" "" "$(dcget backend '.spec.template.metadata.annotations.tier')"
expect_eq "its trigger is manual now" false "$(dcget backend '.spec.triggers[0].imageChangeParams.automatic')"
expect_exit "rollout undo of a Deployment: use kubectl" 2 rollout undo deploy/backend
expect_contains "it says which tool" "kubectl rollout" "$OUT"
expect_exit "rollout with an unknown verb" 2 "$SLIPWAY" rollout bogus dc/x
expect_fails "rollout history of a missing config" "not found" rollout history dc/nope

# ---- 8. set triggers dc/... ----

expect_ok "set triggers dc/backend lists them" "$SLIPWAY" set triggers -n "$NS" dc/backend
expect_contains "the image trigger, manual" $'deploymentconfigs/backend\timage\tbackend-redis:latest (redis)\tfalse' "$OUT"
expect_contains "the config trigger" $'deploymentconfigs/backend\tconfig\t\ttrue' "$OUT"
expect_ok "set triggers --auto" "$SLIPWAY" set triggers -n "$NS" dc/backend --auto
expect_eq "the trigger is automatic again" true "$(dcget backend '.spec.triggers[0].imageChangeParams.automatic')"
expect_ok "set triggers --from-config --remove" "$SLIPWAY" set triggers -n "$NS" dc/backend --from-config --remove
expect_eq "only the image trigger is left" "ImageChange" "$(dcget backend '.spec.triggers[*].type')"
expect_ok "set triggers --from-image on another container" "$SLIPWAY" set triggers -n "$NS" dc/backend --from-image=system-mysql:latest -c sidecar
wait_for "the sidecar follows its tag" 20 is_eq "$REG/lib/mysql@$DM2" dcget backend '.spec.template.spec.containers[1].image'
wait_for "which is a new version (image change)" 20 is_eq "4 image change" dcget backend '.status.latestVersion} {.status.details.message'

# ---- 9. pruning, validation, deletion ----

dc short backend-redis true false 1
wait_for "short: version 1" 20 is_eq 1 version short
for n in 2 3 4; do
    kc patch dc -n "$NS" short --type=merge -p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"n\":\"$n\"}}}}}" >/dev/null
    wait_for "short: version $n" 20 is_eq "$n" version short
done
wait_for "revisionHistoryLimit 1 keeps one old version" 20 is_eq "replicationcontroller/short-3 replicationcontroller/short-4 " rcs short

bad() { kc apply -n "$NS" -f - 2>&1 <<<"$1"; }
base="apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: bad}
spec:
  template:
    metadata: {labels: {app: bad}}
    spec: {containers: [{name: app, image: \"\"}]}"
expect_contains "an untriggered container needs an image" "spec.template.spec.containers[0].image: Required value" "$(bad "$base")"
expect_contains "from.name must be stream:tag" 'must be of the form <stream_name>:<tag>' \
    "$(bad "$base
  triggers: [{type: ImageChange, imageChangeParams: {containerNames: [app], from: {name: nostream}}}]")"
expect_contains "containerNames are required" "spec.triggers[0].imageChangeParams.containerNames: Required value" \
    "$(bad "$base
  triggers: [{type: ImageChange, imageChangeParams: {from: {name: \"a:b\"}}}]")"
expect_contains "a containerName must name a container" '"nope": does not match any container' \
    "$(bad "$base
  triggers: [{type: ImageChange, imageChangeParams: {containerNames: [nope], from: {name: \"a:b\"}}}]")"
expect_contains "a trigger type is ConfigChange or ImageChange" 'spec.triggers[0].type: Unsupported value: "Sometimes"' \
    "$(bad "$base
  triggers: [{type: Sometimes}]")"
expect_contains "a selector must match the template" 'selector` does not match template `labels`' \
    "$(bad "$base
  selector: {app: other}
  triggers: [{type: ImageChange, imageChangeParams: {containerNames: [app], from: {name: \"a:b\"}}}]")"

kc delete dc -n "$NS" short >/dev/null || fail "delete dc/short"
wait_for "its ReplicationControllers go with it" 20 is_eq "" rcs short

echo "took $(($(date +%s) - START)) s"
sw_finish
