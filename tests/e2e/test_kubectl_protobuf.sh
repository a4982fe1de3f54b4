#!/usr/bin/env bash
# test_kubectl_protobuf.sh: kubectl's `create` generators post protobuf bodies (k8s\0 +
# runtime.Unknown). Creates a ConfigMap, a generic Secret, a docker-registry Secret, a Namespace
# and a ServiceAccount that way against `slipway server`, then reads them back as JSON through
# kubectl's jsonpath: data values, Secret types, the decoded .dockerconfigjson (server, username,
# password, auth) and the new Namespace's Active phase. A kind the server does not decode gets a
# 415 that names it, a malformed body a 400; a protobuf DeleteOptions (as client-go sends) is
# honoured. Any mismatch exits non-zero.
. "$(dirname "$0")/lib.sh"

# jp OBJ... PATH: one field through kubectl's own jsonpath.
jp()
{
    local path=${*: -1}
    kc get "${@:1:$#-1}" -o "jsonpath=$path"
}

b64d()
{
    printf '%s' "$1" | base64 -d
}

check_configmap()
{
    expect_ok "create configmap (protobuf)" kc create configmap c --from-literal=a=b -n default
    expect_eq "create configmap message" "configmap/c created" "$OUT"
    expect_eq "configmap data" "b" "$(jp configmap c -n default '{.data.a}')"
    expect_eq "configmap has no binaryData" "" "$(jp configmap c -n default '{.binaryData}')"
    expect_match "configmap got a uid" '^[0-9a-f-]{36}$' "$(jp configmap c -n default '{.metadata.uid}')"
}

check_secret_generic()
{
    expect_ok "create secret generic (protobuf)" kc create secret generic s --from-literal=p=q -n default
    expect_eq "create secret message" "secret/s created" "$OUT"
    expect_eq "generic secret data" "q" "$(b64d "$(jp secret s -n default '{.data.p}')")"
    expect_eq "generic secret type" "Opaque" "$(jp secret s -n default '{.type}')"
    expect_eq "no stringData stored" "" "$(jp secret s -n default '{.stringData}')"
}

check_secret_docker()
{
    local cfg
    expect_ok "create secret docker-registry (protobuf)" kc create secret docker-registry r \
        --docker-server=reg.local:5000 --docker-username=u --docker-password=p -n default
    expect_eq "create docker secret message" "secret/r created" "$OUT"
    expect_eq "docker secret type" "kubernetes.io/dockerconfigjson" "$(jp secret r -n default '{.type}')"
    cfg=$(b64d "$(jp secret r -n default '{.data.\.dockerconfigjson}')")
    [ -n "$cfg" ] || fail "docker secret: empty .dockerconfigjson"
    expect_eq ".dockerconfigjson server, username, password, auth" "reg.local:5000 u p u:p" \
        "$(printf '%s' "$cfg" | python3 -c '
import base64, json, sys
auths = json.load(sys.stdin)["auths"]
(server, entry), = auths.items()
print(server, entry["username"], entry["password"], base64.b64decode(entry["auth"]).decode())')"
}

check_namespace()
{
    expect_ok "create namespace (protobuf)" kc create namespace n
    expect_eq "create namespace message" "namespace/n created" "$OUT"
    expect_eq "namespace is Active" "Active" "$(jp namespace n '{.status.phase}')"
    expect_ok "create configmap in the new namespace" kc create configmap inner --from-literal=k=v -n n
    expect_eq "configmap in the new namespace" "v" "$(jp configmap inner -n n '{.data.k}')"
}

check_service_account()
{
    expect_ok "create serviceaccount (protobuf)" kc create serviceaccount sa -n default
    expect_eq "create serviceaccount message" "serviceaccount/sa created" "$OUT"
    expect_eq "serviceaccount name" "sa" "$(jp serviceaccount sa -n default '{.metadata.name}')"
}

check_conflict_and_unsupported()
{
    expect_fails "a second create is AlreadyExists" 'configmaps "c" already exists' \
        kc create configmap c --from-literal=a=b -n default
    expect_fails "a kind slipway does not serve gets 404, as from kube-apiserver" \
        "the server could not find the requested resource" kc create priorityclass pc --value=5
    expect_ok "kubectl create token: a protobuf TokenRequest" kc create token sa -n default
    expect_match "  answered with a signed token" '^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' \
        "$OUT"
    expect_ok "kubectl create rolebinding (protobuf)" kc create rolebinding rb -n default \
        --clusterrole=view --serviceaccount=default:sa
    expect_eq "  its roleRef" "ClusterRole/view" \
        "$(jp rolebinding rb -n default '{.roleRef.kind}/{.roleRef.name}')"
}

check_raw_bad_body()
{
    local code
    code=$(curl -sk --max-time 10 -o "$SW_TMP/bad.json" -w '%{http_code}' \
        -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/vnd.kubernetes.protobuf' \
        --data-binary 'k8s-not-protobuf' "$SW_URL/api/v1/namespaces/default/configmaps")
    expect_eq "malformed protobuf body is a 400" 400 "$code"
    expect_contains "400 Status names the magic" "magic" "$(cat "$SW_TMP/bad.json")"
}

# pb_delete NAME BODYFILE: DELETE secret NAME with a protobuf DeleteOptions body; prints the code.
pb_delete()
{
    curl -sk --max-time 10 -o "$SW_TMP/del.json" -w '%{http_code}' -X DELETE \
        -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/vnd.kubernetes.protobuf' \
        --data-binary "@$2" "$SW_URL/api/v1/namespaces/default/secrets/$1"
}

# client-go typed clients send DeleteOptions as protobuf too (kubectl does not): a precondition
# on the wrong uid must be honoured (409), an empty DeleteOptions deletes.
check_delete_options()
{
    # k8s\0, typeMeta{v1, DeleteOptions}, raw{preconditions{uid: "wrong"}}
    printf 'k8s\x00\x0a\x13\x0a\x02v1\x12\x0dDeleteOptions\x12\x09\x12\x07\x0a\x05wrong' \
        >"$SW_TMP/del-wrong.bin"
    printf 'k8s\x00\x0a\x13\x0a\x02v1\x12\x0dDeleteOptions\x12\x00' >"$SW_TMP/del-plain.bin"
    expect_eq "protobuf DeleteOptions precondition is honoured" 409 "$(pb_delete s "$SW_TMP/del-wrong.bin")"
    expect_contains "409 names the precondition" "recondition" "$(cat "$SW_TMP/del.json")"
    expect_eq "protobuf DeleteOptions delete" 200 "$(pb_delete s "$SW_TMP/del-plain.bin")"
    expect_fails "deleted secret is gone" "NotFound" kc get secret s -n default
}

sw_start_server
check_configmap
check_secret_generic
check_secret_docker
check_namespace
check_service_account
check_conflict_and_unsupported
check_raw_bad_body
check_delete_options
sw_finish
