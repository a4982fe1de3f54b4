#!/usr/bin/env bash
# test_managedimage.sh: ManagedImages end to end (issue 12) with every real party: `slipway
# server` with all its controllers, the real `slipway builder`, Debian's docker-registry as the
# server's --image-registry sending its notifications to the server, skopeo, kubectl and
# tests/e2e/tools/faultproxy.py (a slow base for the kill -9 case). Covers: create → stream,
# BuildConfig, one build, ImageAvailable=True with the digest the registry serves; the stream
# deleted → recreated with its tag, no rebuild; the owned stream's and BuildConfig's specs
# edited → put back, with Events; the manifest DELETEd through the registry API → the stream
# tag's NotFound condition and ImageDeleted Event (notification), then exactly one rebuild; the
# base re-pushed with a new digest → exactly one rebuild, the same digest → none; a new commit
# on a Git source's ref → one rebuild pinned to it; a build started by hand is adopted; notifications
# off → the verification HEAD finds the deletion; a broken source → Ready=False with the log
# snippet and a backoff (builds counted); import failures through `slipway import-image` get
# one Warning Event; delete with background, foreground and orphan; a ConfigMap owning an
# ImageStream (the seed's plain owner) collects it; kill -9 of the server in the middle of a
# rebuild → after restart one more build, not two.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"

START=$(date +%s)
sw_with_registry

NS=team
BAPI=/apis/build.openshift.io/v1/namespaces/$NS
IAPI=/apis/image.openshift.io/v1/namespaces/$NS
MAPI=/apis/image.slipway.dev/v1alpha1/namespaces/$NS

builder_pids() { [ -n "$SW_URL" ] && pgrep -f -- " builder --server $SW_URL " || true; }
stop_builders()
{
    local rc=$? p
    for p in $(builder_pids); do kill -9 "$p" 2>/dev/null; done
    return "$rc"
}
trap 'reg_cleanup; stop_builders; sw_cleanup' EXIT

printf 'leak:libpcre2-8.so\nleak:libgit2.so\n' >"$SW_TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$SW_TMP/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export TMPDIR=$SW_TMP/tmp
mkdir -p "$TMPDIR"
export SW_MI_BACKOFF_MS=2000 # the failure backoff starts at 2 s here (10 s by default)

# miq NAME EXPR: EXPR (sw_json) over the ManagedImage.
miq() { sw_api GET "$MAPI/managedimages/$1" | sw_json "$2"; }
cond() { miq "$1" '" ".join(c["status"] + "/" + c["reason"] for c in at("status.conditions") or [] if c["type"] == "'"$2"'")'; }
# builds_of BC: the build names of BC in number order.
builds_of()
{
    sw_api GET "$BAPI/builds?labelSelector=openshift.io/build-config.name=$1" |
        sw_json '" ".join(sorted((i["metadata"]["name"] for i in o["items"]), key=lambda n: int(n.rsplit("-", 1)[1])))'
}
nbuilds() { builds_of "$1" | wc -w; }
is_ready() { [ "$(cond "$1" Ready)" = "True/ImageAvailable" ]; }
tag_image() { sw_api GET "$IAPI/imagestreams/$1" | sw_json '([t for t in at("status.tags") or [] if t["tag"] == "'"$2"'"] or [{"items": [{}]}])[0]["items"][0].get("image", "")'; }
events_of() { kc get events -n "$NS" -o json | sw_json '"\n".join(e["reason"] + ": " + e["message"] for e in o["items"] if e["involvedObject"]["name"] == "'"$1"'" and e["involvedObject"]["kind"] == "'"$2"'")'; }
apply() { kc apply -n "$NS" -f - >/dev/null <<<"$1" || fail "kubectl apply: $1"; }

# ---- setup: the server, then the registry that notifies it ----

read -r PORT < <(reg_free_ports 1)
REG=127.0.0.1:$PORT
TOKEN=notify-$RANDOM$RANDOM$RANDOM$RANDOM
echo "$TOKEN" >"$SW_TMP/notify.token"
# a slow way to the same registry: a base pulled through it makes a build last 9 s (section 11)
reg_start_tool slow "$SW_TESTS/e2e/tools/faultproxy.py" --upstream "http://$REG" \
    --rule 429:3 3 '^/v2/slow/base/blobs/'
