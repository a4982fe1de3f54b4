#!/usr/bin/env bash
# live_push.sh: the registry push client against Debian's real docker-registry (ctest
# e2e/registry_push). Starts two registries on free 127.0.0.1 ports (one open, one behind
# htpasswd basic auth), runs the cmocka binary given as $1 (tests/registry/test_push_live.c),
# which pushes images and lists them in $SW_PUSH_RESULTS as "REF DIGEST FILE SIZE [auth]", then
# checks each one with the real tools: skopeo inspect reports our digest, skopeo copy to an OCI
# layout succeeds (it verifies every blob), and umoci unpack (which checks each layer against
# the config's diff_ids) yields FILE with SIZE bytes. Every process it starts is stopped and the
# temporary directory removed on every exit path.
set -u
set -o pipefail

LIVE_BIN=${1:-${SW_LIVE_PUSH_BIN:-}}
[ -n "$LIVE_BIN" ] && [ -x "$LIVE_BIN" ] || {
    echo "usage: live_push.sh PATH/TO/registry_test_push_live" >&2
    exit 2
}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/registry.sh"
reg_script live_push
export HOME=$TMP # skopeo and umoci write nothing into the real home
START=$(date +%s)

read -r PORT AUTH_PORT <<<"$(reg_free_ports 2)" || fail "no free ports"
USER_NAME=pushuser
PASSWORD=pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
reg_start open "$PORT"
reg_start auth "$AUTH_PORT" --htpasswd "$(reg_htpasswd "$USER_NAME" "$PASSWORD")"

RESULTS=$TMP/results
: >"$RESULTS"
SW_REGISTRY=127.0.0.1:$PORT SW_REGISTRY_AUTH=127.0.0.1:$AUTH_PORT \
    SW_REGISTRY_USER=$USER_NAME SW_REGISTRY_PASS=$PASSWORD SW_PUSH_RESULTS=$RESULTS \
    "$LIVE_BIN" || fail "the live push test failed"
[ "$(wc -l <"$RESULTS")" -ge 3 ] || fail "expected at least 3 pushed images, got: $(cat "$RESULTS")"

n=0
while read -r ref digest file size auth; do
    n=$((n + 1))
    creds=()
    [ "$auth" = auth ] && creds=(--creds "$USER_NAME:$PASSWORD")
    got=$(reg_digest "$ref" "${creds[@]}") || fail "skopeo inspect $ref"
    [ "$got" = "$digest" ] || fail "skopeo reports $got for $ref, we pushed $digest"
    skopeo copy -q --src-tls-verify=false "${creds[@]/--creds/--src-creds}" \
        "docker://$ref" "oci:$TMP/copy-$n:t" >"$TMP/skopeo.out" 2>&1 ||
        fail "skopeo copy $ref: $(cat "$TMP/skopeo.out")"
    umoci unpack --rootless --image "$TMP/copy-$n:t" "$TMP/bundle-$n" >"$TMP/umoci.out" 2>&1 ||
        fail "umoci unpack $ref: $(cat "$TMP/umoci.out")"
    have=$(stat -c %s "$TMP/bundle-$n/rootfs/$file" 2>/dev/null) || fail "$ref: no /$file"
    [ "$have" = "$size" ] || fail "$ref: /$file has $have bytes, expected $size"
    echo "verified $ref $digest"
done <"$RESULTS"

reg_alive || fail "a registry died during the test"
echo "live_push: ok in $(($(date +%s) - START)) s"
