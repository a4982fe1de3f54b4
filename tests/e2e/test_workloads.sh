#!/usr/bin/env bash
# test_workloads.sh: the workload kinds with kubectl (issue 13 parts 1 and 2): apply, patch
# (strategic merge: containers added, removed, reordered, env dropped), validation 422s, the
# standalone rollout (a ReplicaSet per template, revision annotations, status as if every pod
# were ready) and every `kubectl rollout` verb against it: status, history with change causes,
# undo (to the previous and to a given revision), restart, pause and resume with kubectl's own
# refusals; history pruning at revisionHistoryLimit; deleting a Deployment collects its
# ReplicaSets; the other kinds (StatefulSet, DaemonSet, Job, CronJob, Pod, ReplicationController)
# are stored with their defaults and columns.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

sw_start_server --controllers=garbagecollector,namespace,deployment
NS=apps
kc create namespace "$NS" >/dev/null || fail "create namespace"
k() { kc -n "$NS" "$@"; }
apply() { k apply -f - >/dev/null <<<"$1" || fail "kubectl apply: $1"; }
jp() { k get "$1" -o jsonpath="$2"; }

DEPLOY='apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  revisionHistoryLimit: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: "nginx:1.25"
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80}]'

# ---- apply, defaults, status ----

apply "$DEPLOY"
expect_ok "rollout status of a new Deployment" timeout 20 kubectl -n "$NS" rollout status deploy/web
expect_contains "it rolled out" 'deployment "web" successfully rolled out' "$OUT"
expect_eq "defaults: strategy, progress deadline, pull policy, protocol" \
    "RollingUpdate 25% 600 IfNotPresent TCP" \
    "$(jp deploy/web '{.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge} {.spec.progressDeadlineSeconds} {.spec.template.spec.containers[0].imagePullPolicy} {.spec.template.spec.containers[0].ports[0].protocol}')"
expect_eq "status as if every pod were ready" "3 3 3 3" \
    "$(jp deploy/web '{.status.replicas} {.status.updatedReplicas} {.status.readyReplicas} {.status.availableReplicas}')"
expect_eq "conditions" "Available=True/MinimumReplicasAvailable Progressing=True/NewReplicaSetAvailable " \
    "$(jp deploy/web '{range .status.conditions[*]}{.type}={.status}/{.reason}{" "}{end}')"
RS1=$(k get rs -l app=web -o jsonpath='{.items[0].metadata.name}')
expect_match "one ReplicaSet <name>-<hash>" '^web-[bcdfghjklmnpqrstvwxz2456789]+$' "$RS1"
expect_eq "its revision, replicas and owner" "1 3 Deployment true" \
    "$(jp "rs/$RS1" '{.metadata.annotations.deployment\.kubernetes\.io/revision} {.spec.replicas} {.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].controller}')"
expect_eq "the pod-template-hash label" "${RS1#web-}" "$(jp "rs/$RS1" '{.spec.template.metadata.labels.pod-template-hash}')"
apply "$DEPLOY"
expect_eq "applying the same manifest again changes nothing" 1 "$(jp deploy/web '{.metadata.generation}')"

# ---- kubectl create (protobuf bodies) ----

expect_ok "kubectl create deployment (protobuf)" kc -n "$NS" create deployment quick --image=nginx:1.25 --replicas=2 --port=80
expect_eq "its fields arrived" "2 nginx:1.25 80 app=quick" \
    "$(jp deploy/quick '{.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort} app={.spec.selector.matchLabels.app}')"
expect_ok "it rolls out" timeout 20 kubectl -n "$NS" rollout status deploy/quick
expect_ok "kubectl create job (protobuf)" kc -n "$NS" create job hello --image=busybox -- echo hi
expect_eq "the job's command and restart policy" "echo hi Never" \
    "$(jp job/hello '{.spec.template.spec.containers[0].command[0]} {.spec.template.spec.containers[0].command[1]} {.spec.template.spec.restartPolicy}')"
expect_ok "kubectl create cronjob (protobuf)" kc -n "$NS" create cronjob tick --image=busybox --schedule='*/5 * * * *' -- date
expect_eq "the cronjob's schedule" "*/5 * * * *" "$(jp cj/tick '{.spec.schedule}')"

# ---- strategic merge patches ----

k patch deploy/web -p '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","$patch":"delete"}]}]}}}}' >/dev/null ||
    fail "patch: drop an env var"
expect_eq "an env entry dropped by name" "B" "$(jp deploy/web '{.spec.template.spec.containers[0].env[*].name}')"
k patch deploy/web -p '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}' >/dev/null ||
    fail "patch: add a container"
expect_eq "a container added by name" "web side" "$(jp deploy/web '{.spec.template.spec.containers[*].name}')"
k patch deploy/web -p '{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"web"}]}}}}' >/dev/null ||
    fail "patch: reorder"