SLOW=127.0.0.1:${REG_TOOL_PORT[slow]}
SERVER_FLAGS=(--image-registry "$REG" --insecure-registry "$REG" --insecure-registry "$SLOW"
    --registry-notifications-token-file "$SW_TMP/notify.token")
SW_CONTROLLERS=1 sw_start_server "${SERVER_FLAGS[@]}"
reg_start main "$PORT" --notify "$SW_URL/notifications/registry" "$TOKEN" --ca "$SW_DIR/tls.crt"
kc create namespace "$NS" >/dev/null || fail "create namespace $NS"

reg_build_image base1 amd64
reg_push base1 "$REG/base/img:1"
BASE1=$(reg_digest "$REG/base/img:1")

mi_yaml()
{
    local name=$1 stream=$2 dockerfile=$3 extra=${4:-}
    cat <<EOF
apiVersion: image.slipway.dev/v1alpha1
kind: ManagedImage
metadata: {name: $name}
spec:
  source:
    type: Dockerfile
    dockerfile: "$dockerfile"
  strategy:
    dockerStrategy:
      from: {kind: DockerImage, name: "$REG/base/img:1"}
  output:
    to: {kind: ImageStreamTag, name: "$stream:latest"}
  policy:
    verifyIntervalSeconds: 2
$extra
EOF
}

# ---- 1. create: stream, BuildConfig, one build, ImageAvailable ----

apply "$(mi_yaml web web 'FROM scratch\nLABEL app=web\nENV MODE=one\n')"
wait_for "web becomes Ready" 90 is_ready web
DIGEST=$(reg_digest "$REG/$NS/web:latest")
expect_eq "latestImage is what the registry serves" "$REG/$NS/web@$DIGEST" "$(miq web 'at("status.latestImage")')"
expect_eq "ImageAvailable=True" "True/InRegistry" "$(cond web ImageAvailable)"
expect_eq "one build" "web-1" "$(builds_of web)"
expect_eq "the stream's tag is the image" "$DIGEST" "$(tag_image web latest)"
expect_eq "the stream is controlled by the ManagedImage" "ManagedImage/web/True" \
    "$(sw_api GET "$IAPI/imagestreams/web" | sw_json 'o["metadata"]["ownerReferences"][0]["kind"] + "/" + o["metadata"]["ownerReferences"][0]["name"] + "/" + str(o["metadata"]["ownerReferences"][0]["controller"])')"
expect_eq "the BuildConfig too, with no triggers" "ManagedImage/0" \
    "$(sw_api GET "$BAPI/buildconfigs/web" | sw_json 'o["metadata"]["ownerReferences"][0]["kind"] + "/" + str(len(o["spec"]["triggers"]))')"
expect_eq "inputs: the base digest" "$BASE1" "$(miq web 'at("status.inputs.baseImage").split("@")[1]')"
expect_contains "kubectl get mi shows the columns" "True" "$(kc get mi -n "$NS" web)"
expect_contains "kubectl get mi shows the image" "$DIGEST" "$(kc get mi -n "$NS" web)"

# ---- 2. the stream deleted → recreated with its tag, no rebuild ----

kc delete imagestream -n "$NS" web >/dev/null || fail "delete the stream"
wait_for "the stream is recreated with its tag" 10 is_eq "$DIGEST" tag_image web latest
sleep 3
expect_eq "no rebuild after the stream's deletion" "web-1" "$(builds_of web)"
expect_contains "a Recreated Event" "Recreated: recreated ImageStream web" "$(events_of web ManagedImage)"

# ---- 3. drift: the owned stream's and BuildConfig's specs are put back ----

kc patch imagestream -n "$NS" web --type merge -p "{\"spec\":{\"tags\":[{\"name\":\"latest\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"$REG/base/img:1\"}}]}}" >/dev/null ||
    fail "patch the stream"
spec_tags() { sw_api GET "$IAPI/imagestreams/web" | sw_json 'len(at("spec.tags") or [])'; }
wait_for "the stream's spec tag is removed again" 10 is_eq 0 spec_tags
expect_contains "a Reverted Event for the stream" "Reverted: ImageStream web: removed spec.tags [latest]" "$(events_of web ManagedImage)"
kc patch bc -n "$NS" web --type merge -p '{"spec":{"runPolicy":"Parallel","successfulBuildsHistoryLimit":1}}' >/dev/null ||
    fail "patch the BuildConfig"
