#!/usr/bin/env bash
# test_buildah.sh: the buildah build backend end to end (issue 16). As in test_builder.sh the
# server runs without the build controller and this script plays it (creates Builds, writes what
# the controller resolves, mints a token, runs `slipway builder`) against Debian's
# docker-registry and Debian's buildah (root, --isolation chroot, vfs storage in the builder's
# scratch directory). Covers: a busybox base image made FROM scratch with the static busybox and
# RUN ["/bin/busybox","--install","-s","/bin"]; shell and exec-form RUN with ENV and ARG in
# scope, WORKDIR and USER before RUN, a multi-stage build copying a file RUN wrote (checked with
# skopeo inspect and umoci unpack: contents and modes); --target through the annotation;
# dockerStrategy.from replacing the last FROM; no network for RUN unless the annotation asks
# for the host's; a failing RUN (DockerBuildFailed, the step and its output in the message and
# the log); SIGTERM during a long RUN (stopped within 2 s, no process or storage left); the
# backend annotation forcing native (RUN refused as before) and a COPY-only build still going
# native with a reproducible digest; --backends native refusing what only buildah builds; the
# chosen backend in status.backend, the log and the manifest's annotations.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"
# shellcheck source=../lib/builder.sh
. "$SW_TESTS/lib/builder.sh"

sw_with_registry
command -v buildah >/dev/null || fail "buildah is not installed (run scripts/install-deps)"
BUSYBOX=$(command -v busybox) || fail "busybox is not installed (run scripts/install-deps)"
{ ldd "$BUSYBOX" 2>&1 || true; } | grep -q "not a dynamic" || fail "$BUSYBOX is not static (install busybox-static)"
[ "$(id -u)" -eq 0 ] || fail "the buildah backend needs root"

sw_fail_extra()
{
    if [ -f "$SW_TMP/builder.log" ]; then
        echo "---- last builder log ----" >&2
        tail -n 40 "$SW_TMP/builder.log" >&2
    fi
}

NS=buildah
WORK=$SW_TMP/work # --workdir: must be empty after every run
mkdir -p "$WORK"
BUILDER_FLAGS=()

