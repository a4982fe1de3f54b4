#!/usr/bin/env bash
# test_builder.sh: `slipway builder` end to end (issue 4, part 3). The server runs without
# controllers, so this script plays the build controller: it creates BuildConfigs and Builds
# through the API (instantiate, instantiatebinary), writes what the controller would resolve
# (status.outputDockerImageReference, spec.strategy.dockerStrategy.from), mints a build token with
# POST builds/<n>/token and runs the builder itself against Debian's docker-registry. Pushed images
# are checked with skopeo (config), skopeo copy to an OCI layout + umoci unpack (files, contents)
# and the layer tars themselves (modes and owners as recorded). Covers: a binary directory upload
# FROM scratch (every Dockerfile instruction the subset has, build args, strategy env, image
# labels, --chown/--chmod, ADD of a local archive), a single-file upload (asFile), an inline
# Dockerfile on an imported base image (base layers mounted, never uploaded), a local git
# repository at a tag with contextDir, the same input twice (and every mtime touched) giving the
# same image with and without layer reuse, an unchanged upload reusing the output image without
# fetching the source (its input digest, in the manifest's annotations, is unchanged) and a
# changed file or noCache building again, zstd layers, and failures reported through details
# with nothing pushed: RUN, an unknown instruction, COPY ../x, a symlink out of the context, a
# malformed and a non-tar upload; SIGTERM mid-build stops cleanly and dies of it. Scratch dirs are removed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"
# shellcheck source=../lib/builder.sh
. "$SW_TESTS/lib/builder.sh"

START=$(date +%s)
command -v git >/dev/null || fail "git is not installed"
sw_with_registry

sw_fail_extra()
{
    if [ -f "$SW_TMP/builder.log" ]; then
        echo "---- last builder log ----" >&2
        tail -n 30 "$SW_TMP/builder.log" >&2
    fi
}

# libgit2 1.5 (Debian) leaks pcre2 match data for every config entry a remote's URL rewrite check
# does not match (bounded, once per clone); it is not ours to fix.
printf 'leak:libpcre2-8.so\nleak:libgit2.so\n' >"$SW_TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$SW_TMP/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

NS=buildtest
BUILDER_FLAGS=() # more flags for every builder run
WORK=$SW_TMP/work # --workdir: must be empty after every run
mkdir -p "$WORK"

# ---- helpers ----

# jq_py EXPR < JSON: a Python expression over o.
jq_py()
{
    python3 -c 'import json, sys
o = json.load(sys.stdin)
def at(path, d=o):
    for k in path.split("."):
        d = d.get(k) if isinstance(d, dict) else None
    return d
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))' "$1"
}

# mkbc NAME SPEC_JSON: a BuildConfig.
mkbc()
{
    local out
    out=$(api POST buildconfigs -H 'Content-Type: application/json' -d "{\"apiVersion\":
        \"build.openshift.io/v1\", \"kind\": \"BuildConfig\", \"metadata\": {\"name\": \"$1\"},
        \"spec\": $2}") || fail "create BuildConfig $1"
    [ "$(echo "$out" | jq_py 'at("metadata.name")')" = "$1" ] || fail "create BuildConfig $1: $out"
}

# start BC: instantiate; prints the build's name.
start()
{
    api POST "buildconfigs/$1/instantiate" -H 'Content-Type: application/json' \
        -d '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1"}' |
        jq_py 'at("metadata.name")'
}

# start_binary BC FILE [QUERY]: instantiatebinary with FILE as the body; prints the build's name.
start_binary()
{
    api POST "buildconfigs/$1/instantiatebinary${3:+?$3}" -H 'Content-Type: application/octet-stream' \
        --data-binary "@$2" | jq_py 'at("metadata.name")'
}

# patch_build BUILD [status] MERGE_PATCH: what the build controller writes.
patch_build()
{
    local b=$1 sub=''
    shift
    if [ "$1" = status ]; then
        sub=/status
        shift
    fi
    api PATCH "builds/$b$sub" -H 'Content-Type: application/merge-patch+json' -d "$1" \
        >/dev/null || fail "patch build $b"
}