bc_policy() { sw_api GET "$BAPI/buildconfigs/web" | sw_json 'o["spec"]["runPolicy"] + str(o["spec"]["successfulBuildsHistoryLimit"])'; }
wait_for "the BuildConfig's spec is put back" 10 is_eq Serial5 bc_policy
expect_contains "a Reverted Event for the BuildConfig" "BuildConfig web: put back spec.runPolicy, spec.successfulBuildsHistoryLimit" "$(events_of web ManagedImage)"
expect_eq "still no rebuild" "web-1" "$(builds_of web)"

# a build started by hand on the owned BuildConfig is taken as the image, not rebuilt over
expect_ok "start-build on the owned BuildConfig" "$SLIPWAY" start-build -n "$NS" web --wait
wait_for "the manual build's image becomes latestImage" 30 is_eq web-2 miq web 'at("status.latestBuild")'
sleep 3
expect_eq "no rebuild after a manual build" "web-1 web-2" "$(builds_of web)"

# ---- 4. the manifest deleted in the registry (notification) → one rebuild ----

# a plain stream (no ManagedImage rebuilds it) keeps the condition; the DELETE goes through
# another loopback name than the one the stream recorded
reg_build_image plain amd64
reg_push plain "$REG/other/plain:1"
apply "apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: plain}
spec:
  tags:
  - name: \"1\"
    from: {kind: DockerImage, name: \"$REG/other/plain:1\"}
    importPolicy: {insecure: true}"
PD=$(reg_digest "$REG/other/plain:1")
wait_for "the plain stream imported its tag" 20 is_eq "$PD" tag_image plain 1
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://localhost:$PORT/v2/other/plain/manifests/$PD")
expect_eq "the registry deletes the plain stream's manifest" 202 "$code"
plain_conds() { sw_api GET "$IAPI/imagestreams/plain" | sw_json '" ".join(c["reason"] for t in at("status.tags") for c in t.get("conditions", []))'; }
wait_for "the stream tag says the image was deleted" 10 is_eq NotFound plain_conds
expect_contains "an ImageDeleted Warning Event on the stream" "ImageDeleted: tag 1: the image $PD was deleted from the registry localhost:$PORT/other/plain" "$(events_of plain ImageStream)"

# the owned stream's image: deleted, marked, rebuilt once (a reproducible rebuild may bring
# the same digest back at once, clearing the condition: the Event stays)
DIGEST=$(reg_digest "$REG/$NS/web:latest")
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://$REG/v2/$NS/web/manifests/$DIGEST")
expect_eq "the registry deletes the manifest" 202 "$code"
deleted_events() { events_of web ImageStream | grep -c "ImageDeleted: tag latest: the image $DIGEST was deleted from the registry $REG/$NS/web"; }
wait_for "an ImageDeleted Warning Event on the owned stream" 10 is_eq 1 deleted_events
wait_for "a rebuild starts" 15 is_ge 3 nbuilds web
wait_for "web is Ready again" 60 is_ready web
expect_eq "exactly one rebuild" "web-1 web-2 web-3" "$(builds_of web)"
tag_conds() { sw_api GET "$IAPI/imagestreams/web" | sw_json '" ".join(c["reason"] for t in at("status.tags") for c in t.get("conditions", []))'; }
D2=$(reg_digest "$REG/$NS/web:latest")
expect_eq "the registry serves the image again" "$REG/$NS/web@$D2" "$(miq web 'at("status.latestImage")')"
expect_eq "the tag's condition is cleared" "" "$(tag_conds)"

# ---- 5. the base re-pushed: a new digest → one rebuild; the same digest → none ----

reg_build_image base2 amd64
reg_push base2 "$REG/base/img:1"
wait_for "a new base digest starts one rebuild" 20 is_ge 4 nbuilds web
wait_for "web is Ready on the new base" 60 is_ready web
BASE2=$(reg_digest "$REG/base/img:1")
expect_eq "inputs: the new base digest" "$BASE2" "$(miq web 'at("status.inputs.baseImage").split("@")[1]')"
reg_push base2 "$REG/base/img:1"
sleep 7 # more than three verification intervals
expect_eq "the same base digest again: no rebuild" "web-1 web-2 web-3 web-4" "$(builds_of web)"

# ---- 5b. a Git source: a new commit on the ref → one rebuild, pinned to that commit ----

REPO=$SW_TMP/repo
git init -q -b main "$REPO"
printf 'FROM scratch\nCOPY a.txt /a.txt\n' >"$REPO/Dockerfile"
echo one >"$REPO/a.txt"
git -C "$REPO" add -A && git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
C1=$(git -C "$REPO" rev-parse HEAD)
apply "apiVersion: image.slipway.dev/v1alpha1
kind: ManagedImage
metadata: {name: gitmi}
spec:
  source: {type: Git, git: {uri: \"file://$REPO\", ref: main}}
  strategy: {dockerStrategy: {}}
  output: {to: {name: \"gitmi:latest\"}}
  policy: {verifyIntervalSeconds: 2}"
wait_for "a Git ManagedImage is Ready" 60 is_ready gitmi
expect_eq "inputs: the ref's commit" "$C1" "$(miq gitmi 'at("status.inputs.sourceRevision")')"
echo two >"$REPO/a.txt"
git -C "$REPO" -c user.name=t -c user.email=t@t commit -qam two
C2=$(git -C "$REPO" rev-parse HEAD)
wait_for "a new commit starts one rebuild" 20 is_ge 2 nbuilds gitmi
wait_for "it is Ready on the new commit" 60 is_eq "$C2" miq gitmi 'at("status.inputs.sourceRevision")'
expect_eq "the rebuild was pinned to the commit" "$C2" \
    "$(sw_api GET "$BAPI/builds/gitmi-2" | sw_json 'at("spec.revision.git.commit")')"
sleep 5
expect_eq "one rebuild for one commit" "gitmi-1 gitmi-2" "$(builds_of gitmi)"
kc delete mi -n "$NS" gitmi >/dev/null

# ---- 6. notifications off: the verification HEAD finds a deletion ----

reg_stop main
reg_start quiet "$PORT" --store main
D3=$(reg_digest "$REG/$NS/web:latest")
curl -s -o /dev/null -X DELETE "http://$REG/v2/$NS/web/manifests/$D3"
wait_for "verification finds the image gone and rebuilds" 20 is_ge 5 nbuilds web
wait_for "web is Ready after the verification's rebuild" 60 is_ready web
expect_eq "one rebuild for it" "web-1 web-2 web-3 web-4 web-5" "$(builds_of web)"
expect_contains "an ImageMissing Event" "ImageMissing: the image $REG/$NS/web@$D3 is gone from the registry" "$(events_of web ManagedImage)"

# ---- 7. a broken source: Ready=False with the log snippet, backoff, few builds ----

apply "$(mi_yaml web web 'FROM scratch\nRUN make\n')"
wait_for "a build of the broken source fails" 30 is_eq False/BuildFailed cond web Ready
msg=$(miq web '[c["message"] for c in at("status.conditions") if c["type"] == "Ready"][0]')
echo "  Ready message: $msg"
expect_contains "the Ready message has the log snippet" "RUN" "$msg"
t0=$(date +%s)
n0=$(nbuilds web)
sleep 20
n1=$(nbuilds web)
echo "  builds of the broken source in $(($(date +%s) - t0)) s: $((n1 - n0)) (after the first)"
[ $((n1 - n0)) -ge 1 ] || fail "no retry at all after a failure in 20 s"
[ $((n1 - n0)) -le 4 ] || fail "a build storm: $((n1 - n0)) builds in 20 s"
pass "retries back off ($((n1 - n0)) in 20 s)"
expect_contains "the backoff is visible" "next try at" "$(miq web '[c["message"] for c in at("status.conditions") if c["type"] == "Building"][0]')"
apply "$(mi_yaml web web 'FROM scratch\nLABEL app=web\nENV MODE=two\n')"
wait_for "a fixed source is Ready again" 60 is_ready web

# a first build that fails says so, and pruning every failed build
# (failedBuildsHistoryLimit: 0) lets no storm through: the failure streak is the controller's
apply "$(mi_yaml broken0 broken0 'FROM scratch\nRUN make\n' '    failedBuildsHistoryLimit: 0')"
wait_for "a first failed build: Ready=False/BuildFailed" 30 is_eq False/BuildFailed cond broken0 Ready
sleep 15
last=$(sw_api GET "$BAPI/buildconfigs/broken0" | sw_json 'at("status.lastVersion")')
echo "  builds of broken0 in about 15 s with failedBuildsHistoryLimit 0: $last"
[ "$last" -le 6 ] || fail "a build storm with failedBuildsHistoryLimit 0: $last builds"
pass "no storm when failed builds are pruned ($last builds)"
kc delete mi -n "$NS" broken0 >/dev/null

# ---- describe: the ManagedImage, its BuildConfig, a failed build ----

expect_ok "describe mi/web" "$SLIPWAY" describe -n "$NS" mi/web
echo "$OUT" | sed -n '1,60p'
for needle in "Latest Image:" "$(miq web 'at("status.latestImage")')" "Spec Hash:" "Ready" \
    "ImageAvailable" "BuildConfig/web" "ImageStream/web" "Complete" "Failed" "BuildStarted" \
    "Reverted" "ImageMissing"; do
    expect_contains "describe mi shows $needle" "$needle" "$OUT"
done
expect_ok "describe with the group-qualified type" "$SLIPWAY" describe -n "$NS" managedimages.image.slipway.dev/web
expect_ok "describe bc/web" "$SLIPWAY" describe -n "$NS" bc/web
expect_contains "describe bc: controlled by the ManagedImage" "ManagedImage/web" "$OUT"
expect_contains "describe bc: its builds" "web-1" "$OUT"
FAILED=$(sw_api GET "$BAPI/builds?labelSelector=openshift.io/build-config.name=web" |
    sw_json '[i["metadata"]["name"] for i in o["items"] if i["status"].get("phase") == "Failed"][0]')
expect_ok "describe build/$FAILED (a failed one)" "$SLIPWAY" describe -n "$NS" "build/$FAILED"
expect_contains "describe build: the phase and reason" "Failed (DockerBuildFailed)" "$OUT"
expect_contains "describe build: the log tail" "Log Tail:" "$OUT"
expect_fails "describe an unknown type" "buildconfigs (bc), builds and managedimages (mi)" \
    "$SLIPWAY" describe -n "$NS" pods/x

# ---- 8. bad input: clear 422s ----

bad()
{
    local what=$1 needle=$2 spec=$3
    expect_fails "$what" "$needle" kc create -n "$NS" -f - <<<"{\"apiVersion\":\"image.slipway.dev/v1alpha1\",\"kind\":\"ManagedImage\",\"metadata\":{\"name\":\"bad\"},\"spec\":$spec}"
}
bad "output in another namespace: 422" 'spec.output.to.namespace: Invalid value: "other"' \
    '{"strategy":{"type":"Docker","dockerStrategy":{}},"output":{"to":{"kind":"ImageStreamTag","name":"x:y","namespace":"other"}}}'
bad "an unknown strategy: 422" 'spec.strategy.type: Unsupported value: "Source"' \
    '{"strategy":{"type":"Source"},"output":{"to":{"name":"x:y"}}}'
bad "a bad tag name: 422" 'the tag "-y" must be a registry tag' \
    '{"strategy":{"type":"Docker","dockerStrategy":{}},"output":{"to":{"name":"x:-y"}}}'
bad "no output: 422" 'spec.output.to: Required value' '{"strategy":{"type":"Docker","dockerStrategy":{}}}'
bad "a Binary source: 422" 'spec.source.type: Unsupported value: "Binary"' \
    '{"source":{"type":"Binary"},"strategy":{"type":"Docker","dockerStrategy":{}},"output":{"to":{"name":"x:y"}}}'
bad "an unknown field: 400" 'unknown field' '{"bogus":1,"strategy":{"type":"Docker","dockerStrategy":{}},"output":{"to":{"name":"x:y"}}}'

# ---- 9. import failures through import-image get one Warning Event ----

expect_fails "import-image of a missing tag fails" "" "$SLIPWAY" import-image -n "$NS" gone:v1 --from "$REG/nothing/here:v1" --confirm
"$SLIPWAY" import-image -n "$NS" gone:v1 --from "$REG/nothing/here:v1" --confirm >/dev/null 2>&1
expect_eq "one Warning Event for the failure, not one per attempt" 1 \
    "$(events_of gone ImageStream | grep -c 'importing tag v1 failed')"

# ---- 10. deletion: background, foreground, orphan; a ConfigMap as a plain owner ----

for mode in background foreground orphan; do
    apply "$(mi_yaml "del-$mode" "del-$mode" 'FROM scratch\nENV X=1\n')"
done
for mode in background foreground orphan; do
    wait_for "del-$mode is Ready" 90 is_ready "del-$mode"
done
for mode in background foreground orphan; do
    kc delete mi -n "$NS" "del-$mode" --cascade="$mode" --wait=false >/dev/null || fail "delete del-$mode"
done
gone() { ! kc get -n "$NS" "$1" >/dev/null 2>&1; }
wait_for "background: the stream goes" 20 gone imagestream/del-background
wait_for "background: the BuildConfig goes" 20 gone bc/del-background
wait_for "background: its build goes" 20 gone build/del-background-1
wait_for "foreground: the ManagedImage goes after its dependents" 20 gone mi/del-foreground
expect_ok "foreground: the stream is gone" gone imagestream/del-foreground
expect_ok "foreground: the BuildConfig is gone" gone bc/del-foreground
wait_for "orphan: the ManagedImage goes" 20 gone mi/del-orphan
sleep 2
expect_ok "orphan: the stream stays" kc get -n "$NS" imagestream/del-orphan
expect_ok "orphan: the BuildConfig stays" kc get -n "$NS" bc/del-orphan
expect_eq "orphan: the stream has no owner left" 0 "$(sw_api GET "$IAPI/imagestreams/del-orphan" | sw_json 'len(o["metadata"].get("ownerReferences") or [])')"

kc create configmap -n "$NS" notebook-operator-cr --from-literal=a=b >/dev/null || fail "create the owner"
UID_CM=$(kc get configmap -n "$NS" notebook-operator-cr -o jsonpath='{.metadata.uid}')
apply "apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: notebook
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: notebook-operator-cr, uid: $UID_CM}]"
kc delete configmap -n "$NS" notebook-operator-cr >/dev/null || fail "delete the owner"
wait_for "a ConfigMap owner's deletion collects its ImageStream" 20 gone imagestream/notebook

# ---- 11. kill -9 in the middle of a rebuild: one more build after the restart, not two ----

reg_build_image slowbase amd64
reg_push slowbase "$REG/slow/base:1"
apply "$(mi_yaml crash crash 'FROM scratch\nENV X=1\n')"
wait_for "crash is Ready" 90 is_ready crash
# the rebuild pulls its base through the slow proxy: 9 s of Retry-After before its config
apply "$(mi_yaml crash crash 'FROM scratch\nENV X=1\n' | sed "s|$REG/base/img:1|$SLOW/slow/base:1|")"
phase() { sw_api GET "$BAPI/builds/$1" | sw_json 'at("status.phase")'; }
wait_for "the rebuild runs" 20 is_eq Running phase crash-2
kill -9 "$SW_PID"
wait "$SW_PID" 2>/dev/null
echo "server killed during crash-2"
"$SLIPWAY" server --data-dir "$SW_DIR" --listen "127.0.0.1:$SW_PORT" --v=2 "${SERVER_FLAGS[@]}" >>"$SW_LOG" 2>&1 </dev/null &
SW_PID=$!
wait_for "the server is back" 20 curl -sfk -o /dev/null "$SW_URL/readyz"
wait_for "crash converges after the restart" 90 is_ready crash
sleep 3
expect_eq "the lost build and exactly one more" "crash-1 crash-2 crash-3" "$(builds_of crash)"
expect_eq "the lost one is Error/BuilderLost" "Error/BuilderLost" \
    "$(sw_api GET "$BAPI/builds/crash-2" | sw_json 'at("status.phase") + "/" + at("status.reason")')"

echo "took $(($(date +%s) - START)) s"
sw_finish
