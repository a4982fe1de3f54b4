#!/usr/bin/env bash
# test_etcd_tls: slipway on an etcd that serves HTTPS and requires client certificates
# (--client-cert-auth), through --etcd-cafile, --etcd-certfile and --etcd-keyfile: the server
# starts, kubectl writes and reads through it, a watch sees the write; without the client
# certificate, or trusting another CA, the server refuses to start with a clear error.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

PKI=$SW_TMP/pki
mkdir -p "$PKI"
cert()
{
    # cert NAME SUBJECT [EXTFILE-LINES]: a key and a certificate NAME signed by the test CA
    local name=$1 subj=$2 ext=$3
    openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" \
        -out "$PKI/$name.csr" 2>/dev/null || fail "openssl req $name"
    printf '%b' "$ext" >"$PKI/$name.ext"
    openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
        -CAcreateserial -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null ||
        fail "openssl x509 $name"
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 2 \
    -subj "/CN=etcd test CA" 2>/dev/null || fail "openssl CA"
# etcd's gateway dials its own gRPC port with the server certificate: it is a client too
cert server "/CN=etcd" "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"
cert client "/CN=slipway" "extendedKeyUsage=clientAuth\n"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/other.key" -out "$PKI/other.crt" \
    -days 2 -subj "/CN=another CA" 2>/dev/null || fail "openssl other CA"

read -r C P <<<"$(sw_free_port) $(sw_free_port)"
[ "$C" != "$P" ] || P=$((C + 1))
etcd --name tls --data-dir "$SW_TMP/etcd" --listen-client-urls "https://127.0.0.1:$C" \
    --advertise-client-urls "https://127.0.0.1:$C" --listen-peer-urls "http://127.0.0.1:$P" \
    --initial-advertise-peer-urls "http://127.0.0.1:$P" --initial-cluster "tls=http://127.0.0.1:$P" \
    --cert-file "$PKI/server.crt" --key-file "$PKI/server.key" --trusted-ca-file "$PKI/ca.crt" \
    --client-cert-auth >"$SW_TMP/etcd.log" 2>&1 </dev/null &
SW_ETCD_PIDS+=($!)
etcd_up()
{
    curl -s --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
        -X POST -d '{}' "https://127.0.0.1:$C/v3/maintenance/status" | grep -q '"version"'
}
wait_for "etcd serves HTTPS with client-certificate authentication" 20 etcd_up

expect_fails "without a client certificate the server does not start" "etcd" \
    "$SLIPWAY" server --data-dir "$SW_TMP/nocert" --listen "127.0.0.1:$(sw_free_port)" \
    --store "etcd://127.0.0.1:$C" --etcd-cafile "$PKI/ca.crt"
expect_fails "trusting another CA it does not start either" "etcd" \
    "$SLIPWAY" server --data-dir "$SW_TMP/othca" --listen "127.0.0.1:$(sw_free_port)" \
    --store "etcd://127.0.0.1:$C" --etcd-cafile "$PKI/other.crt" \
    --etcd-certfile "$PKI/client.crt" --etcd-keyfile "$PKI/client.key"

sw_start_server --store "etcd://127.0.0.1:$C" --etcd-cafile "$PKI/ca.crt" \
    --etcd-certfile "$PKI/client.crt" --etcd-keyfile "$PKI/client.key"
RV=$(kc get namespace default -o jsonpath='{.metadata.resourceVersion}')
curl -sk -N --max-time 8 -H "Authorization: Bearer $SW_TOKEN" \
    "$SW_URL/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$RV&timeoutSeconds=4" \
    >"$SW_TMP/watch.out" &
W=$!
sleep 0.5
expect_ok "kubectl creates a ConfigMap through a server on TLS etcd" \
    kc create configmap over-tls --from-literal=k=v
expect_eq "... and reads it back" v "$(kc get configmap over-tls -o jsonpath='{.data.k}')"
wait "$W"
expect_contains "a watch sees it" '"name":"over-tls"' "$(cat "$SW_TMP/watch.out")"
expect_eq "the object is in etcd under /registry" 1 \
    "$(ETCDCTL_API=3 etcdctl --endpoints "https://127.0.0.1:$C" --cacert "$PKI/ca.crt" \
        --cert "$PKI/client.crt" --key "$PKI/client.key" get --prefix --keys-only \
        /registry/core/configmaps/default/over-tls | grep -c over-tls)"
sw_stop_server
echo "PASS [$SW_NAME]: $SW_CHECKS checks"