build_get() { api GET "builds/$1" | jq_py "$2"; }


# builder_fails WHAT BUILD REASON NEEDLE TAG: exit 1, reason and message in details, no tag.
builder_fails()
{
    local what=$1 b=$2 reason=$3 needle=$4 tag=$5
    builder "$b"
    [ "$RC" -eq 1 ] || fail "$what: expected exit 1, got $RC:
$OUT"
    expect_contains "$what: log says why" "$needle" "$OUT"
    expect_eq "$what: reason in details" "$reason" "$(build_get "$b" 'at("status.reason")')"
    expect_contains "$what: message in details" "$needle" "$(build_get "$b" 'at("status.message")')"
    expect_eq "$what: nothing tagged" "" "$(reg_digest "$REG/$tag" 2>/dev/null)"
}

# config IMAGE EXPR: EXPR over the image config (skopeo inspect --config).
config()
{
    skopeo inspect --config --tls-verify=false "docker://$REG/$1" | jq_py "$2"
}

# ---- setup ----

sw_start_server
read -r PORT < <(reg_free_ports 1)
reg_start main "$PORT"
REG=127.0.0.1:$PORT
kc create namespace "$NS" >/dev/null || fail "create namespace"

# A base image in the registry, as an import would find it: one layer, Env A=B, Entrypoint
# /bin/sh, WorkingDir /work, label io.slipway.test.
reg_build_image base amd64
reg_push base "$REG/base/img:1"
BASE_DIGEST=$(reg_digest "$REG/base/img:1")
BASE_LAYER=$(skopeo inspect --tls-verify=false "docker://$REG/base/img:1" | jq_py 'o["Layers"][0]')

# ---- 1. binary upload of a directory, FROM scratch ----

CTX=$SW_TMP/ctx
mkdir -p "$CTX/app/bin" "$CTX/config" "$SW_TMP/vendor/lib"
printf '#!/bin/sh\necho server\n' >"$CTX/app/bin/server"
chmod 755 "$CTX/app/bin/server"
echo "the app" >"$CTX/app/README"
echo "scratch" >"$CTX/app/cache.tmp"
printf '# not for images\napp/*.tmp\n' >"$CTX/.dockerignore"
ln -s README "$CTX/app/readme-link"
ln -s /etc/hostname "$CTX/app/host" # copied as a link, never followed
echo "key=value" >"$CTX/config/settings.conf"
echo "vendored" >"$SW_TMP/vendor/lib/x.so"
tar -C "$SW_TMP/vendor" --owner=12 --group=34 -czf "$CTX/vendor.tar.gz" lib
cat >"$CTX/Dockerfile" <<'EOF'
FROM scratch
ARG VERSION=0
LABEL org.opencontainers.image.version=$VERSION maintainer=team
ENV APP_HOME=/app PATH=/app/bin
COPY --chown=1000:1000 app/ /app/
COPY --chmod=0600 config/settings.conf /etc/app/
ADD vendor.tar.gz /opt/vendor/
WORKDIR /app
USER 1000:1000
EXPOSE 8080 9090/udp
VOLUME /data
ENTRYPOINT ["/app/bin/server"]
CMD ["--port", "8080"]
STOPSIGNAL SIGTERM
EOF
tar -C "$CTX" -cf "$SW_TMP/ctx.tar" .

mkbc app "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\",
    \"dockerStrategy\": {\"buildArgs\": [{\"name\": \"VERSION\", \"value\": \"1.2.3\"}],
    \"env\": [{\"name\": \"EXTRA\", \"value\": \"yes\"}]}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/app:v1\"},
    \"imageLabels\": [{\"name\": \"team\", \"value\": \"blue\"}]}}"
