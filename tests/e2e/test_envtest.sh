#!/usr/bin/env bash
# test_envtest.sh: controller-runtime envtest's start sequence (crd-gc.md §1.16), step by step,
# against `slipway envtest-assets`: the assets directory (kube-apiserver is slipway, etcd and
# kubectl are Debian's), the `--help` probe for --insecure-port, etcd started and its /health
# polled as envtest does, the pre-written serving pair in --cert-dir, kube-apiserver started
# with envtest's exact flags, /healthz polled without verification, client-certificate
# authentication as admin (CN admin, O system:masters; a certificate from another CA refused),
# namespace default, a CRD installed as JSON and discovery polled every 100 ms until its plural
# is there; then kubectl with the client-certificate kubeconfig envtest writes. The whole start
# is timed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null || fail "openssl is needed to write envtest's certificates"
ASSETS=$SW_TMP/assets
D=$SW_TMP/certs
mkdir -p "$D"
expect_ok "slipway envtest-assets" "$SLIPWAY" envtest-assets "$ASSETS"
expect_ok "assets: kube-apiserver, etcd, kubectl" test -x "$ASSETS/kube-apiserver" -a -x "$ASSETS/etcd" -a -x "$ASSETS/kubectl"
expect_exit "envtest-assets without a directory: exit 2" 2 "$SLIPWAY" envtest-assets

# envtest's flag probe: kube-apiserver --help, grepping for --insecure-port
expect_ok "kube-apiserver --help" "$ASSETS/kube-apiserver" --help
expect_contains "--help lists --secure-port" "--secure-port" "$OUT"
expect_not_contains "no --insecure-port (envtest then leaves it out)" "--insecure-port" "$OUT"

# the certificates envtest writes: a serving pair and a client CA with an admin client cert
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$D/apiserver.key" -out "$D/apiserver.crt" 2>/dev/null ||
    fail "serving certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=client-ca \
    -keyout "$D/client-cert-auth-ca.key" -out "$D/client-cert-auth-ca.crt" 2>/dev/null || fail "client CA"
client_cert() { # NAME SUBJECT CA
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
        -keyout "$D/$1.key" -out "$D/$1.csr" 2>/dev/null &&
        openssl x509 -req -in "$D/$1.csr" -CA "$D/$3.crt" -CAkey "$D/$3.key" -CAcreateserial \
            -days 1 -out "$D/$1.crt" 2>/dev/null
}
client_cert admin "/O=system:masters/CN=admin" client-cert-auth-ca || fail "admin client certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=other-ca \
    -keyout "$D/other-ca.key" -out "$D/other-ca.crt" 2>/dev/null || fail "other CA"
client_cert intruder "/O=system:masters/CN=intruder" other-ca || fail "intruder certificate"
SERVING_SHA=$(openssl x509 -in "$D/apiserver.crt" -noout -fingerprint -sha256)

T0=$(date +%s%N)
# etcd first, as envtest does, and its /health
EPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sw_bg "$ASSETS/etcd" --data-dir "$SW_TMP/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
    --advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$PPORT" \
    >"$SW_TMP/etcd.log" 2>&1
wait_for "etcd /health" 20 bash -c "curl -fs http://127.0.0.1:$EPORT/health | grep -q true"
T_ETCD=$(date +%s%N)

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SW_LOG=$SW_TMP/server.log
"$ASSETS/kube-apiserver" --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount --cert-dir="$D" --authorization-mode=RBAC \
    --secure-port="$PORT" --bind-address=127.0.0.1 \
    --service-account-issuer="https://127.0.0.1:$PORT/" \
    --service-account-key-file="$D/sa-signer.crt" \
    --service-account-signing-key-file="$D/sa-signer.key" \
    --etcd-servers="http://127.0.0.1:$EPORT" --client-ca-file="$D/client-cert-auth-ca.crt" \
    >"$SW_LOG" 2>&1 &
