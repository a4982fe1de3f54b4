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
for tool in docker-registry skopeo umoci htpasswd curl python3 openssl; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "live_client.sh: $tool is not installed (run scripts/install-deps)" >&2
        exit 1
    }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-registry-live.XXXXXX")
PIDS=()

cleanup()
{
    local rc=$?
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail()
{
    echo "FAIL [live_client]: $*" >&2
    local f
    for f in "$TMP"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f ----" >&2
        tail -n 20 "$f" >&2
    done
    exit 1
}

# free_ports N: N distinct free 127.0.0.1 ports (all bound at once, then released).
free_ports()
{
    python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# start_registry NAME PORT [EXTRA_YAML [STORE]]: writes a config (loopback, storage in
# $TMP/STORE-store, delete enabled, EXTRA_YAML appended under http:), starts docker-registry and
# waits until /v2/ answers.
start_registry()
{
    local name=$1 port=$2 extra=${3:-} store=${4:-$1} scheme=http curl_opts=()
    case $extra in *tls:*) scheme=https curl_opts=(-k) ;; esac
    cat >"$TMP/$name.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $TMP/$store-store
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$extra
EOF
    docker-registry serve "$TMP/$name.yml" >"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    local i code
    for i in $(seq 1 100); do
        code=$(curl -s "${curl_opts[@]}" -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/")
        case $code in 200 | 401) return 0 ;; esac
        kill -0 "${PIDS[-1]}" 2>/dev/null || fail "registry $name exited"
        sleep 0.05
    done
    fail "registry $name did not come up on port $port"
}

# build_image TAG ARCH FILE: a one-layer image in the layout $TMP/oci with a config.
build_image()
{
    local tag=$1 arch=$2 file=$3
    mkdir -p "$TMP/files"
    echo "slipway live test $tag" >"$TMP/files/$file"
    umoci new --image "$TMP/oci:$tag" || fail "umoci new $tag"
    umoci insert --image "$TMP/oci:$tag" "$TMP/files/$file" "/$file" >/dev/null || fail "umoci insert $tag"
    umoci config --image "$TMP/oci:$tag" --os linux --architecture "$arch" \
        --config.label "io.slipway.test=$tag" --config.env "A=B" \
        --config.entrypoint /bin/sh --config.workingdir /work || fail "umoci config $tag"
}

# add_index: an OCI image index of amd and arm (with platforms) tagged "multi" in the layout:
# the index blob is written into blobs/sha256 and listed in index.json.
add_index()
{
    python3 - "$TMP/oci" <<'PY' || fail "could not add the index to the layout"
import hashlib, json, os, sys
layout = sys.argv[1]
with open(os.path.join(layout, "index.json")) as f:
    top = json.load(f)
def by_name(name):
    for m in top["manifests"]:
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == name:
            return {k: m[k] for k in ("mediaType", "digest", "size")}
    sys.exit("no manifest named " + name)
amd = dict(by_name("amd"), platform={"architecture": "amd64", "os": "linux"})
arm = dict(by_name("arm"), platform={"architecture": "arm64", "os": "linux", "variant": "v8"})
blob = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": [amd, arm]}, separators=(",", ":")).encode()
digest = hashlib.sha256(blob).hexdigest()
with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
    f.write(blob)
top["manifests"].append({"mediaType": "application/vnd.oci.image.index.v1+json",
                         "digest": "sha256:" + digest, "size": len(blob),
                         "annotations": {"org.opencontainers.image.ref.name": "multi"}})
with open(os.path.join(layout, "index.json"), "w") as f:
    json.dump(top, f)
PY
}

# push SRC_TAG DEST [skopeo options...]
push()
{
    local src=$1 dest=$2
    shift 2
    skopeo copy -q --dest-tls-verify=false "$@" "oci:$TMP/oci:$src" "docker://$dest" \
        >"$TMP/skopeo.out" 2>&1 || { cat "$TMP/skopeo.out" >&2; fail "skopeo copy $src -> $dest"; }
}

# digest_of DEST [skopeo options...]: the digest skopeo reports for a pushed tag.
digest_of()
{
    local dest=$1
    shift
    skopeo inspect --tls-verify=false "$@" "docker://$dest" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Digest"])'
}

export HOME=$TMP # skopeo and umoci write nothing into the real home
START=$(date +%s)

read -r PORT AUTH_PORT TLS_PORT DOWN_PORT <<<"$(free_ports 4)" || fail "no free ports"
USER_NAME=slipuser
PASSWORD=pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
htpasswd -Bbn "$USER_NAME" "$PASSWORD" >"$TMP/htpasswd" 2>/dev/null || fail "htpasswd"

start_registry open "$PORT"
start_registry auth "$AUTH_PORT" "auth:
  htpasswd:
    realm: slipway-live
    path: $TMP/htpasswd"
# The same storage as "open", over TLS with a self-signed certificate (HTTP/2 through ALPN).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || fail "openssl req"
start_registry tls "$TLS_PORT" "  tls:
    certificate: $TMP/cert.pem
    key: $TMP/key.pem" open

umoci init --layout "$TMP/oci" || fail "umoci init"
build_image amd amd64 hello.txt
build_image arm arm64 arm.txt
add_index

REG=127.0.0.1:$PORT
AREG=127.0.0.1:$AUTH_PORT
push amd "$REG/demo/oci:v1"
push amd "$REG/demo/oci:v2"
push amd "$REG/demo/oci:latest"
push amd "$REG/demo/docker:v1" --format v2s2
push multi "$REG/demo/multi:v1" --all
push arm "$AREG/private/app:v1" --dest-creds "$USER_NAME:$PASSWORD"

DIGEST_OCI=$(digest_of "$REG/demo/oci:v1") || fail "skopeo inspect demo/oci"
DIGEST_DOCKER=$(digest_of "$REG/demo/docker:v1") || fail "skopeo inspect demo/docker"
DIGEST_INDEX=$(digest_of "$REG/demo/multi:v1") || fail "skopeo inspect demo/multi"
RAW_INDEX=sha256:$(skopeo inspect --tls-verify=false --raw "docker://$REG/demo/multi:v1" |
    sha256sum | cut -d' ' -f1)
DIGEST_AUTH=$(digest_of "$AREG/private/app:v1" --creds "$USER_NAME:$PASSWORD") ||
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

for p in "${PIDS[@]}"; do
    kill -0 "$p" 2>/dev/null || fail "a registry died during the test"
done
echo "live_client: ok in $(($(date +%s) - START)) s"