B=$(start_binary app "$SW_TMP/ctx.tar")
expect_eq "instantiatebinary names the build" app-1 "$B"
builder_ok "directory upload" "$B"
expect_contains "log: .dockerignore applied" ".dockerignore: 1 entry left out" "$OUT"
expect_contains "log: each instruction" 'STEP 6: COPY --chmod=0600 config/settings.conf /etc/app/' "$OUT"
expect_match "log: layer digest and size" 'layer sha256:[0-9a-f]{64}: [0-9.]+ [kM]?B .*uploaded' "$OUT"
D1=$(reg_digest "$REG/test/app:v1")
expect_contains "log names the pushed digest" "$D1" "$OUT"
expect_eq "details: imageDigest" "$D1" "$(build_get "$B" 'at("status.output.to.imageDigest")')"
expect_eq "details: stages" '["FetchInputs", "PullImages", "Build", "PushImage"]' \
    "$(build_get "$B" '[s["name"] for s in at("status.stages")]')"
expect_eq "details: stage shape" '["durationMilliseconds", "name", "startTime", "steps"]' \
    "$(build_get "$B" 'sorted(at("status.stages")[3].keys())')"
expect_eq "details: no reason on success" "None" "$(build_get "$B" 'str(at("status.reason"))')"
expect_eq "config: Env" '["APP_HOME=/app", "PATH=/app/bin", "EXTRA=yes"]' \
    "$(config test/app:v1 'at("config.Env")')"
expect_eq "config: Labels (build arg, imageLabels)" \
    '{"maintainer": "team", "org.opencontainers.image.version": "1.2.3", "team": "blue"}' \
    "$(config test/app:v1 'at("config.Labels")')"
expect_eq "config: Entrypoint, Cmd" '[["/app/bin/server"], ["--port", "8080"]]' \
    "$(config test/app:v1 '[at("config.Entrypoint"), at("config.Cmd")]')"
expect_eq "config: WorkingDir, User, StopSignal" '["/app", "1000:1000", "SIGTERM"]' \
    "$(config test/app:v1 '[at("config.WorkingDir"), at("config.User"), at("config.StopSignal")]')"
expect_eq "config: ExposedPorts, Volumes" '[["8080/tcp", "9090/udp"], ["/data"]]' \
    "$(config test/app:v1 '[sorted(at("config.ExposedPorts")), sorted(at("config.Volumes"))]')"
expect_eq "config: created is the epoch" "1970-01-01T00:00:00Z" "$(config test/app:v1 'at("created")')"
expect_eq "config: history" 'ARG VERSION|LABEL org.opencontainers.image.version=1.2.3 maintainer=team|ENV APP_HOME=/app PATH=/app/bin|COPY --chown=1000:1000 app/ /app/|COPY --chmod=0600 config/settings.conf /etc/app/|ADD vendor.tar.gz /opt/vendor/|WORKDIR /app|USER 1000:1000|EXPOSE 8080/tcp 9090/udp|VOLUME ["/data"]|ENTRYPOINT ["/app/bin/server"]|CMD ["--port","8080"]|STOPSIGNAL SIGTERM|ENV EXTRA=yes|LABEL team=blue' \
    "$(config test/app:v1 '"|".join(h["created_by"] for h in at("history"))')"
reg_unpack "$REG/test/app:v1" "$SW_TMP/u1"
R=$SW_TMP/u1/rootfs
expect_eq "file contents" "the app|key=value|vendored" \
    "$(cat "$R/app/README")|$(cat "$R/etc/app/settings.conf")|$(cat "$R/opt/vendor/lib/x.so")"