expect_eq "containers reordered" "side web" "$(jp deploy/web '{.spec.template.spec.containers[*].name}')"
k patch deploy/web -p '{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}' >/dev/null ||
    fail "patch: remove a container"
expect_eq "a container removed" "web" "$(jp deploy/web '{.spec.template.spec.containers[*].name}')"

# ---- rollout history, undo, restart, pause, resume ----

k set image deploy/web web=nginx:1.26 >/dev/null || fail "set image"
k annotate deploy/web kubernetes.io/change-cause="nginx 1.26" >/dev/null
expect_ok "rollout status after set image" timeout 20 kubectl -n "$NS" rollout status deploy/web
expect_ok "rollout history" kubectl -n "$NS" rollout history deploy/web
echo "$OUT"
expect_contains "history names the change cause" "nginx 1.26" "$OUT"
REV=$(jp deploy/web '{.metadata.annotations.deployment\.kubernetes\.io/revision}')
expect_ok "rollout undo" kubectl -n "$NS" rollout undo deploy/web
expect_contains "rolled back" "rolled back" "$OUT"
expect_ok "rollout status after undo" timeout 20 kubectl -n "$NS" rollout status deploy/web
expect_eq "undo brings back the previous image" "nginx:1.25" "$(jp deploy/web '{.spec.template.spec.containers[0].image}')"
expect_eq "the revision moves on" "$((REV + 1))" "$(jp deploy/web '{.metadata.annotations.deployment\.kubernetes\.io/revision}')"
expect_ok "history after undo" kubectl -n "$NS" rollout history deploy/web
expect_not_contains "the rolled-back revision is renumbered, not duplicated" "$(printf '\n%s ' "$((REV - 1))")" "$OUT"
expect_ok "undo to a revision" kubectl -n "$NS" rollout undo deploy/web --to-revision="$REV"
expect_eq "the image of that revision" "nginx:1.26" "$(jp deploy/web '{.spec.template.spec.containers[0].image}')"
expect_fails "undo to a revision that does not exist" "unable to find specified revision 99 in history" \
    kubectl -n "$NS" rollout undo deploy/web --to-revision=99
expect_ok "rollout restart" kubectl -n "$NS" rollout restart deploy/web
expect_ok "rollout status after restart" timeout 20 kubectl -n "$NS" rollout status deploy/web
expect_ok "rollout pause" kubectl -n "$NS" rollout pause deploy/web
expect_fails "restart refused while paused" "can't restart paused deployment" kubectl -n "$NS" rollout restart deploy/web
expect_fails "undo refused while paused" "you cannot rollback a paused deployment" kubectl -n "$NS" rollout undo deploy/web
k set image deploy/web web=nginx:1.27 >/dev/null
sleep 1
expect_eq "a paused Deployment gets no new ReplicaSet" 0 \
    "$(k get rs -o json | sw_json 'len([r for r in o["items"] if r["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"])')"
expect_eq "Progressing says paused" "DeploymentPaused" "$(jp deploy/web '{.status.conditions[?(@.type=="Progressing")].reason}')"
expect_ok "rollout resume" kubectl -n "$NS" rollout resume deploy/web
expect_ok "rollout status after resume" timeout 20 kubectl -n "$NS" rollout status deploy/web
expect_eq "the paused change rolled out" 1 \
    "$(k get rs -o json | sw_json 'len([r for r in o["items"] if r["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27" and r["spec"]["replicas"] == 3])')"
sleep 1
expect_eq "history pruned to revisionHistoryLimit (3 old + the current)" 4 "$(k get rs -l app=web -o name | wc -l)"

# a second ReplicaSet with the current template (a copy made by hand): one is chosen, the
# revisions settle instead of leapfrogging each other
RSNOW=$(k get rs -o json | sw_json '[r["metadata"]["name"] for r in o["items"] if r["spec"]["replicas"] == 3 and r["metadata"]["ownerReferences"][0]["name"] == "web"][0]')
k get rs "$RSNOW" -o json | sw_json 'dict(o, metadata={k: v for k, v in o["metadata"].items() if k in ("labels", "annotations", "ownerReferences")} | {"name": o["metadata"]["name"] + "-copy"}, status={})' |
    k create -f - >/dev/null || fail "copy a ReplicaSet"
k annotate rs "$RSNOW-copy" --overwrite deployment.kubernetes.io/revision=1 >/dev/null
sleep 2
r1=$(jp deploy/web '{.metadata.annotations.deployment\.kubernetes\.io/revision}')
sleep 2
expect_eq "two ReplicaSets with one template: the revision settles" "$r1" \
    "$(jp deploy/web '{.metadata.annotations.deployment\.kubernetes\.io/revision}')"
k delete rs "$RSNOW-copy" >/dev/null

# ---- bad input ----

