#!/usr/bin/env bash
# test_rbac.sh: RBAC end to end with kubectl (issue 17). The bootstrap roles exist; the admin
# kubeconfig is system:masters; a ServiceAccount token from `kubectl create token` (a signed
# JWT with audience and expiry) is denied, then allowed by a RoleBinding in its namespace only,
# and denied again when the binding goes; `kubectl auth whoami`, `auth can-i` and `can-i --list`
# answer as kube-apiserver does; view reads ImageStreams but not Secrets; ClusterRole
# aggregation; /metrics needs get on the URL; TokenReview with audiences; a token dies with its
# ServiceAccount, with a wrong signature, or for another audience; the RBAC kinds are
# validated; a user may not grant what it does not hold (escalation); decisions survive a
# restart.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

sw_start_server

run kc get clusterroles -o name
for r in cluster-admin admin edit view system:image-puller system:image-builder registry-viewer \
    registry-editor system:discovery system:basic-user; do
    expect_contains "bootstrap ClusterRole $r" "clusterrole.rbac.authorization.k8s.io/$r
" "$OUT
"
done
expect_ok "the admin kubeconfig: whoami" kc auth whoami
expect_match "  it is slipway-admin" '^Username +slipway-admin$' "$OUT"
expect_contains "  in system:masters" "system:masters" "$OUT"
expect_ok "  and may do anything" kc auth can-i '*' '*' --all-namespaces

expect_ok "a ServiceAccount" kc create serviceaccount robot
expect_ok "kubectl create token" kc create token robot
TOKEN=$OUT
claims() { python3 -c 'import base64, json, sys
p = sys.argv[1].split(".")[1]
print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))), sort_keys=True))' "$1"; }
C=$(claims "$TOKEN")
expect_eq "  its subject" "system:serviceaccount:default:robot" "$(sw_json 'o["sub"]' <<<"$C")"
expect_eq "  its audience is the API server's" '["https://kubernetes.default.svc.cluster.local"]' \
    "$(sw_json 'o["aud"]' <<<"$C")"
expect_eq "  it expires in an hour" 3600 "$(sw_json 'o["exp"] - o["iat"]' <<<"$C")"
expect_eq "  it names the ServiceAccount's uid" "$(kc get sa robot -o jsonpath='{.metadata.uid}')" \
    "$(sw_json 'o["kubernetes.io"]["serviceaccount"]["uid"]' <<<"$C")"
expect_ok "--duration 20m" kc create token robot --duration 20m
expect_eq "  expires in 20 minutes" 1200 "$(claims "$OUT" | sw_json 'o["exp"] - o["iat"]')"
expect_fails "--duration 1m is refused" "less than 10 minutes" kc create token robot --duration 1m
expect_fails "a token for a missing ServiceAccount" "serviceaccounts \"nobody\" not found" kc create token nobody
rb() { kubectl --request-timeout=30s --token="$TOKEN" "$@"; }

expect_ok "whoami with the token" rb auth whoami
expect_match "  names the ServiceAccount" '^Username +system:serviceaccount:default:robot$' "$OUT"
expect_contains "  with its groups" "[system:serviceaccounts system:serviceaccounts:default system:authenticated]" "$OUT"
expect_fails "without a binding it may not list ImageStreams" \
    'imagestreams.image.openshift.io is forbidden: User "system:serviceaccount:default:robot" cannot list resource "imagestreams" in API group "image.openshift.io" in the namespace "default"' \
    rb get imagestreams
expect_exit "can-i list imagestreams: no" 1 rb auth can-i list imagestreams
expect_eq "  prints no" no "$OUT"
expect_ok "discovery works for every authenticated user" rb api-resources --api-group=image.openshift.io
expect_fails "nor read /metrics" 'forbidden: User "system:serviceaccount:default:robot" cannot get path "/metrics"' \
    rb get --raw /metrics

expect_ok "a RoleBinding to view" kc create rolebinding robot-view --clusterrole=view \
    --serviceaccount=default:robot