SW_PID=$!
URL=https://127.0.0.1:$PORT
SW_URL=$URL # for sw_finish
# envtest polls /healthz without verifying the certificate; polled every 10 ms here, to time it
deadline=$(($(date +%s) + 20))
until curl -fsk --max-time 2 "$URL/healthz" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "GET /healthz: not 200 within 20 s"
    kill -0 "$SW_PID" 2>/dev/null || fail "kube-apiserver (slipway) exited"
    sleep 0.01
done
T_HEALTHY=$(date +%s%N)
pass "GET /healthz without verification: 200"
expect_eq "it serves the pre-written certificate" "$SERVING_SHA" \
    "$(openssl s_client -connect "127.0.0.1:$PORT" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256)"

adm=(--cacert "$D/apiserver.crt" --cert "$D/admin.crt" --key "$D/admin.key")
wait_for "namespace default, as admin by client certificate" 5 curl -fs "${adm[@]}" "$URL/api/v1/namespaces/default"
T_DEFAULT=$(date +%s%N)
expect_eq "no certificate, no token: 401" 401 "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$D/apiserver.crt" "$URL/api/v1/namespaces")"
expect_eq "a certificate from another CA: refused" 401 \
    "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$D/apiserver.crt" --cert "$D/intruder.crt" --key "$D/intruder.key" "$URL/api/v1/namespaces" 2>/dev/null || echo refused)"

CRD='{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"notebookimages.example.opendatahub.io"},
 "spec":{"group":"example.opendatahub.io","scope":"Namespaced",
  "names":{"plural":"notebookimages","kind":"NotebookImage"},
  "versions":[{"name":"v1alpha1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}'
T_CRD=$(date +%s%N)
expect_eq "CRD installed as JSON: 201" 201 "$(curl -s -o /dev/null -w '%{http_code}' "${adm[@]}" -X POST \
    -H 'Content-Type: application/json' --data "$CRD" "$URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions")"
polls=0
until curl -fs "${adm[@]}" "$URL/apis/example.opendatahub.io/v1alpha1" | grep -q '"name":"notebookimages"'; do
    polls=$((polls + 1))
    [ "$polls" -lt 100 ] || fail "the CRD's plural never appeared in discovery (10 s of 100 ms polls)"
    sleep 0.1
done
pass "discovery lists notebookimages after $polls polls of 100 ms"
T_END=$(date +%s%N)

# kubectl with the kubeconfig envtest writes: the client certificate, no token
cat >"$SW_TMP/envtest.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: envtest, cluster: {server: "$URL", certificate-authority: "$D/apiserver.crt"}}]
users: [{name: envtest, user: {client-certificate: "$D/admin.crt", client-key: "$D/admin.key"}}]
contexts: [{name: envtest, context: {cluster: envtest, user: envtest}}]
current-context: envtest
EOF
expect_ok "kubectl through the envtest kubeconfig" "$ASSETS/kubectl" --kubeconfig "$SW_TMP/envtest.kubeconfig" \
    create -n default -f - <<<'{"apiVersion":"example.opendatahub.io/v1alpha1","kind":"NotebookImage","metadata":{"name":"jupyter"},"spec":{"x":1}}'
expect_ok "kubectl get it" "$ASSETS/kubectl" --kubeconfig "$SW_TMP/envtest.kubeconfig" get notebookimages -n default jupyter
expect_ok "the data dir went into the cert dir" test -f "$D/slipway-data/state.db"
ms() { echo $((($2 - $1) / 1000000)); }
echo "# etcd to healthy: $(ms "$T0" "$T_ETCD") ms; kube-apiserver (slipway) start to /healthz: $(ms "$T_ETCD" "$T_HEALTHY") ms;" \
    "to namespace default: $(ms "$T_ETCD" "$T_DEFAULT") ms; CRD to discovery: $(ms "$T_CRD" "$T_END") ms; whole start: $(ms "$T0" "$T_END") ms"
sw_finish
