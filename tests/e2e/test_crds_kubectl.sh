#!/usr/bin/env bash
# test_crds_kubectl.sh: CustomResourceDefinitions with kubectl as a user drives them (issue 14,
# crd-gc.md §3): apply a CRD and wait for Established, create a custom resource (kubectl's
# strict field validation refusing an unknown field, --validate=false pruning it), get with
# the printer columns and -o wide, explain from the published schema, patch merge and json and
# the 415 for strategic, apply --server-side, scale, label and field selectors, then delete the
# CRD and see its instances go. Then the seed's operator scenario (seeds/000): a NotebookImage
# CRD whose instance owns an ImageStream through ownerReferences, collected by the garbage
# collector when the instance is deleted; server start to ready and the whole scenario timed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

T0=$(date +%s%N)
sw_start_server
T_READY=$(date +%s%N)

CRD='apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Image, type: string, jsonPath: .spec.image, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields: [{jsonPath: .spec.image}]
    schema:
      openAPIV3Schema:
        type: object
        description: A CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: What to run and when.
            properties:
              cronSpec: {type: string, description: The schedule in cron format.}
              image: {type: string, description: The image to run.}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1, description: How many at once.}
          status:
            type: object
            properties:
              replicas: {type: integer}'

kc apply -f - <<<"$CRD" >/dev/null || fail "kubectl apply of the CRD"
expect_ok "kubectl wait --for=condition=Established" \
    kc wait --for=condition=Established crd/crontabs.stable.example.com --timeout=10s
expect_ok "kubectl get crd" kc get crd
expect_match "kubectl get crd: NAME and CREATED AT" '^NAME +CREATED AT$' "$OUT"

CT='apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: nightly, labels: {team: a}}
spec: {cronSpec: "0 3 * * *", image: "busybox:1.36", extra: 1}'
expect_fails "kubectl apply refuses an unknown field (strict field validation)" \
    'strict decoding error: unknown field "spec.extra"' kc apply -f - <<<"$CT"
expect_ok "kubectl apply --validate=false prunes it" kc apply --validate=false -f - <<<"$CT"
expect_eq "pruned, and replicas defaulted" "{\"cronSpec\":\"0 3 * * *\",\"image\":\"busybox:1.36\",\"replicas\":1}" \
    "$(kc get ct nightly -o jsonpath='{.spec}')"

expect_ok "kubectl get with printer columns" kc get crontabs
expect_match "columns NAME SPEC REPLICAS AGE" '^NAME +SPEC +REPLICAS +AGE$' "$OUT"
expect_match "the row" '^nightly +0 3 \* \* \* +1 +[0-9]+s$' "$OUT"
expect_ok "kubectl get -o wide" kc get ct -o wide
expect_match "-o wide adds the priority-1 column" '^NAME +SPEC +REPLICAS +IMAGE +AGE$' "$OUT"
expect_ok "kubectl explain crontab.spec" kc explain crontab.spec
expect_contains "explain: the field's description" "What to run and when." "$OUT"
expect_contains "explain: a nested field" "The image to run." "$OUT"
expect_ok "kubectl explain crontab.spec.replicas" kc explain crontab.spec.replicas
expect_contains "explain: its type" "<integer>" "$OUT"
expect_ok "kubectl explain imagestream.spec.tags (a built-in kind)" kc explain imagestream.spec.tags
expect_contains "explain: slipway's own field documentation" "The tags of the stream" "$OUT"
expect_not_contains "explain: no field without a description" "<no description>" "$OUT"
expect_ok "kubectl explain build.status.phase" kc explain build.status.phase
expect_contains "explain: Build phases" "New, Pending, Running, Complete" "$OUT"

expect_ok "kubectl patch --type=merge" kc patch ct nightly --type=merge -p '{"spec":{"replicas":2}}'
expect_ok "kubectl patch --type=json" kc patch ct nightly --type=json \
    -p '[{"op":"replace","path":"/spec/image","value":"busybox:1.37"}]'
