#!/usr/bin/env bash
# test_gc_kubectl.sh: deletion as a kubectl user sees it (issue 11), against `slipway server`
# with its garbage collector and namespace controller: `kubectl delete --dry-run=server` on a
# ConfigMap, an ImageStream and a namespace deletes nothing (it once deleted all three);
# `--cascade=background|foreground|orphan` on owners with dependents; `kubectl delete ns` of a
# namespace holding 2,000 objects of four kinds, some with finalizers: it stays Terminating with
# conditions that say what is left until the finalizers go, then disappears; a BuildConfig's
# deletion takes its builds and their uploaded sources with it, --cascade=orphan keeps them;
# a standalone `slipway controllers` started before its server does the same work.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

sw_start_server
NS_API=/api/v1/namespaces
BAPI=/apis/build.openshift.io/v1/namespaces/default

# mkcm NS NAME [OWNER_NAME OWNER_UID BLOCK]: a ConfigMap, optionally owned.
mkcm()
{
    local owners=""
    [ -z "${3:-}" ] || owners=",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"$3\",\"uid\":\"$4\",\"blockOwnerDeletion\":${5:-false}}]"
    [ "$(sw_api POST "$NS_API/$1/configmaps" -H 'Content-Type: application/json' -o /dev/null \
        -w '%{http_code}' -d "{\"metadata\":{\"name\":\"$2\"$owners},\"data\":{\"a\":\"b\"}}")" = 201 ] ||
        fail "create configmap $1/$2"
}

uid_of() { kc get "$@" -o 'jsonpath={.metadata.uid}'; }

# gone_within SECONDS KUBECTL-GET-ARGS...: true once the object is NotFound.
gone_within()
{
    local deadline=$(($(date +%s) + $1))
    shift
    while [ "$(date +%s)" -le "$deadline" ]; do
        kc get "$@" -o name >/dev/null 2>&1 || return 0
        sleep 0.1
    done
    return 1
}

check_dry_run()
{
    expect_ok "create namespace drns" kc create ns drns
    expect_ok "a ConfigMap in it" kc -n drns create cm keep --from-literal=a=b
    [ "$(sw_api POST /apis/image.openshift.io/v1/namespaces/drns/imagestreams -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' -d '{"metadata":{"name":"is1"}}')" = 201 ] ||
        fail "create an ImageStream in drns"
    expect_ok "delete cm --dry-run=server" kc -n drns delete cm keep --dry-run=server
    expect_contains "... says it was a server dry run" "(server dry run)" "$OUT"
    expect_ok "delete is --dry-run=server" kc -n drns delete is is1 --dry-run=server
    expect_ok "delete ns --dry-run=server" kc delete ns drns --dry-run=server
    expect_eq "the namespace is still Active" Active "$(kc get ns drns -o 'jsonpath={.status.phase}')"
    expect_ok "the ConfigMap is still there" kc -n drns get cm keep
    expect_ok "the ImageStream is still there" kc -n drns get is is1
    expect_ok "a real kubectl delete ns (waits for it)" kc delete ns drns --timeout=60s
    run kc get ns drns
    expect_contains "... the namespace is gone" "NotFound" "$OUT"
}

check_cascade()
{
    local policy a
    for policy in background foreground orphan; do
        mkcm default "own-$policy"
        a=$(uid_of cm "own-$policy")
        mkcm default "dep-$policy" "own-$policy" "$a" true
        expect_ok "kubectl delete --cascade=$policy (waits)" \
            kc delete cm "own-$policy" --cascade="$policy" --timeout=60s
        run kc get cm "own-$policy"
        expect_contains "... the owner is gone ($policy)" NotFound "$OUT"
        if [ "$policy" = orphan ]; then
            expect_eq "--cascade=orphan: the dependent stays, without the reference" "" \
                "$(kc get cm dep-orphan -o 'jsonpath={.metadata.ownerReferences}')"
        else
            gone_within 15 cm "dep-$policy" || fail "--cascade=$policy: dep-$policy stayed"
            pass "--cascade=$policy: the dependent is collected"
        fi
    done
    # foreground waits for the dependents: the owner outlives a held dependent
    mkcm default fg-owner
    a=$(uid_of cm fg-owner)
    mkcm default fg-dep fg-owner "$a" true
    expect_ok "hold the dependent" kc patch cm fg-dep --type merge -p '{"metadata":{"finalizers":["test.example.com/hold"]}}'
    expect_ok "kubectl delete --cascade=foreground --wait=false" \
        kc delete cm fg-owner --cascade=foreground --wait=false
    sleep 1
    expect_eq "the owner waits with foregroundDeletion" foregroundDeletion \
        "$(kc get cm fg-owner -o 'jsonpath={.metadata.finalizers[*]}')"
    expect_ok "release the dependent" kc patch cm fg-dep --type merge -p '{"metadata":{"finalizers":null}}'
    gone_within 15 cm fg-owner || fail "the foreground owner stayed after its dependent went"
    pass "... and goes after its dependent"
}

# 2,000 objects of four kinds over one keep-alive connection; 10 ConfigMaps carry a finalizer.
fill_namespace()
{
    python3 - "$SW_URL" "$SW_TOKEN" "$1" <<'PY'
import http.client, json, ssl, sys
url, token, ns = sys.argv[1:4]
c = http.client.HTTPSConnection(url.split("//")[1], context=ssl._create_unverified_context())
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
kinds = [("/api/v1/namespaces/%s/configmaps", {"data": {"a": "b"}}),
         ("/api/v1/namespaces/%s/secrets", {"stringData": {"a": "b"}}),
         ("/api/v1/namespaces/%s/serviceaccounts", {}),
         ("/apis/image.openshift.io/v1/namespaces/%s/imagestreams", {})]
for i in range(2000):
    path, extra = kinds[i % 4]
    md = {"name": "o-%d" % i}
    if i % 4 == 0 and i < 40:
        md["finalizers"] = ["example.com/f"]
    c.request("POST", path % ns, json.dumps(dict(extra, metadata=md)), h)
    r = c.getresponse()
    r.read()
    if r.status != 201:
        sys.exit("create %d: HTTP %d" % (i, r.status))
PY
}

# cond NS TYPE: "status reason message" of a namespace condition.
cond()
{
    sw_api GET "$NS_API/$1" | sw_json "' '.join(next((c['status'], c['reason'], c['message']) for c in o['status'].get('conditions', []) if c['type'] == '$2'))"
}

check_namespace_content()
{
    expect_ok "create namespace big" kc create ns big
    fill_namespace big || fail "filling namespace big"
    # besides the namespace's own default ServiceAccount and kube-root-ca.crt
    expect_eq "2,000 objects in it" 2000 \
        "$(kc -n big get cm,secrets,sa,is -o name | grep -cv '^configmap/kube-root-ca.crt$\|^serviceaccount/default$')"
    expect_ok "kubectl delete ns big --wait=false" kc delete ns big --wait=false
    local deadline=$(($(date +%s) + 60)) c
    until [ "$(cond big NamespaceContentRemaining)" = "True SomeResourcesRemain Some resources are remaining: configmaps. has 10 resource instances" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "no NamespaceContentRemaining for the 10 held ConfigMaps: $(cond big NamespaceContentRemaining)"
        sleep 0.2
    done
    pass "NamespaceContentRemaining: configmaps. has 10 resource instances"
    expect_eq "NamespaceFinalizersRemaining names the finalizer" \
        "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/f in 10 resource instances" \
        "$(cond big NamespaceFinalizersRemaining)"
    expect_eq "NamespaceDeletionContentFailure: nothing failed" \
        "False ContentDeleted All content successfully deleted, may be waiting on finalization" \
        "$(cond big NamespaceDeletionContentFailure)"
    expect_eq "the namespace is Terminating" Terminating "$(kc get ns big -o 'jsonpath={.status.phase}')"
    expect_eq "everything without a finalizer is gone" "10 0 0 0" \
        "$(kc -n big get cm -o name | wc -l) $(kc -n big get secrets -o name | wc -l) $(kc -n big get sa -o name | wc -l) $(kc -n big get is -o name | wc -l)"
    run kc -n big create cm late
    expect_contains "a create in it is refused" 'configmaps "late" is forbidden: unable to create new content in namespace big because it is being terminated' "$OUT"
    for c in $(kc -n big get cm -o name); do
        kc -n big patch "$c" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null ||
            fail "release $c"
    done
    gone_within 30 ns big || fail "namespace big stayed after its finalizers went"
    pass "... and goes once they are released"
}

# A BuildConfig owns its builds (a controller reference, as OpenShift sets it): deleting it
# deletes them and the sources uploaded for them; --cascade=orphan keeps both.
check_buildconfig_cascade()
{
    local bc
    for bc in bcgone bckeep; do
        [ "$(sw_api POST "$BAPI/buildconfigs" -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' -d "{\"apiVersion\":\"build.openshift.io/v1\",\"kind\":\"BuildConfig\",\"metadata\":{\"name\":\"$bc\"},\"spec\":{\"source\":{\"type\":\"Binary\",\"binary\":{}},\"strategy\":{\"type\":\"Docker\",\"dockerStrategy\":{}},\"output\":{\"to\":{\"kind\":\"DockerImage\",\"name\":\"example.com/x:1\"}}}}")" = 201 ] ||
            fail "create BuildConfig $bc"
        head -c 200000 /dev/urandom >"$SW_TMP/src.bin"
        [ "$(sw_api POST "$BAPI/buildconfigs/$bc/instantiatebinary?asFile=a.bin" -o /dev/null -w '%{http_code}' --data-binary @"$SW_TMP/src.bin")" = 201 ] ||
            fail "upload a source for $bc"
        [ -f "$SW_DIR/sources/default/$bc-1" ] || fail "$bc-1 has no uploaded source"
        expect_eq "$bc-1 names its BuildConfig as its controller owner" "BuildConfig $bc true true" \
            "$(kc get build "$bc-1" -o 'jsonpath={.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.metadata.ownerReferences[0].blockOwnerDeletion}')"
    done
    expect_ok "kubectl delete bc bcgone" kc delete bc bcgone --timeout=60s
    gone_within 15 build bcgone-1 || fail "bcgone-1 outlived its BuildConfig"
    pass "deleting a BuildConfig deletes its builds"
    [ -e "$SW_DIR/sources/default/bcgone-1" ] && fail "bcgone-1's uploaded source stayed behind"
    pass "... and their uploaded sources"
    expect_ok "kubectl delete bc bckeep --cascade=orphan" kc delete bc bckeep --cascade=orphan --timeout=60s
    sleep 1
    expect_ok "--cascade=orphan keeps the build" kc get build bckeep-1
    expect_eq "... without its reference" "" "$(kc get build bckeep-1 -o 'jsonpath={.metadata.ownerReferences}')"
    [ -f "$SW_DIR/sources/default/bckeep-1" ] || fail "the orphaned build lost its source"
    pass "... and its uploaded source"
}

# `slipway controllers` started while its server is down: the collector and the namespace
# controller start once the server first answers (they once decided "not slipway" after 10 s
# and never ran); a list that runs nothing is refused.
check_standalone_controllers()
{
    expect_exit "--controllers=-build runs nothing: refused" 2 \
        "$SLIPWAY" controllers --kubeconfig "$KUBECONFIG" --controllers=-build
    expect_contains "... and says how to leave one out" "*,-NAME" "$OUT"
    kill -TERM "$SW_PID"
    wait "$SW_PID" 2>/dev/null
    SW_PID=
    "$SLIPWAY" controllers --kubeconfig "$KUBECONFIG" >"$SW_TMP/controllers.log" 2>&1 &
    local ctl=$!
    SW_BG_PIDS+=("$ctl")
    sleep 2 # the controllers come up first, against a server that is not there
    sw_restart_server
    expect_ok "a namespace to delete" kc create ns late
    expect_ok "kubectl delete ns (the standalone namespace controller empties it)" \
        kc delete ns late --timeout=60s
    kill -TERM "$ctl"
    local t0=$SECONDS
    wait "$ctl"
    expect_eq "slipway controllers exits 0 on SIGTERM" 0 "$?"
    expect_eq "... at once" 1 "$((SECONDS - t0 < 5))"
}

check_dry_run
check_cascade
check_namespace_content
check_buildconfig_cascade
check_standalone_controllers
sw_finish