expect_ok "now it lists ImageStreams" rb get imagestreams
expect_exit "can-i list imagestreams: yes" 0 rb auth can-i list imagestreams
expect_fails "but not Secrets (view has none)" \
    'secrets is forbidden: User "system:serviceaccount:default:robot" cannot list resource "secrets"' \
    rb get secrets
expect_exit "can-i get secrets: no" 1 rb auth can-i get secrets
expect_exit "can-i create imagestreams: no" 1 rb auth can-i create imagestreams
expect_fails "nor get one Secret by name" 'secrets "x" is forbidden' rb get secret x
expect_fails "the RoleBinding counts in its namespace only" \
    'in the namespace "kube-system"' rb get imagestreams -n kube-system
expect_exit "can-i in kube-system: no" 1 rb auth can-i list imagestreams -n kube-system
expect_ok "can-i --list" rb auth can-i --list
expect_match "  lists imagestreams with view's verbs" \
    '^imagestreams.image.openshift.io +\[\] +\[\] +\[get list watch\]$' "$OUT"
expect_match "  and the discovery URLs" '^ +\[/apis/\*\] +\[\] +\[get\]$' "$OUT"
expect_not_contains "  and no secrets" "secrets " "$OUT"
expect_ok "a watch is authorized as watch" rb get imagestreams --watch --request-timeout=1s \
    -o name
expect_ok "a view ClusterRoleBinding instead" kc delete rolebinding robot-view
wait_for "  the deleted binding no longer allows" 5 bash -c \
    "! kubectl --token='$TOKEN' get imagestreams"

# aggregation: a ClusterRole labelled aggregate-to-view adds its rules to view (and so to
# edit and admin, which aggregate view's label in turn)
expect_ok "a ClusterRole aggregated into view" kc apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-reader
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list]}
EOF
expect_ok "bind admin in namespace team" kc create namespace team
expect_ok "  the binding" kc create rolebinding robot-admin -n team --clusterrole=admin \
    --serviceaccount=default:robot
ssar() { # VERB GROUP RESOURCE NS -> allowed
    curl -sSk --max-time 10 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\",\"spec\":{\"resourceAttributes\":{\"verb\":\"$1\",\"group\":\"$2\",\"resource\":\"$3\",\"namespace\":\"$4\"}}}" \
        "$SW_URL/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" | sw_json 'at("status.allowed")'
}
expect_eq "admin holds view's aggregated widget rule (admin > edit > view)" true \
    "$(ssar list example.com widgets team)"
expect_eq "  but not a verb the rule lacks" false "$(ssar delete example.com widgets team)"
expect_eq "admin may read Secrets in team" true "$(ssar get '' secrets team)"
expect_eq "  and create RoleBindings there" true "$(ssar create rbac.authorization.k8s.io rolebindings team)"
expect_eq "  not in default" false "$(ssar get '' secrets default)"
expect_eq "admin may start builds (buildconfigs/instantiate) in team" true "$(ssar create build.openshift.io buildconfigs/instantiate team)"

# escalation: a namespace admin may bind the roles it holds, not more
expect_ok "  it binds edit to another ServiceAccount in team" rb create rolebinding helper -n team \
    --clusterrole=edit --serviceaccount=team:helper
expect_fails "  but not cluster-admin's rules" "forbidden" rb create rolebinding up -n team \
    --clusterrole=cluster-admin --serviceaccount=default:robot
expect_fails "  nor a Role with more than it holds" "forbidden" rb create role allpods -n team \
    --verb="*" --resource=pods
expect_ok "  a Role within what it holds" rb create role cm-reader -n team --verb=get \
    --resource=configmaps

# the image roles
expect_ok "registry-editor bound to robot in team" kc create rolebinding robot-reg -n team \
    --clusterrole=registry-editor --serviceaccount=default:robot
expect_eq "  registry-editor creates ImageStreams" true "$(ssar create image.openshift.io imagestreams team)"
expect_ok "system:image-puller in default" kc create rolebinding robot-pull \
    --clusterrole=system:image-puller --serviceaccount=default:robot