bad()
{
    expect_fails "$1" "$2" kc -n "$NS" create -f - <<<"$3"
}
bad "a selector that does not match the labels: 422" '`selector` does not match template `labels`' \
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
bad "no containers: 422" 'spec.template.spec.containers: Required value' \
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[]}}}}'
bad "a duplicate container name: 422" 'Duplicate value: "c"' \
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"},{"name":"c","image":"j"}]}}}}'
bad "a Job restarting Always: 422" 'spec.template.spec.restartPolicy: Unsupported value: "Always"' \
    '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},"spec":{"template":{"spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"i"}]}}}}'
bad "a CronJob schedule: 422" 'spec.schedule: Invalid value' \
    '{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"x"},"spec":{"schedule":"every day","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}}}'
bad "an unknown container field: 400" 'unknown field' \
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","imagee":"j"}]}}'
expect_fails "the selector is immutable" "field is immutable" \
    kc -n "$NS" patch deploy/web -p '{"spec":{"selector":{"matchLabels":{"app":"web","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}'

# ---- the other kinds ----

apply 'apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  serviceName: db
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "mysql:8"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: a, image: "agent:1"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pod}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: c, image: busybox}]}'
expect_ok "rollout status of a StatefulSet" timeout 20 kubectl -n "$NS" rollout status sts/db
expect_contains "it rolled out" "roll out complete" "$OUT"
expect_ok "rollout status of a DaemonSet" timeout 20 kubectl -n "$NS" rollout status ds/agent
expect_contains "it rolled out" 'daemon set "agent" successfully rolled out' "$OUT"
k set image sts/db db=mysql:8.1 >/dev/null || fail "set image sts"
k set image ds/agent a=agent:2 >/dev/null || fail "set image ds"
expect_ok "StatefulSet rollout status after a change" timeout 20 kubectl -n "$NS" rollout status sts/db
expect_eq "its revisions match" "true" "$(jp sts/db '{.status.currentRevision}' | grep -q "^db-" && [ "$(jp sts/db '{.status.currentRevision}')" = "$(jp sts/db '{.status.updateRevision}')" ] && echo true)"
expect_eq "two ControllerRevisions per workload" "2 2" \
    "$(k get controllerrevisions -o json | sw_json 'str(len([c for c in o["items"] if c["metadata"]["ownerReferences"][0]["name"] == "db"])) + " " + str(len([c for c in o["items"] if c["metadata"]["ownerReferences"][0]["name"] == "agent"]))')"
expect_ok "rollout undo of a StatefulSet" kubectl -n "$NS" rollout undo sts/db
expect_eq "the StatefulSet's previous image" "mysql:8" "$(jp sts/db '{.spec.template.spec.containers[0].image}')"
for _ in $(seq 50); do
    [ "$(kubectl -n "$NS" rollout history sts/db | awk 'NR>2 && $1 ~ /^[0-9]+$/ {printf "%s ", $1}')" = "2 3 " ] && break
    sleep 0.1
done
expect_eq "the reused revision is renumbered" "2 3 " "$(kubectl -n "$NS" rollout history sts/db | awk 'NR>2 && $1 ~ /^[0-9]+$/ {printf "%s ", $1}')"
expect_ok "rollout undo of a DaemonSet to revision 1" kubectl -n "$NS" rollout undo ds/agent --to-revision=1
expect_eq "the DaemonSet's first image" "agent:1" "$(jp ds/agent '{.spec.template.spec.containers[0].image}')"
expect_eq "StatefulSet defaults" "OrderedReady RollingUpdate 1" "$(jp sts/db '{.spec.podManagementPolicy} {.spec.updateStrategy.type} {.spec.replicas}')"
expect_eq "Job defaults" "1 1 6 NonIndexed" "$(jp job/once '{.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.completionMode}')"
expect_eq "CronJob defaults" "Allow 3 1" "$(jp cj/nightly '{.spec.concurrencyPolicy} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit}')"
expect_eq "a Pod is stored, Pending" "Pending" "$(jp pod/pod '{.status.phase}')"
expect_eq "an RC's selector defaults to its template's labels" "legacy" "$(jp rc/legacy '{.spec.selector.app}')"
expect_ok "kubectl get every kind" kc -n "$NS" get deploy,rs,sts,ds,job,cj,pod,rc
expect_contains "the CronJob's schedule column" "0 3 * * *" "$OUT"
expect_fails "a Pod's spec is immutable but for images" "pod updates may not change fields" \
    kc -n "$NS" patch pod/pod -p '{"spec":{"containers":[{"name":"c","workingDir":"/x"}]}}'
expect_ok "a Pod's image may change" kc -n "$NS" set image pod/pod c=busybox:2

# ---- deleting a Deployment collects its ReplicaSets ----

k delete deploy/web >/dev/null || fail "delete the Deployment"
for _ in $(seq 100); do
    [ "$(k get rs -l app=web -o name | wc -l)" = 0 ] && break
    sleep 0.1
done
expect_eq "its ReplicaSets are collected" 0 "$(k get rs -l app=web -o name | wc -l)"

sw_finish
