#!/usr/bin/env bash
# live_client.sh: the registry client against Debian's real docker-registry (ctest
# e2e/registry_client). Starts three registries on free 127.0.0.1 ports (one open, one behind
# htpasswd basic auth, one serving the open one's storage over TLS with a self-signed
# certificate), builds small images with umoci (amd64, arm64, and an OCI index of both), pushes
# them with skopeo as OCI, as Docker schema2 (--format v2s2) and as a multi-platform index
# (--all), records the digests skopeo reports, then runs the cmocka binary given as $1
# (tests/registry/test_live.c) with SW_REGISTRY* set. Every process it starts is stopped and the
# temporary directory removed on every exit path.
set -u
set -o pipefail

LIVE_BIN=${1:-${SW_LIVE_TEST_BIN:-}}
[ -n "$LIVE_BIN" ] && [ -x "$LIVE_BIN" ] || {
    echo "usage: live_client.sh PATH/TO/registry_test_live" >&2
    exit 2
}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/registry.sh"
reg_script live_client
export HOME=$TMP # skopeo and umoci write nothing into the real home
START=$(date +%s)

read -r PORT AUTH_PORT TLS_PORT DOWN_PORT <<<"$(reg_free_ports 4)" || fail "no free ports"
USER_NAME=slipuser
PASSWORD=pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')

reg_start open "$PORT"
reg_start auth "$AUTH_PORT" --htpasswd "$(reg_htpasswd "$USER_NAME" "$PASSWORD")"
# The same storage as "open", over TLS with a self-signed certificate (HTTP/2 through ALPN).
read -r CERT KEY <<<"$(reg_selfsigned tls)"
reg_start tls "$TLS_PORT" --tls "$CERT" "$KEY" --store open

reg_build_image amd amd64 hello.txt
reg_build_image arm arm64 arm.txt
reg_build_index multi amd arm

REG=127.0.0.1:$PORT
AREG=127.0.0.1:$AUTH_PORT
reg_push amd "$REG/demo/oci:v1"
reg_push amd "$REG/demo/oci:v2"
reg_push amd "$REG/demo/oci:latest"
reg_push amd "$REG/demo/docker:v1" --format v2s2
reg_push multi "$REG/demo/multi:v1" --all
reg_push arm "$AREG/private/app:v1" --dest-creds "$USER_NAME:$PASSWORD"

DIGEST_OCI=$(reg_digest "$REG/demo/oci:v1") || fail "skopeo inspect demo/oci"
DIGEST_DOCKER=$(reg_digest "$REG/demo/docker:v1") || fail "skopeo inspect demo/docker"
DIGEST_INDEX=$(reg_digest "$REG/demo/multi:v1") || fail "skopeo inspect demo/multi"
RAW_INDEX=sha256:$(reg_raw "$REG/demo/multi:v1" | sha256sum | cut -d' ' -f1)
DIGEST_AUTH=$(reg_digest "$AREG/private/app:v1" --creds "$USER_NAME:$PASSWORD") ||
    fail "skopeo inspect private/app"
[ "$RAW_INDEX" = "$DIGEST_INDEX" ] ||
    fail "skopeo reports $DIGEST_INDEX for the index, its raw manifest hashes to $RAW_INDEX"
echo "pushed in $(($(date +%s) - START)) s: oci=$DIGEST_OCI docker=$DIGEST_DOCKER index=$DIGEST_INDEX"

SW_REGISTRY=$REG SW_REGISTRY_AUTH=$AREG SW_REGISTRY_DOWN=127.0.0.1:$DOWN_PORT \
    SW_REGISTRY_TLS=127.0.0.1:$TLS_PORT \
    SW_REGISTRY_USER=$USER_NAME SW_REGISTRY_PASS=$PASSWORD \
    SW_DIGEST_OCI=$DIGEST_OCI SW_DIGEST_DOCKER=$DIGEST_DOCKER SW_DIGEST_INDEX=$DIGEST_INDEX \
    SW_DIGEST_AUTH=$DIGEST_AUTH \
    "$LIVE_BIN" || fail "the live client test failed"

reg_alive || fail "a registry died during the test"
echo "live_client: ok in $(($(date +%s) - START)) s"