expect_eq "  pulls layers" true "$(ssar get image.openshift.io imagestreams/layers default)"
expect_eq "  but pushes none" false "$(ssar update image.openshift.io imagestreams/layers default)"
expect_eq "  nor lists ImageStreams" false "$(ssar list image.openshift.io imagestreams default)"

# /metrics with system:monitoring
expect_ok "system:monitoring for robot" kc create clusterrolebinding robot-metrics \
    --clusterrole=system:monitoring --serviceaccount=default:robot
expect_ok "  then /metrics answers" rb get --raw /metrics
expect_contains "  with the request counters" "apiserver_request_total" "$OUT"

# TokenReview and audiences
tokenreview() { # TOKEN [AUDIENCE]
    local aud=${2:+,\"audiences\":[\"$2\"]}
    sw_api POST /apis/authentication.k8s.io/v1/tokenreviews -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$1\"$aud}}"
}
expect_eq "TokenReview of the token" "true system:serviceaccount:default:robot" \
    "$(tokenreview "$TOKEN" | sw_json 'str(at("status.authenticated")).lower() + " " + at("status.user.username")')"
expect_ok "a token for audience vault" kc create token robot --audience vault
VTOKEN=$OUT
expect_eq "  the API server refuses it" 401 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $VTOKEN" "$SW_URL/api/v1/namespaces/default/configmaps")"
expect_eq "  TokenReview for vault accepts it" "true [\"vault\"]" \
    "$(tokenreview "$VTOKEN" vault | sw_json 'str(at("status.authenticated")).lower() + " " + json.dumps(at("status.audiences"))')"
expect_eq "  TokenReview for the API server does not" false \
    "$(tokenreview "$VTOKEN" | sw_json 'str(at("status.authenticated")).lower()')"
BAD=${TOKEN%?}$([ "${TOKEN: -1}" = A ] && echo B || echo A)
expect_eq "a token with a changed signature: 401" 401 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $BAD" "$SW_URL/api/v1/namespaces/default/configmaps")"
expect_eq "  TokenReview says not authenticated" false \
    "$(tokenreview "$BAD" | sw_json 'str(at("status.authenticated")).lower()')"
RULES=$(curl -sSk -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"team"}}' \
    "$SW_URL/apis/authorization.k8s.io/v1/selfsubjectrulesreviews")
expect_eq "  has rules and is complete" "True False" \
    "$(sw_json 'str(len(at("status.resourceRules")) > 10) + " " + str(at("status.incomplete"))' <<<"$RULES")"

# validation
expect_fails "a RoleBinding to a Deployment" "roleRef.kind: Unsupported value" kc apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bad}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Deployment, name: x}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: u}]
EOF
expect_ok "a RoleBinding to view" kc create rolebinding rb1 --clusterrole=view --user=u
expect_fails "  whose roleRef cannot change" "cannot change roleRef" kc patch rolebinding rb1 \
    --type=merge -p '{"roleRef":{"name":"edit"}}'
expect_fails "a Role with non-resource URLs" "namespaced rules cannot apply to non-resource URLs" \
    kc apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bad}
rules: [{verbs: [get], nonResourceURLs: [/metrics]}]
EOF
printf '%s' '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"empty"},"rules":[{"verbs":[],"apiGroups":[""],"resources":["pods"]}]}' \
    >"$SW_TMP/empty.json"
expect_fails "a rule without verbs" "verbs: Required value" kc create -f "$SW_TMP/empty.json"

# the token dies with its ServiceAccount, even if one of the same name comes back
sw_restart_server
expect_ok "  robot still reads team's Secrets" rb get secrets -n team
expect_ok "delete the ServiceAccount" kc delete serviceaccount robot
expect_eq "  its token: 401" 401 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $TOKEN" "$SW_URL/api/v1/namespaces/default/configmaps")"
expect_ok "  one of the same name again" kc create serviceaccount robot
expect_eq "  the old token still 401" 401 "$(curl -sk -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer $TOKEN" "$SW_URL/api/v1/namespaces/default/configmaps")"
expect_not_contains "no token in the log" "${TOKEN:40:40}" "$(cat "$SW_LOG")"
sw_finish