expect_eq "symlinks kept" "README|/etc/hostname" "$(readlink "$R/app/readme-link")|$(readlink "$R/app/host")"
expect_eq "executable" "755" "$(stat -c %a "$R/app/bin/server")"
LIST=$(reg_layer_entries "$SW_TMP/u1.oci")
expect_eq "layer 1 (COPY --chown) as recorded" "d app 0755 1000:1000
f app/README 0644 1000:1000
d app/bin 0755 1000:1000
f app/bin/server 0755 1000:1000
l app/host 0777 1000:1000 ->/etc/hostname
l app/readme-link 0777 1000:1000 ->README" "$(echo "$LIST" | grep ' app' )"
expect_contains "COPY --chmod, scratch parents" "d etc 0755 0:0
d etc/app 0755 0:0
f etc/app/settings.conf 0600 0:0" "$LIST"
expect_contains "ADD unpacks the archive, keeping its owners" "f opt/vendor/lib/x.so 0644 12:34" "$LIST"
expect_eq "one layer per COPY/ADD (WORKDIR /app exists)" 3 \
    "$(skopeo inspect --tls-verify=false "docker://$REG/test/app:v1" | jq_py 'len(o["Layers"])')"

# ---- 2. same input again: same image with and without layer reuse; unchanged input ----

# source_gets BUILD: how many times the server served BUILD's uploaded source.
source_gets() { grep -c "GET /apis/build.openshift.io/v1/namespaces/$NS/builds/$1/source " "$SW_LOG"; }
SRC_KEY='build.slipway.dev/source-digest'
IN_KEY='build.slipway.dev/input-digest'

expect_match "the Build carries the upload's content digest" "^sha256:[0-9a-f]{64}$" \
    "$(build_get app-1 "at('metadata.annotations')['$SRC_KEY']")"
expect_match "the manifest carries the input digest" "^sha256:[0-9a-f]{64}$" \
    "$(reg_raw "$REG/test/app:v1" | jq_py "at('annotations')['$IN_KEY']")"
expect_eq "a real build fetches its source once" 1 "$(source_gets app-1)"
D1=$(reg_digest "$REG/test/app:v1")
find "$CTX" -exec touch -h -d '2001-02-03 04:05:06' {} +
tar -C "$CTX" -cf "$SW_TMP/ctx2.tar" .
cmp -s "$SW_TMP/ctx.tar" "$SW_TMP/ctx2.tar" && fail "touching the files did not change the upload"
B=$(start_binary app "$SW_TMP/ctx2.tar")
expect_eq "touched upload: same content digest (timestamps do not count)" \
    "$(build_get app-1 "at('metadata.annotations')['$SRC_KEY']")" \
    "$(build_get "$B" "at('metadata.annotations')['$SRC_KEY']")"
builder_ok "rebuild of the touched upload" "$B"
expect_contains "touched upload: unchanged input, the image is reused" \
    "unchanged input: reusing $REG/test/app:v1@$D1" "$OUT"
expect_eq "touched upload: the source is never fetched" 0 "$(source_gets "$B")"
expect_eq "same input, every mtime touched: same digest" "$D1" "$(reg_digest "$REG/test/app:v1")"
expect_eq "touched upload: details digest" "$D1" "$(build_get "$B" 'at("status.output.to.imageDigest")')"
expect_eq "unchanged input: stages" '["FetchInputs"]' \
    "$(build_get "$B" '[s["name"] for s in at("status.stages")]')"
B=$(start_binary app "$SW_TMP/ctx2.tar")
patch_build "$B" '{"spec": {"strategy": {"dockerStrategy": {"noCache": true}}}}'
builder_ok "rebuild without reuse (noCache) of the touched upload" "$B"
expect_eq "noCache: the source is fetched" 1 "$(source_gets "$B")"
expect_match "noCache: layers compressed again" 'layer sha256:.*uploaded in' "$OUT"
expect_eq "noCache, every mtime touched: same digest" "$D1" "$(reg_digest "$REG/test/app:v1")"
D2=$D1
echo "key=other" >"$CTX/config/settings.conf"
tar -C "$CTX" -cf "$SW_TMP/ctx3.tar" .
B=$(start_binary app "$SW_TMP/ctx3.tar")
builder_ok "one file changed" "$B"
expect_eq "one file changed: the source is fetched" 1 "$(source_gets "$B")"
D3=$(build_get "$B" 'at("status.output.to.imageDigest")')
expect_eq "one file changed: pushed" "$D3" "$(reg_digest "$REG/test/app:v1")"
[ "$D3" != "$D2" ] || fail "one file changed: the digest did not change"
pass "one file changed: a new digest"

