#!/usr/bin/env bash
# verify_umoci.sh: src/image against real OCI tools (ctest e2e/image_umoci). Builds a small
# tree (text, binary, executable, 0600 file, 0700 directory, symlink, hard link, a path over
# 100 bytes, an empty file) into an OCI layout with the driver given as $1
# (tests/image/mklayout.c), then: gzip -t and GNU tar read the layer (owners from --chown);
# `umoci unpack --rootless` gives back the files, modes, links and contents; `skopeo inspect`
# shows Env, Entrypoint and Labels; rebuilding after touching every file, with another thread
# count, gives the same manifest digest; a zstd layer holds the same tar. Temp dir removed on exit.
set -u
set -o pipefail

MK=${1:-}
[ -n "$MK" ] && [ -x "$MK" ] || {
    echo "usage: verify_umoci.sh PATH/TO/image_mklayout" >&2
    exit 2
}
for tool in umoci skopeo gzip tar jq cmp; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "FAIL [image_umoci]: $tool is not installed (scripts/install-deps)" >&2
        exit 1
    }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-image-e2e.XXXXXX")
cleanup()
{
    local rc=$?
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail()
{
    echo "FAIL [image_umoci]: $*" >&2
    exit 1
}

SRC=$TMP/src
LONG=$(printf 'd%.0s' $(seq 1 60))/$(printf 'e%.0s' $(seq 1 60))/long-name.txt
mkdir -p "$SRC/sub" "$SRC/secret" "$SRC/$(dirname "$LONG")"
printf 'hello slipway\n' >"$SRC/hello.txt"
printf '#!/bin/sh\necho run\n' >"$SRC/run.sh"
chmod 0755 "$SRC/run.sh"
printf 'key\n' >"$SRC/secret/key"
chmod 0600 "$SRC/secret/key"
chmod 0700 "$SRC/secret"
head -c 300000 /dev/urandom >"$SRC/sub/random.bin"
: >"$SRC/sub/empty"
ln -s ../hello.txt "$SRC/sub/link"
ln "$SRC/hello.txt" "$SRC/sub/hard"
printf 'deep\n' >"$SRC/$LONG"

build()
{ # build LAYOUT TAG EXTRA-ARGS... ; prints the manifest digest
    "$MK" --src "$SRC" --layout "$1" --tag "$2" --prefix /app --chown 1000:1000 \
        --env PATH=/usr/local/bin:/usr/bin --env MODE=test --entrypoint /app/run.sh \
        --cmd --flag --label org.opencontainers.image.title=slipway-e2e --label tier=test \
        --workdir /app --port 8080 "${@:3}" >"$TMP/out.txt" || fail "mklayout $* failed"
    awk '$1 == "manifest" { print $2 }' "$TMP/out.txt"
}

M1=$(build "$TMP/layout" v1 --threads 1) || exit 1
LAYER=$(awk '$1 == "layer" { print $2 }' "$TMP/out.txt")
BLOB=$TMP/layout/blobs/sha256/${LAYER#sha256:}
[ -f "$BLOB" ] || fail "layer blob $LAYER missing"

# The blob is one valid gzip member holding a tar GNU tar reads, owned by 1000:1000, mtime 0.
gzip -t "$BLOB" || fail "gzip -t rejects the layer"
tar -tvzf "$BLOB" --numeric-owner --full-time >"$TMP/list.txt" || fail "tar cannot list"
grep -q "1000/1000 .* 1970-01-01 00:00:00 app/hello.txt" "$TMP/list.txt" ||
    fail "owner or mtime wrong: $(head -3 "$TMP/list.txt")"
grep -q "app/$LONG" "$TMP/list.txt" || fail "long path missing from the tar listing"

# umoci unpacks it: contents, modes, links.
umoci unpack --rootless --image "$TMP/layout:v1" "$TMP/bundle" >/dev/null 2>"$TMP/umoci.err" ||
    fail "umoci unpack failed: $(cat "$TMP/umoci.err")"
R=$TMP/bundle/rootfs/app
for f in hello.txt run.sh secret/key sub/random.bin sub/empty "$LONG"; do
    cmp -s "$SRC/$f" "$R/$f" || fail "content of $f differs after unpack"
done
mode() { stat -c %a "$1"; }
[ "$(mode "$R/run.sh")" = 755 ] || fail "run.sh mode $(mode "$R/run.sh")"
[ "$(mode "$R/secret/key")" = 600 ] || fail "secret/key mode $(mode "$R/secret/key")"
[ "$(mode "$R/secret")" = 700 ] || fail "secret/ mode $(mode "$R/secret")"
[ "$(mode "$R/hello.txt")" = 644 ] || fail "hello.txt mode $(mode "$R/hello.txt")"
[ -L "$R/sub/link" ] && [ "$(readlink "$R/sub/link")" = ../hello.txt ] ||
    fail "symlink sub/link wrong"
[ "$(stat -c %i "$R/hello.txt")" = "$(stat -c %i "$R/sub/hard")" ] ||
    fail "sub/hard is not a hard link of hello.txt"

# skopeo sees the config.
skopeo inspect "oci:$TMP/layout:v1" >"$TMP/inspect.json" || fail "skopeo inspect failed"
jq -e '.Env == ["PATH=/usr/local/bin:/usr/bin","MODE=test"]' "$TMP/inspect.json" >/dev/null ||
    fail "Env wrong: $(jq -c .Env "$TMP/inspect.json")"
jq -e '.Labels["org.opencontainers.image.title"] == "slipway-e2e" and .Labels.tier == "test"' \
    "$TMP/inspect.json" >/dev/null || fail "Labels wrong"
jq -e --arg d "$M1" '.Digest == $d and .Created == "1970-01-01T00:00:00Z"' "$TMP/inspect.json" \
    >/dev/null || fail "digest or created wrong: $(jq -c '[.Digest,.Created]' "$TMP/inspect.json")"
skopeo inspect --config "oci:$TMP/layout:v1" >"$TMP/config.json" || fail "skopeo --config"
jq -e '.config.Entrypoint == ["/app/run.sh"] and .config.Cmd == ["--flag"] and
       .config.WorkingDir == "/app" and (.config.ExposedPorts | has("8080/tcp"))' \
    "$TMP/config.json" >/dev/null || fail "runtime config wrong: $(jq -c .config "$TMP/config.json")"

# Same inputs, touched files, another thread count, another layout: the same digest.
find "$SRC" -exec touch -h -d '2001-02-03 04:05:06' {} +
M2=$(build "$TMP/layout2" v1 --threads 2) || exit 1
[ "$M1" = "$M2" ] || fail "rebuild changed the manifest digest: $M1 vs $M2"
cmp -s "$BLOB" "$TMP/layout2/blobs/sha256/${LAYER#sha256:}" || fail "layer bytes differ"

# zstd: a second tag in the same layout, the same tar inside (diff_id), zstd -t accepts it;
# umoci unpacks it when it supports zstd (umoci 0.4.7 refuses the media type).
DIFF_GZ=$(awk '$1 == "diff_id" { print $2 }' "$TMP/out.txt")
MZ=$(build "$TMP/layout" vz --compression zstd) || exit 1
[ "$MZ" != "$M1" ] || fail "zstd manifest equals the gzip one"
DIFF_Z=$(awk '$1 == "diff_id" { print $2 }' "$TMP/out.txt")
ZBLOB=$TMP/layout/blobs/sha256/$(awk '$1 == "layer" { print $2 }' "$TMP/out.txt" | cut -c8-)
[ "$DIFF_Z" = "$DIFF_GZ" ] || fail "zstd diff_id $DIFF_Z differs from gzip's $DIFF_GZ"
if command -v zstd >/dev/null 2>&1; then
    zstd -q -t "$ZBLOB" || fail "zstd -t rejects the layer"
    [ "sha256:$(zstd -q -dc "$ZBLOB" | sha256sum | cut -c1-64)" = "$DIFF_Z" ] ||
        fail "zstd layer does not decompress to its diff_id"
fi
[ "$(jq '.manifests | length' "$TMP/layout/index.json")" = 2 ] || fail "index.json lost a tag"
if umoci unpack --rootless --image "$TMP/layout:vz" "$TMP/bundle-z" >/dev/null 2>"$TMP/umoci.err"
then
    diff -r "$TMP/bundle/rootfs" "$TMP/bundle-z/rootfs" >/dev/null || fail "zstd tree differs"
else
    grep -q 'tar+zstd' "$TMP/umoci.err" || fail "umoci unpack (zstd): $(cat "$TMP/umoci.err")"
fi
echo "PASS [image_umoci]: manifest $M1"