mkbc()
{
    local out
    out=$(api POST buildconfigs -H 'Content-Type: application/json' -d "{\"apiVersion\":
        \"build.openshift.io/v1\", \"kind\": \"BuildConfig\", \"metadata\": {\"name\": \"$1\"
        ${3:+, \"annotations\": $3}}, \"spec\": $2}") || fail "create BuildConfig $1"
    [ "$(echo "$out" | sw_json 'at("metadata.name")')" = "$1" ] || fail "create BuildConfig $1: $out"
}

start_binary()
{
    api POST "buildconfigs/$1/instantiatebinary" -H 'Content-Type: application/octet-stream' \
        --data-binary "@$2" | sw_json 'at("metadata.name")'
}

patch_build()
{
    api PATCH "builds/$1" -H 'Content-Type: application/merge-patch+json' -d "$2" \
        >/dev/null || fail "patch build $1"
}

build_get() { api GET "builds/$1" | sw_json "$2"; }


# ctx NAME DOCKERFILE: a context directory $SW_TMP/NAME with the Dockerfile, tarred to NAME.tar.
ctx()
{
    mkdir -p "$SW_TMP/$1"
    printf '%s\n' "$2" >"$SW_TMP/$1/Dockerfile"
    tar -C "$SW_TMP/$1" -cf "$SW_TMP/$1.tar" .
}

# binary_build NAME OUTPUT_TAG [ANNOTATIONS_JSON]: a BuildConfig NAME for a binary Docker build
# pushing to $REG/OUTPUT_TAG, started with $SW_TMP/NAME.tar; prints the build's name.
binary_build()
{
    mkbc "$1" "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\",
        \"dockerStrategy\": {\"buildArgs\": [{\"name\": \"GREETING\", \"value\": \"hello\"}]}},
        \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/$2\"}}}" "${3:-}"
    start_binary "$1" "$SW_TMP/$1.tar"
}

config() { skopeo inspect --config --tls-verify=false "docker://$REG/$1" | sw_json "$2"; }

# ---- setup ----

sw_start_server
read -r PORT < <(reg_free_ports 1)
reg_start main "$PORT"
REG=127.0.0.1:$PORT
kc create namespace "$NS" >/dev/null || fail "create namespace"

# ---- 1. the busybox base image: FROM scratch, the static busybox, RUN --install ----

mkdir -p "$SW_TMP/base"
cp "$BUSYBOX" "$SW_TMP/base/busybox"
ctx base 'FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
ENV PATH=/bin
CMD ["/bin/sh"]'
B=$(binary_build base lib/busybox:1)
builder_ok "busybox base (FROM scratch + RUN --install)" "$B"
expect_contains "log: the backend and why" "Backend: buildah (the native backend does not build this Dockerfile)" "$OUT"
expect_contains "log: the native refusal" "Dockerfile:3: RUN is not supported" "$OUT"
expect_eq "status.backend" buildah "$(build_get "$B" 'at("status.backend")')"
BASE_DIGEST=$(reg_digest "$REG/lib/busybox:1")
expect_eq "details: imageDigest" "$BASE_DIGEST" "$(build_get "$B" 'at("status.output.to.imageDigest")')"
expect_eq "manifest annotation: backend" buildah \
    "$(reg_raw "$REG/lib/busybox:1" | sw_json 'at("annotations")["build.slipway.dev/backend"]')"
reg_unpack "$REG/lib/busybox:1" "$SW_TMP/u1"
expect_eq "busybox --install made /bin/sh a link to it" /bin/busybox "$(readlink "$SW_TMP/u1/rootfs/bin/sh")"
expect_eq "config: created is SOURCE_DATE_EPOCH (0)" "1970-01-01T00:00:00Z" "$(config lib/busybox:1 'at("created")')"

# ---- 2. RUN in both forms, ENV/ARG in RUN, WORKDIR and USER, multi-stage ----

ctx app "FROM $REG/lib/busybox:1 AS first
ARG GREETING=hi
ENV WHO=world
WORKDIR /work
RUN echo \"\$GREETING \$WHO from \$(pwd)\" > out.txt && chmod 0640 out.txt
RUN [\"/bin/sh\", \"-c\", \"echo exec form >> /work/out.txt\"]
RUN mkdir -m 1777 /shared && echo 'app:x:1234:1234::/:/bin/sh' >> /etc/passwd
USER app
RUN id -u > /shared/uid && echo \"user \$(id -un)\"

FROM $REG/lib/busybox:1
COPY --from=first /work/out.txt /out.txt
COPY --from=first /shared/uid /uid
RUN chmod 0751 /out.txt
CMD [\"cat\", \"/out.txt\"]"
B=$(binary_build app test/app:1)
builder_ok "multi-stage RUN build" "$B"
expect_contains "RUN output streams into the log" "user app" "$OUT"
reg_unpack "$REG/test/app:1" "$SW_TMP/u2"
R=$SW_TMP/u2/rootfs
expect_eq "RUN saw ARG (build arg), ENV and WORKDIR; exec form appended" \
    "hello world from /work|exec form" "$(tr '\n' '|' <"$R/out.txt" | sed 's/|$//')"
expect_eq "the mode RUN gave the file" 751 "$(stat -c %a "$R/out.txt")"
expect_eq "USER applied before RUN" 1234 "$(cat "$R/uid")"
expect_eq "the final stage only: no /work" no "$([ -e "$R/work" ] && echo yes || echo no)"
expect_eq "config: Cmd" '["cat", "/out.txt"]' "$(config test/app:1 'at("config.Cmd")')"
BASE_LAYERS=$(skopeo inspect --tls-verify=false "docker://$REG/lib/busybox:1" | sw_json 'o["Layers"]')
expect_eq "the base's layers are the first layers" "$BASE_LAYERS" \
    "$(skopeo inspect --tls-verify=false "docker://$REG/test/app:1" | sw_json 'o["Layers"][:1]')"
expect_match "base layer mounted or already there, not uploaded again" \
    "blob $(echo "$BASE_LAYERS" | sw_json 'o[0]'): [0-9]+ bytes, (mounted|skipped)" "$OUT"

# --target (annotation build.slipway.dev/target) builds the first stage
cp "$SW_TMP/app.tar" "$SW_TMP/app-target.tar"
B=$(binary_build app-target test/app:first '{"build.slipway.dev/target": "First"}')
builder_ok "--target first" "$B"
reg_unpack "$REG/test/app:first" "$SW_TMP/u3"
expect_eq "--target: the first stage's file" "hello world from /work" "$(head -n 1 "$SW_TMP/u3/rootfs/work/out.txt")"

# dockerStrategy.from replaces the last FROM (a digest pin of the base)
ctx pinned 'FROM example.invalid/never/pulled:1
RUN echo pinned > /pinned'
B=$(binary_build pinned test/pinned:1)
patch_build "$B" "{\"spec\": {\"strategy\": {\"dockerStrategy\": {\"from\":
    {\"kind\": \"DockerImage\", \"name\": \"$REG/lib/busybox@$BASE_DIGEST\"}}}}}"
builder_ok "dockerStrategy.from replaces FROM" "$B"
reg_unpack "$REG/test/pinned:1" "$SW_TMP/u4"
expect_eq "built on the pinned base" pinned "$(cat "$SW_TMP/u4/rootfs/pinned")"

# ---- 3. network: none by default, the host's on request ----

ctx net "FROM $REG/lib/busybox:1
RUN if wget -q -T 3 -O /reply http://$REG/v2/; then echo reached; else echo unreachable; fi"
B=$(binary_build net test/net:1)
builder_ok "RUN without network" "$B"
expect_contains "no network for RUN by default" unreachable "$OUT"
expect_contains "log says there is no network" "no network" "$OUT"
cp "$SW_TMP/net.tar" "$SW_TMP/nethost.tar"
B=$(binary_build nethost test/net:2 '{"build.slipway.dev/network": "host"}')
builder_ok "RUN with the host network" "$B"
expect_contains "the host network reaches the registry" reached "$OUT"

# ---- 3b. a base behind basic auth: pulled with the pull secret, which never reaches the log ----

read -r PPORT < <(reg_free_ports 1)
reg_start private "$PPORT" --htpasswd "$(reg_htpasswd puller 's3cret-pw')"
PRIV=127.0.0.1:$PPORT
skopeo copy -q --src-tls-verify=false --dest-tls-verify=false --dest-creds 'puller:s3cret-pw' \
    "docker://$REG/lib/busybox:1" "docker://$PRIV/lib/busybox:1" || fail "copy the base to $PRIV"
AUTH=$(printf 'puller:s3cret-pw' | base64)
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$PRIV" "$AUTH" >"$SW_TMP/pull.json"
chmod 600 "$SW_TMP/pull.json"
ctx private "FROM $PRIV/lib/busybox:1
RUN echo private-base-ran"
B=$(binary_build private test/private:1)
BUILDER_FLAGS=(--insecure-registry "$PRIV" --pull-auth "$SW_TMP/pull.json")
builder_ok "a base behind basic auth, with the pull secret" "$B"
expect_contains "the private base was pulled and RUN ran on it" private-base-ran "$OUT"
expect_not_contains "the password is not in the log" 's3cret-pw' "$OUT"
expect_not_contains "nor its base64" "$AUTH" "$OUT"
B=$(start_binary private "$SW_TMP/private.tar")
BUILDER_FLAGS=(--insecure-registry "$PRIV")
builder "$B"
BUILDER_FLAGS=()
expect_eq "without the pull secret: exit 1" 1 "$RC"
expect_eq "without the pull secret: PullBuilderImageFailed" PullBuilderImageFailed \
    "$(build_get "$B" 'at("status.reason")')"

# ---- 4. failures ----

ctx failing "FROM $REG/lib/busybox:1
RUN echo about to fail && exit 3"
B=$(binary_build failing test/failing:1)
builder "$B"
expect_eq "failing RUN: exit 1" 1 "$RC"
expect_contains "failing RUN: its output in the log" "about to fail" "$OUT"
expect_eq "failing RUN: reason" DockerBuildFailed "$(build_get "$B" 'at("status.reason")')"
expect_contains "failing RUN: the message names the step" 'RUN echo about to fail && exit 3' \
    "$(build_get "$B" 'at("status.message")')"
expect_contains "failing RUN: and the exit status" "exit status 3" "$(build_get "$B" 'at("status.message")')"
expect_eq "failing RUN: nothing pushed" "" "$(reg_digest "$REG/test/failing:1" 2>/dev/null)"

cp "$SW_TMP/failing.tar" "$SW_TMP/forced.tar"
B=$(binary_build forced test/forced:1 '{"build.slipway.dev/backend": "native"}')
builder "$B"
expect_eq "backend forced native: exit 1" 1 "$RC"
expect_contains "backend forced native: RUN refused as before" "Dockerfile:2: RUN is not supported" \
    "$(build_get "$B" 'at("status.message")')"

cp "$SW_TMP/failing.tar" "$SW_TMP/bogus.tar"
B=$(binary_build bogus test/bogus:1 '{"build.slipway.dev/backend": "docker"}')
builder "$B"
expect_contains "unknown backend annotation refused" 'unknown backend "docker"' \
    "$(build_get "$B" 'at("status.message")')"

cp "$SW_TMP/app.tar" "$SW_TMP/onlynative.tar"
B=$(binary_build onlynative test/onlynative:1)
BUILDER_FLAGS=(--backends native)
builder "$B"
BUILDER_FLAGS=()
expect_eq "--backends native: exit 1" 1 "$RC"
expect_contains "--backends native: says buildah is not allowed" "not allowed by this server" \
    "$(build_get "$B" 'at("status.message")')"

# a buildah that exits but leaves a process holding its output: the step ends when buildah does
printf '#!/bin/sh\n(sleep 37 &)\necho "Error: fake buildah failed"\nexit 1\n' >"$SW_TMP/fake-buildah"
chmod 755 "$SW_TMP/fake-buildah"
cp "$SW_TMP/failing.tar" "$SW_TMP/fake.tar"
B=$(binary_build fake test/fake:1)
T0=$(date +%s)
SLIPWAY_BUILDAH=$SW_TMP/fake-buildah builder "$B"
ELAPSED=$(($(date +%s) - T0))
pkill -f 'sleep 37' || true
expect_eq "a buildah leaving a process behind: exit 1" 1 "$RC"
[ "$ELAPSED" -lt 15 ] || fail "the builder waited ${ELAPSED} s for a process buildah left behind"
pass "the builder did not wait for what buildah left behind (${ELAPSED} s)"
expect_contains "its Error: line is the message" "fake buildah failed" "$(build_get "$B" 'at("status.message")')"

# ---- 5. COPY-only still goes native, reproducibly ----

mkdir -p "$SW_TMP/copyonly"
echo "static" >"$SW_TMP/copyonly/index.html"
ctx copyonly "FROM $REG/lib/busybox:1
COPY index.html /www/"
B=$(binary_build copyonly test/copyonly:1)
builder_ok "COPY-only build" "$B"
expect_contains "COPY-only: native" "Backend: native (the Dockerfile needs nothing more)" "$OUT"
expect_eq "COPY-only: status.backend" native "$(build_get "$B" 'at("status.backend")')"
D1=$(reg_digest "$REG/test/copyonly:1")
api DELETE "builds/$B" >/dev/null
B=$(start_binary copyonly "$SW_TMP/copyonly.tar")
patch_build "$B" '{"spec": {"strategy": {"dockerStrategy": {"noCache": true}}}}'
builder_ok "COPY-only build again" "$B"
expect_eq "COPY-only: the same digest again" "$D1" "$(reg_digest "$REG/test/copyonly:1")"

# ---- 6. SIGTERM during a long RUN: stopped within 2 s, nothing left behind ----

ctx slow "FROM $REG/lib/busybox:1
RUN echo sleeping-now && sleep 60"
B=$(binary_build slow test/slow:1)
api POST "builds/$B/token" | sw_json 'at("token")' >"$SW_TMP/token"
"$SLIPWAY" builder --server "$SW_URL" --ca "$SW_DIR/tls.crt" --token-file "$SW_TMP/token" \
    --namespace "$NS" --build "$B" --insecure-registry "$REG" --workdir "$WORK" \
    >"$SW_TMP/builder.log" 2>&1 &
BPID=$!
wait_for "the long RUN started" 60 grep -q '^sleeping-now' "$SW_TMP/builder.log"
T0=$(date +%s%N)
kill -TERM "$BPID"
for _ in $(seq 40); do
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.05
done
kill -0 "$BPID" 2>/dev/null && fail "the builder still runs 2 s after SIGTERM"
wait "$BPID"
T1=$(date +%s%N)
pass "SIGTERM during RUN: the builder exited in $(((T1 - T0) / 1000000)) ms"
expect_eq "no sleep 60 left" "" "$(pgrep -f 'sleep 60' || true)"
expect_eq "no buildah left" "" "$(pgrep -f "buildah --root $WORK" || true)"
expect_eq "no storage left in the workdir" "" "$(ls -A "$WORK")"

# ---- 7. the Source strategy (s2i-style): assemble from the builder image runs on the source ----

mkdir -p "$SW_TMP/s2i-builder"
cat >"$SW_TMP/s2i-builder/assemble" <<'EOF'
#!/bin/sh
set -e
echo "---> assembling in $MODE mode"
mkdir -p /opt/app
cp -R /tmp/src/. /opt/app/
echo "assembled $(cat /tmp/src/app.txt) in $MODE mode" >/opt/app/built.txt
chmod 0600 /opt/app/built.txt
EOF
printf '#!/bin/sh\nexec cat /opt/app/built.txt\n' >"$SW_TMP/s2i-builder/run"
chmod 755 "$SW_TMP/s2i-builder/assemble" "$SW_TMP/s2i-builder/run"
ctx s2i-builder "FROM $REG/lib/busybox:1
COPY assemble run /usr/libexec/s2i/"
B=$(binary_build s2i-builder lib/s2i-builder:1)
builder_ok "the s2i builder image (COPY-only: native)" "$B"
mkdir -p "$SW_TMP/s2i-src"
echo "version-7" >"$SW_TMP/s2i-src/app.txt"
tar -C "$SW_TMP/s2i-src" -cf "$SW_TMP/s2i.tar" .
mkbc s2i "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Source\",
    \"sourceStrategy\": {\"from\": {\"kind\": \"DockerImage\", \"name\": \"$REG/lib/s2i-builder:1\"},
    \"env\": [{\"name\": \"MODE\", \"value\": \"prod\"}]}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/s2i:1\"}}}"
B=$(start_binary s2i "$SW_TMP/s2i.tar")
builder_ok "Source strategy build" "$B"
expect_contains "Source: assemble's output in the log, env in scope" "---> assembling in prod mode" "$OUT"
expect_eq "Source: built by buildah" buildah "$(build_get "$B" 'at("status.backend")')"
expect_ok "describe build" "$SLIPWAY" describe -n "$NS" "build/$B"
expect_match "describe: the backend" 'Backend:[[:space:]]+buildah' "$OUT"
expect_match "describe: the builder image" "From Image:[[:space:]]+DockerImage $REG/lib/s2i-builder:1" "$OUT"
reg_unpack "$REG/test/s2i:1" "$SW_TMP/u5"
expect_eq "Source: the file assemble wrote" "assembled version-7 in prod mode" \
    "$(cat "$SW_TMP/u5/rootfs/opt/app/built.txt")"
expect_eq "Source: with its mode" 600 "$(stat -c %a "$SW_TMP/u5/rootfs/opt/app/built.txt")"
expect_eq "Source: the source is in /tmp/src" version-7 "$(cat "$SW_TMP/u5/rootfs/tmp/src/app.txt")"
expect_eq "Source: CMD is the run script" '["/usr/libexec/s2i/run"]' "$(config test/s2i:1 'at("config.Cmd")')"
expect_contains "Source: the env is the image's too" "MODE=prod" "$(config test/s2i:1 'at("config.Env")')"
# a builder image that runs as uid 1001: the source is its own, as s2i makes it
mkdir -p "$SW_TMP/s2i-user"
printf '#!/bin/sh\nset -e\necho "assembled as $(id -u)" > /tmp/src/built.txt\n' >"$SW_TMP/s2i-user/assemble"
chmod 755 "$SW_TMP/s2i-user/assemble"
ctx s2i-user "FROM $REG/lib/busybox:1
COPY assemble /usr/libexec/s2i/
USER 1001"
B=$(binary_build s2i-user lib/s2i-user:1)
builder_ok "a non-root s2i builder image" "$B"
mkbc s2i-nonroot "{\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Source\",
    \"sourceStrategy\": {\"from\": {\"kind\": \"DockerImage\", \"name\": \"$REG/lib/s2i-user:1\"}}},
    \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/s2i-nonroot:1\"}}}"
B=$(start_binary s2i-nonroot "$SW_TMP/s2i.tar")
builder_ok "Source strategy as uid 1001" "$B"
reg_unpack "$REG/test/s2i-nonroot:1" "$SW_TMP/u6"
expect_eq "Source as uid 1001: assemble wrote into its /tmp/src" "assembled as 1001" \
    "$(cat "$SW_TMP/u6/rootfs/tmp/src/built.txt")"
expect_fails "Source without a builder image: 422" "sourceStrategy.from.name: Required value" \
    kc create -n "$NS" -f - <<<'{"apiVersion":"build.openshift.io/v1","kind":"BuildConfig","metadata":{"name":"nofrom"},"spec":{"strategy":{"type":"Source","sourceStrategy":{}}}}'
expect_ok "new-build --strategy=source" "$SLIPWAY" new-build -n "$NS" --binary --name=s2icli \
    --strategy=source --image-stream=builder:1
expect_eq "new-build: a Source strategy on the stream tag" 'Source ImageStreamTag builder:1' \
    "$(api GET buildconfigs/s2icli | sw_json '" ".join([at("spec.strategy.type"), at("spec.strategy.sourceStrategy.from.kind"), at("spec.strategy.sourceStrategy.from.name")])')"

# ---- 8. through the build controller: logSnippet, cancel, deadline ----

# the Builds above were run by this script, not a controller: they are still New, and the
# controller would start them all
kc delete -n "$NS" builds --all >/dev/null || fail "delete the builds"
sw_stop_server
BTMP=$SW_TMP/btmp # the process strategy's per-build directories
mkdir -p "$BTMP"
SW_CONTROLLERS=1 TMPDIR=$BTMP sw_start_server --insecure-registry "$REG"
# mkbc_inline NAME DOCKERFILE [EXTRA SPEC MEMBERS]: a BuildConfig with an inline Dockerfile.
mkbc_inline()
{
    mkbc "$1" "{\"source\": {\"type\": \"Dockerfile\", \"dockerfile\": \"$2\"},
        \"strategy\": {\"type\": \"Docker\", \"dockerStrategy\": {}} ${3:+, $3},
        \"output\": {\"to\": {\"kind\": \"DockerImage\", \"name\": \"$REG/test/$1:1\"}}}"
}
instantiate()
{
    api POST "buildconfigs/$1/instantiate" -H 'Content-Type: application/json' \
        -d '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1"}' | sw_json 'at("metadata.name")'
}
phase() { build_get "$1" '"%s/%s" % (at("status.phase"), at("status.reason") or "")'; }
mkbc_inline ctlfail "FROM $REG/lib/busybox:1\\nRUN echo step-output-here \\u0026\\u0026 exit 4"
B=$(instantiate ctlfail)
wait_for "a failing RUN through the controller: Failed/DockerBuildFailed" 90 is_eq Failed/DockerBuildFailed phase "$B"
expect_contains "logSnippet has the RUN's output" step-output-here "$(build_get "$B" 'at("status.logSnippet")')"
expect_contains "the message names the step" 'RUN echo step-output-here && exit 4' "$(build_get "$B" 'at("status.message")')"

mkbc_inline ctlslow "FROM $REG/lib/busybox:1\\nRUN echo sleeping-now \\u0026\\u0026 sleep 60"
B=$(instantiate ctlslow)
for _ in $(seq 300); do
    api GET "builds/$B/log" | grep -q '^sleeping-now' && break
    sleep 0.1
done
api GET "builds/$B/log" | grep -q '^sleeping-now' || fail "the long RUN did not start"
T0=$(date +%s%N)
api PATCH "builds/$B/status" -H 'Content-Type: application/merge-patch+json' \
    -d '{"status":{"cancelled":true}}' >/dev/null
for _ in $(seq 50); do
    [ "$(phase "$B")" = Cancelled/CancelledBuild ] && break
    sleep 0.05
done
MS=$((($(date +%s%N) - T0) / 1000000))
expect_eq "cancel during RUN: Cancelled" Cancelled/CancelledBuild "$(phase "$B")"
[ "$MS" -le 2000 ] || fail "cancel during RUN took $MS ms (want at most 2 s)"
pass "cancel during RUN: Cancelled in $MS ms"
wait_for "cancel: no sleep 60 left" 5 is_eq "" pgrep -f 'sleep 60'
wait_for "cancel: no build directory left" 5 is_eq "" ls -A "$BTMP"

mkbc_inline ctldeadline "FROM $REG/lib/busybox:1\\nRUN sleep 60" '"completionDeadlineSeconds": 4'
B=$(instantiate ctldeadline)
wait_for "deadline during RUN: Failed/DeadlineExceeded" 60 is_eq Failed/DeadlineExceeded phase "$B"
wait_for "deadline: no sleep 60 left" 5 is_eq "" pgrep -f 'sleep 60'
wait_for "deadline: no build directory left" 5 is_eq "" ls -A "$BTMP"

sw_finish