# ---- 3. inline Dockerfile on an imported base image ----

mkbc inline "{\"source\": {\"type\": \"Dockerfile\", \"dockerfile\":
    \"FROM placeholder\\nENV X=1 PATH=/opt/bin:\$A\\nLABEL stage=inline\\nCMD [\\\"run\\\"]\\n\"},
    \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}},
    \"output\": {\"to\": {\"kind\": \"ImageStreamTag\", \"name\": \"inline:latest\"}}}"
B=$(start inline)
builder_fails "ImageStreamTag output not resolved yet" "$B" InvalidOutputReference \
    "status.outputDockerImageReference" test/inline:latest
B=$(start inline)
patch_build "$B" "{\"spec\": {\"strategy\": {\"dockerStrategy\": {\"from\":
    {\"kind\": \"DockerImage\", \"name\": \"$REG/base/img@$BASE_DIGEST\"}}}}}"
patch_build "$B" status "{\"status\": {\"outputDockerImageReference\": \"$REG/test/inline:latest\"}}"
builder_ok "inline Dockerfile on a base image" "$B"
expect_contains "base layer mounted, not uploaded" "base layer $BASE_LAYER" "$OUT"
expect_contains "mounted from the base repository" "mounted from base/img" "$OUT"
expect_contains "no layer bytes sent" "Blobs: 1 uploaded" "$OUT" # the config only
expect_eq "base layers reused" "[\"$BASE_LAYER\"]" \
    "$(skopeo inspect --tls-verify=false "docker://$REG/test/inline:latest" | jq_py 'o["Layers"]')"
expect_eq "config: base Env + ENV seeing it" '["A=B", "X=1", "PATH=/opt/bin:B"]' \
    "$(config test/inline:latest 'at("config.Env")')"
expect_eq "config: inherited Entrypoint, WorkingDir; base and new labels" \
    '[["/bin/sh"], "/work", {"io.slipway.test": "base", "stage": "inline"}, ["run"]]' \
    "$(config test/inline:latest '[at("config.Entrypoint"), at("config.WorkingDir"), at("config.Labels"), at("config.Cmd")]')"
reg_unpack "$REG/test/inline:latest" "$SW_TMP/u3"
[ -f "$SW_TMP/u3/rootfs/hello.txt" ] || fail "the base layer's file is missing"
pass "base image file present after unpack"

# ---- 3b. a base image index in another registry: linux/amd64 picked, its layer copied ----

read -r PORT2 < <(reg_free_ports 1)
reg_start other "$PORT2"
OTHER=127.0.0.1:$PORT2
reg_push_index multi "$REG/base/multi:1"
AMD_LAYER=$(skopeo inspect --tls-verify=false --override-arch amd64 --override-os linux \
    "docker://$REG/base/multi:1" | jq_py 'o["Layers"][0]')
mkbc far "{\"source\": {\"type\": \"Dockerfile\", \"dockerfile\":
    \"FROM $REG/base/multi:1\\nLABEL far=yes\\n\"},
    \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$OTHER/test/far:latest\"}}}"
BUILDER_FLAGS=(--insecure-registry "$OTHER")
builder_ok "base index in another registry" "$(start far)"
BUILDER_FLAGS=()
expect_contains "base layer copied between registries" "copied from $REG" "$OUT"
expect_eq "the amd64 image's layer" "[\"$AMD_LAYER\"]" \
    "$(skopeo inspect --tls-verify=false "docker://$OTHER/test/far:latest" | jq_py 'o["Layers"]')"
expect_eq "config: amd64, the base's env" '["amd64", ["A=B"]]' \
    "$(skopeo inspect --config --tls-verify=false "docker://$OTHER/test/far:latest" | jq_py '[o["architecture"], o["config"]["Env"]]')"

# ---- 4. a local git repository at a tag, with contextDir ----

GIT=$SW_TMP/repo
mkdir -p "$GIT/web/static"
git -C "$GIT" init -q -b main
cat >"$GIT/web/Dockerfile" <<EOF
FROM $REG/base/img:1
COPY static/ /srv/www/
COPY run.sh /usr/local/bin/
EOF
echo "<h1>v1</h1>" >"$GIT/web/static/index.html"
printf '#!/bin/sh\nexec httpd\n' >"$GIT/web/run.sh"
chmod 755 "$GIT/web/run.sh"
ln -s index.html "$GIT/web/static/home.html"
echo "not in the context" >"$GIT/outside.txt"
git -C "$GIT" add -A
git -C "$GIT" -c user.name=t -c user.email=t@example.com commit -qm "first version"
git -C "$GIT" tag v1
COMMIT=$(git -C "$GIT" rev-parse HEAD)
echo "<h1>v2</h1>" >"$GIT/web/static/index.html"
git -C "$GIT" -c user.name=t -c user.email=t@example.com commit -qam "second version"
mkbc gitapp "{\"source\": {\"type\": \"Git\", \"git\": {\"uri\": \"file://$GIT\", \"ref\": \"v1\"},
    \"contextDir\": \"web\"}, \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/git:latest\"}}}"
B=$(start gitapp)
builder_ok "git build" "$B"
expect_contains "log: the commit" "$COMMIT (first version)" "$OUT"
expect_contains "base layer from the Dockerfile's FROM mounted" "mounted from base/img" "$OUT"
reg_unpack "$REG/test/git:latest" "$SW_TMP/u4"
R=$SW_TMP/u4/rootfs
expect_eq "git: files at the tag" "<h1>v1</h1>|<h1>v1</h1>" \
    "$(cat "$R/srv/www/index.html")|$(cat "$R/srv/www/home.html")"
expect_eq "git: executable bit" 755 "$(stat -c %a "$R/usr/local/bin/run.sh")"
if [ -e "$R/outside.txt" ] || [ -e "$R/srv/www/Dockerfile" ]; then
    fail "files outside contextDir copied"
fi
pass "git: only the context directory"
expect_eq "git: commit label" "$COMMIT" \
    "$(config test/git:latest 'at("config.Labels")["io.openshift.build.commit.id"]')"
expect_eq "git: base layer then two" 3 \
    "$(skopeo inspect --tls-verify=false "docker://$REG/test/git:latest" | jq_py 'len(o["Layers"])')"

# ---- 5. a single uploaded file (asFile), zstd layers ----

mkbc onefile "{\"source\": {\"type\": \"Binary\", \"dockerfile\":
    \"FROM scratch\\nCOPY app.jar /deployments/\\n\"},
    \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/onefile:latest\"}}}"
head -c 100000 /dev/urandom >"$SW_TMP/app.jar"
B=$(start_binary onefile "$SW_TMP/app.jar" asFile=app.jar)
builder_ok "single file upload, zstd" "$B" SLIPWAY_COMPRESSION=zstd
expect_contains "zstd layer" "zstd" "$OUT"
expect_eq "zstd media type" "application/vnd.oci.image.layer.v1.tar+zstd" \
    "$(reg_raw "$REG/test/onefile:latest" | jq_py 'o["layers"][0]["mediaType"]')"
rm -rf "$SW_TMP/u5.oci"
skopeo copy -q --src-tls-verify=false "docker://$REG/test/onefile:latest" "oci:$SW_TMP/u5.oci:t" \
    >/dev/null 2>&1 || fail "skopeo copy of the zstd image"
if command -v zstd >/dev/null; then # umoci 0.4 cannot unpack zstd layers; the zstd tool can
    expect_eq "zstd layer entries" "d deployments 0755 0:0
f deployments/app.jar 0644 0:0" "$(reg_layer_entries "$SW_TMP/u5.oci")"
else
    echo "note: no zstd tool; the zstd layer's entries are not listed"
fi

# ---- 5b. SLIPWAY_COMPRESSION_LEVEL: other bytes, same files; a bad level is refused ----

mkbc levels "{\"source\": {\"type\": \"Binary\", \"dockerfile\":
    \"FROM scratch\\nCOPY notes.txt /notes.txt\\n\"},
    \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/levels:latest\"}}}"
seq 1 40000 | sed 's/$/ a line of text that compresses/' >"$SW_TMP/notes.txt"
builder_ok "gzip, default level" "$(start_binary levels "$SW_TMP/notes.txt" asFile=notes.txt)"
L6=$(reg_raw "$REG/test/levels:latest" | jq_py 'o["layers"][0]["digest"]')
builder_ok "gzip, level 1" "$(start_binary levels "$SW_TMP/notes.txt" asFile=notes.txt)" \
    SLIPWAY_COMPRESSION_LEVEL=1
L1=$(reg_raw "$REG/test/levels:latest" | jq_py 'o["layers"][0]["digest"]')
[ -n "$L1" ] && [ "$L1" != "$L6" ] || fail "level 1 gave the same layer as level 6 ($L1)"
rm -rf "$SW_TMP/lv.oci"
skopeo copy -q --src-tls-verify=false "docker://$REG/test/levels:latest" "oci:$SW_TMP/lv.oci:t" \
    >/dev/null 2>&1 || fail "skopeo copy of the level-1 image"
expect_eq "level 1 layer entries" "f notes.txt 0644 0:0" "$(reg_layer_entries "$SW_TMP/lv.oci")"
pass "gzip level 1: another layer digest, the same files"
builder "$(start_binary levels "$SW_TMP/notes.txt" asFile=notes.txt)" SLIPWAY_COMPRESSION_LEVEL=12
[ "$RC" -eq 1 ] || fail "gzip level 12: expected exit 1, got $RC: $OUT"
expect_contains "gzip level 12 refused" "SLIPWAY_COMPRESSION_LEVEL=12: want 1-9 for gzip" "$OUT"

# ---- 6. failures: reported through details, nothing tagged ----

mkbc bad "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\",
    \"dockerStrategy\": {}}, \"output\": {\"to\": {\"kind\": \"DockerImage\",
    \"name\": \"$REG/test/bad:latest\"}}}"
# bad_build WHAT DOCKERFILE REASON NEEDLE [setup]: a context with DOCKERFILE (+ setup commands).
bad_build()
{
    local what=$1 df=$2 reason=$3 needle=$4 setup=${5:-}
    rm -rf "$SW_TMP/bad" && mkdir -p "$SW_TMP/bad/sub"
    echo data >"$SW_TMP/bad/sub/file"
    printf '%b' "$df" >"$SW_TMP/bad/Dockerfile"
    [ -n "$setup" ] && (cd "$SW_TMP/bad" && eval "$setup")
    tar -C "$SW_TMP/bad" -cf "$SW_TMP/bad.tar" .
    builder_fails "$what" "$(start_binary bad "$SW_TMP/bad.tar")" "$reason" "$needle" test/bad:latest
}
# (RUN goes to the buildah backend when it may: test_buildah.sh; here only native is allowed)
SAVED_FLAGS=("${BUILDER_FLAGS[@]}")
BUILDER_FLAGS+=(--backends native)
bad_build "RUN" 'FROM scratch\nCOPY sub /x/\nRUN make install\n' DockerBuildFailed \
    "Dockerfile:3: RUN is not supported"
BUILDER_FLAGS=("${SAVED_FLAGS[@]}")
bad_build "unknown instruction" 'FROM scratch\n\nFROBNICATE x\n' DockerBuildFailed "Dockerfile:3"
bad_build "COPY ../x" 'FROM scratch\nCOPY ../x /x\n' DockerBuildFailed \
    "Dockerfile:2: COPY ../x /x: \"../x\" leaves the build context"
bad_build "symlink out (absolute)" 'FROM scratch\nCOPY secret /x\n' DockerBuildFailed \
    "symlink \"secret\" points outside the build context" "ln -s /etc/passwd secret"
bad_build "symlink out (relative)" 'FROM scratch\nCOPY sub/up/passwd /x\n' DockerBuildFailed \
    "symlink \"sub/up\" points outside the build context" "ln -s ../../../../etc sub/up"
bad_build "missing source" 'FROM scratch\nCOPY nothing.txt /x\n' DockerBuildFailed \
    "\"nothing.txt\" not found in the build context"
head -c 3000 "$SW_TMP/ctx.tar" >"$SW_TMP/cut.tar"
builder_fails "malformed tar upload" "$(start_binary bad "$SW_TMP/cut.tar")" FetchSourceFailed \
    "the uploaded source archive is not usable" test/bad:latest
echo "plain text" >"$SW_TMP/plain.txt"
builder_fails "non-tar upload" "$(start_binary bad "$SW_TMP/plain.txt")" FetchSourceFailed \
    "is not a tar archive" test/bad:latest
mkbc nodf "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\",
    \"dockerStrategy\": {\"dockerfilePath\": \"build/Dockerfile\"}}}"
builder_fails "missing Dockerfile" "$(start_binary nodf "$SW_TMP/plain.txt" asFile=x)" \
    ManageDockerfileFailed "cannot read the Dockerfile" test/bad:latest

# ---- 7. SIGTERM mid-build: dies of SIGTERM, nothing tagged ----

mkdir -p "$SW_TMP/big"
head -c 40000000 /dev/urandom >"$SW_TMP/big/blob"
printf 'FROM scratch\nCOPY blob /blob\n' >"$SW_TMP/big/Dockerfile"
tar -C "$SW_TMP/big" -cf "$SW_TMP/big.tar" .
mkbc big "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\",
    \"dockerStrategy\": {}}, \"output\": {\"to\": {\"kind\": \"DockerImage\",
    \"name\": \"$REG/test/big:latest\"}}}"
B=$(start_binary big "$SW_TMP/big.tar")
api POST "builds/$B/token" | jq_py 'at("token")' >"$SW_TMP/token"
# Python runs it: a shell reports 143 both for exit(143) and for death by SIGTERM, and the
# builder must die of the signal (its controller then reports Error/BuilderKilled for a kill
# it did not send, not a failed build).
RC=$(python3 - "$SW_TMP/builder.log" "$SLIPWAY" builder --server "$SW_URL" --ca "$SW_DIR/tls.crt" \
    --token-file "$SW_TMP/token" --namespace "$NS" --build "$B" --insecure-registry "$REG" \
    --workdir "$WORK" --threads 1 <<'PY'
import signal, subprocess, sys, time
with open(sys.argv[1], "wb") as log:
    p = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        with open(sys.argv[1], "rb") as f:
            if b"STEP 2" in f.read():
                break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    print(p.wait(timeout=60))
PY
)
expect_eq "SIGTERM: the builder dies of it after a clean stop" -15 "$RC"
expect_contains "SIGTERM: log says stopped" "Build stopped." "$(cat "$SW_TMP/builder.log")"
expect_eq "SIGTERM: nothing tagged" "" "$(reg_digest "$REG/test/big:latest" 2>/dev/null)"
expect_eq "SIGTERM: nothing reported" "None" "$(build_get "$B" 'str(at("status.reason"))')"
[ -z "$(ls -A "$WORK")" ] || fail "SIGTERM: the builder left files in its workdir"
pass "SIGTERM: workdir removed"

reg_alive || fail "a registry died during the test"
echo "took $(($(date +%s) - START)) s"
sw_finish