expect_eq "both patches landed" "2 busybox:1.37" "$(kc get ct nightly -o jsonpath='{.spec.replicas} {.spec.image}')"
expect_fails "kubectl patch --type=strategic: 415" "415 Unsupported Media Type" \
    kc patch ct nightly --type=strategic -p '{"spec":{"replicas":3}}' -v=6
expect_fails "a patch over the maximum: 422" 'spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 10' \
    kc patch ct nightly --type=merge -p '{"spec":{"replicas":50}}'

SSA='apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: applied}
spec: {cronSpec: "*/5 * * * *", image: "alpine:3", replicas: 3}'
expect_ok "kubectl apply --server-side creates" kc apply --server-side -f - <<<"$SSA"
expect_ok "kubectl apply --server-side again with a change" kc apply --server-side -f - <<<"${SSA/replicas: 3/replicas: 4}"
expect_eq "the applied change" "4" "$(kc get ct applied -o jsonpath='{.spec.replicas}')"
expect_ok "kubectl scale" kc scale ct applied --replicas=6
expect_eq "scaled through /scale" "6" "$(kc get ct applied -o jsonpath='{.spec.replicas}')"
expect_ok "kubectl get -l team=a" kc get ct -l team=a -o name
expect_eq "label selector" "crontab.stable.example.com/nightly" "$OUT"
expect_ok "kubectl get --field-selector on a selectableField" kc get ct --field-selector spec.image=alpine:3 -o name
expect_eq "field selector" "crontab.stable.example.com/applied" "$OUT"
expect_ok "kubectl get ct -A" kc get ct -A -o name

expect_ok "kubectl delete crd" kc delete crd crontabs.stable.example.com --timeout=20s
expect_fails "the resource went with it" "the server could not find the requested resource" kc get ct

# ---- the seed's scenario: an operator's CRD whose instances own ImageStreams ----
T_SCEN=$(date +%s%N)
NB='apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: notebookimages.example.opendatahub.io}
spec:
  group: example.opendatahub.io
  scope: Namespaced
  names: {plural: notebookimages, singular: notebookimage, kind: NotebookImage}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            properties:
              image: {type: string, pattern: "^[a-z0-9./:@-]+$"}
              displayName: {type: string, maxLength: 63}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true'
kc apply -f - <<<"$NB" >/dev/null || fail "apply the NotebookImage CRD"
kc wait --for=condition=Established crd/notebookimages.example.opendatahub.io --timeout=10s >/dev/null ||
    fail "NotebookImage CRD established"
kc create namespace nb >/dev/null || fail "create namespace nb"
expect_fails "an invalid NotebookImage: 422 with the field" 'spec.image: Required value' \
    kc -n nb apply -f - <<<'apiVersion: example.opendatahub.io/v1alpha1
kind: NotebookImage
metadata: {name: broken}
spec: {displayName: x}'
kc -n nb apply -f - >/dev/null <<<'apiVersion: example.opendatahub.io/v1alpha1
kind: NotebookImage
metadata: {name: jupyter}
spec: {image: "quay.io/example/jupyter:2024.1", displayName: Jupyter}' || fail "create the NotebookImage"
UID_NB=$(kc -n nb get notebookimage jupyter -o jsonpath='{.metadata.uid}')
kc -n nb apply -f - >/dev/null <<EOF || fail "create the owned ImageStream"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: jupyter
  ownerReferences:
  - {apiVersion: example.opendatahub.io/v1alpha1, kind: NotebookImage, name: jupyter, uid: $UID_NB, controller: true, blockOwnerDeletion: true}
spec:
  lookupPolicy: {local: true}
EOF
expect_eq "the ImageStream names its owner" "NotebookImage/jupyter" \
    "$(kc -n nb get is jupyter -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
sleep 0.5
expect_ok "the garbage collector keeps a stream whose owner exists" kc -n nb get is jupyter
expect_ok "delete the NotebookImage" kc -n nb delete notebookimage jupyter
wait_for "the garbage collector deletes its ImageStream" 20 bash -c "! kubectl -n nb get is jupyter"
T_END=$(date +%s%N)
echo "# server start to ready: $(((T_READY - T0) / 1000000)) ms; NotebookImage scenario: $(((T_END - T_SCEN) / 1000000)) ms"
sw_finish
