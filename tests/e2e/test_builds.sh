#!/usr/bin/env bash
# test_builds.sh: Builds end to end with every real party (issue 4, "Tests"): `slipway server`
# with its embedded build controller, the real `slipway builder` it spawns, the slipway CLI and
# Debian's docker-registry as the server's --image-registry; pushed images are checked with
# skopeo inspect and skopeo copy + umoci unpack (files, modes, recorded owners, config).
# Covers: builds from a directory (start-build --from-dir --follow, FROM scratch), an inline
# Dockerfile on an imported ImageStreamTag base (dockerStrategy.from), a local git repository
# (file://), each to an ImageStreamTag (digest = skopeo's, the stream's tag event), and to a
# DockerImage; the same input twice (touched, with and without layer reuse) gives the same
# digest; ImageChange: a re-pushed base with a new digest gives exactly one build, the same
# digest none; Serial queues, SerialLatestOnly cancels the older queued build; cancel mid-pull
# and mid-push, a SIGKILLed builder (Error with a logSnippet), completionDeadlineSeconds
# (Failed); bad input (RUN, an unknown instruction, COPY ../x, a symlink out, a malformed tar)
# fails with a clear reason and tags nothing; webhooks (wrong secret 401, right secret builds).
# Slow builds come from tests/e2e/tools/faultproxy.py answering 429 with a Retry-After for their
# base image or their upload, so cancel, kill and deadline hit a builder that is surely running.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"

START=$(date +%s)
command -v git >/dev/null || fail "git is not installed"
sw_with_registry

NS=team
BAPI=/apis/build.openshift.io/v1/namespaces/$NS
IAPI=/apis/image.openshift.io/v1/namespaces/$NS

# builder_pids [BUILD]: the builders our server started (for BUILD only, when given); the
# controller runs them as "/proc/self/exe builder --server URL ... --build NAME ...".
builder_pids()
{
    [ -n "$SW_URL" ] || return 0
    pgrep -f -- " builder --server $SW_URL .*--build ${1:-[^ ]+} " || true
}

# stop_builders: SIGKILL any builder left over (the server also kills them when it stops);
# returns the status it was called with, like reg_cleanup.
stop_builders()
{
    local rc=$? p
    for p in $(builder_pids); do
        kill -9 "$p" 2>/dev/null
    done
    return "$rc"
}
trap 'reg_cleanup; stop_builders; sw_cleanup' EXIT # sw_with_registry's, plus the builders

sw_fail_extra()
{
    local last
    last=$(find "$SW_DIR/logs/$NS" -name '*.log' -printf '%T@ %p\n' 2>/dev/null | sort -n |
        tail -n 1 | cut -d' ' -f2-)
    if [ -n "$last" ]; then
        echo "---- last build log ($last) ----" >&2
        tail -n 20 "$last" >&2
    fi
}

# libgit2 1.5 (Debian) leaks pcre2 match data once per clone (see test_builder.sh); the builders
# inherit these options from the server.
printf 'leak:libpcre2-8.so\nleak:libgit2.so\n' >"$SW_TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$SW_TMP/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export TMPDIR=$SW_TMP/tmp # the controller's per-build directories: empty at the end
mkdir -p "$TMPDIR"

# sw VERB ARGS...: the slipway CLI in namespace NS.
sw()
{
    local verb=$1
    shift
    "$SLIPWAY" "$verb" -n "$NS" "$@"
}

# bq BUILD EXPR: EXPR (sw_json) over the Build.
bq() { sw_api GET "$BAPI/builds/$1" | sw_json "$2"; }
phase() { bq "$1" '(at("status.phase") or "") + "/" + (at("status.reason") or "")'; }

# wait_build BUILD PHASE/REASON SECONDS: polls until the build is there.
wait_build()
{
    local got deadline=$(($(date +%s) + $3))
    while :; do
        got=$(phase "$1")
        [ "$got" = "$2" ] && { pass "$1 is $2"; return 0; }
        [ "$(date +%s)" -lt "$deadline" ] ||
            fail "$1: after $3 s it is [$got], expected [$2]; message: $(bq "$1" 'at("status.message")')"
        sleep 0.2
    done
}

# builds_of BC: the names of BC's builds in build-number order.
builds_of()
{
    sw_api GET "$BAPI/builds?labelSelector=openshift.io/build-config.name=$1" |
        sw_json '" ".join(sorted((i["metadata"]["name"] for i in o["items"]), key=lambda n: int(n.rsplit("-", 1)[1])))'
}

# events STREAM TAG: the images of the tag's events, newest first.
events()
{
    sw_api GET "$IAPI/imagestreams/$1" |
        sw_json '" ".join(i["image"] for t in at("status.tags") or [] if t["tag"] == "'"$2"'" for i in t["items"])'
}

# wait_log BUILD NEEDLE SECONDS: the build's log (shipped by the controller) contains NEEDLE.
wait_log()
{
    local deadline=$(($(date +%s) + $3))
    until grep -qF -- "$2" <<<"$(sw_api GET "$BAPI/builds/$1/log?nowait=true" 2>/dev/null)"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$1: no [$2] in its log after $3 s"
        sleep 0.1
    done
}

# wait_builder BUILD: sets BPID to the pid of the build's builder process once it exists.
wait_builder()
{
    for _ in $(seq 100); do
        BPID=$(builder_pids "$1")
        [ -n "$BPID" ] && return 0
        sleep 0.1
    done
    fail "no builder process for $1"
}

# check_pushed WHAT BUILD STREAM TAG: BUILD is Complete, its digest is the one the registry has
# under $REG/$NS/STREAM:TAG and the stream's newest event for TAG is that image. Sets DIGEST.
check_pushed()
{
    local what=$1 b=$2 is=$3 tag=$4 head
    wait_build "$b" Complete/ 30
    DIGEST=$(reg_digest "$REG/$NS/$is:$tag") || fail "$what: skopeo inspect $REG/$NS/$is:$tag"
    expect_eq "$what: imageDigest is the pushed digest" "$DIGEST" \
        "$(bq "$b" 'at("status.output.to.imageDigest")')"
    for _ in $(seq 50); do
        head=$(events "$is" "$tag")
        [ "${head%% *}" = "$DIGEST" ] && break
        sleep 0.1
    done
    expect_eq "$what: the stream's tag event is the pushed digest" "$DIGEST" "${head%% *}"
    expect_eq "$what: the event's pull spec" "$REG/$NS/$is@$DIGEST" \
        "$(sw_api GET "$IAPI/imagestreams/$is" |
            sw_json '[t for t in at("status.tags") if t["tag"] == "'"$tag"'"][0]["items"][0]["dockerImageReference"]')"
}

# untagged WHAT STREAM TAG: neither the registry nor the stream has the output tag.
untagged()
{
    expect_eq "$1: nothing pushed to $REG/$NS/$2:$3" "" "$(reg_digest "$REG/$NS/$2:$3" 2>/dev/null)"
    expect_eq "$1: no tag event on $2:$3" "" "$(events "$2" "$3")"
}

# cfg REF EXPR: EXPR over the image config of a pushed REF.
cfg() { reg_config "$REG/$1" | sw_json "$2"; }

# apply YAML: kubectl apply in NS.
apply() { kc apply -n "$NS" -f - >/dev/null <<<"$1" || fail "kubectl apply: $1"; }

# ---- setup: registry, a slow proxy in front of it, the server with its controllers ----

read -r PORT < <(reg_free_ports 1)
reg_start main "$PORT"
REG=127.0.0.1:$PORT
# Bases pulled through SLOW make builds slow: the builder honours each 429's Retry-After.
# serial/slo: the first two requests only, Retry-After: 2 (the first build of each is 4 s slow);
# hang: always, Retry-After: 3 (9 s per request, then the builder's retries run out); pushhang:
# the same for every blob upload to that output repository.
reg_start_tool slow "$SW_TESTS/e2e/tools/faultproxy.py" --upstream "http://$REG" \
    --log "$REG_TMP/slow.requests" \
    --rule 429:2 2 '^/v2/slow/serial/manifests/' \
    --rule 429:2 2 '^/v2/slow/slo/manifests/' \
    --rule 429:3 always '^/v2/slow/hang/manifests/' \
    --rule 429:3 always '^/v2/slow/pushhang/blobs/uploads/'
SLOW=127.0.0.1:${REG_TOOL_PORT[slow]}
# --build-backends native: these builds are the native backend's (RUN goes to buildah only where
# the server allows it; test_buildah.sh covers that backend)
SW_CONTROLLERS=1 sw_start_server --image-registry "$REG" --insecure-registry "$REG" \
    --insecure-registry "$SLOW" --build-backends native
kc create namespace "$NS" >/dev/null || fail "create namespace $NS"

reg_build_image base amd64
reg_push base "$REG/base/img:1"
for r in serial slo hang; do
    reg_push base "$REG/slow/$r:1"
done
BASE1=$(reg_digest "$REG/base/img:1") || fail "skopeo inspect the base"
BASE1_LAYER=$(skopeo inspect --tls-verify=false "docker://$REG/base/img:1" | sw_json 'o["Layers"][0]')

# ---- 1. a directory, FROM scratch, to an ImageStreamTag; the same input again ----

CTX=$SW_TMP/ctx
mkdir -p "$CTX/app/bin" "$CTX/conf"
chmod 755 "$CTX/app" "$CTX/app/bin"
printf '#!/bin/sh\nexec echo server "$@"\n' >"$CTX/app/bin/server"
echo "some data" >"$CTX/app/data.txt"
echo "listen=8080" >"$CTX/conf/app.conf"
chmod 755 "$CTX/app/bin/server"
chmod 640 "$CTX/app/data.txt"
chmod 644 "$CTX/conf/app.conf"
ln -s data.txt "$CTX/app/link"
cat >"$CTX/Dockerfile" <<'EOF'
FROM scratch
ARG VERSION=1.0
ENV APP_HOME=/app MODE=test
LABEL org.example.version=$VERSION team=blue
COPY --chown=1000:2000 app/ /app/
COPY --chmod=0600 conf/app.conf /etc/app/
WORKDIR /app
USER 1000:2000
EXPOSE 8080 53/udp
ENTRYPOINT ["/app/bin/server"]
CMD ["--port", "8080"]
EOF

check_directory()
{
    local r=$SW_TMP/u-dir/rootfs entries
    expect_ok "new-build DIR" sw new-build "$CTX" --name=dir
    expect_ok "start-build --from-dir --follow" sw start-build dir --from-dir="$CTX" --follow
    expect_contains "--follow prints the builder's log" "STEP 5: COPY --chown=1000:2000 app/ /app/" "$OUT"
    check_pushed "directory build" dir-1 dir latest
    D_DIR=$DIGEST
    expect_contains "--follow shows the pushed digest" "Successfully pushed $REG/$NS/dir:latest@$D_DIR" "$OUT"
    expect_ok "kubectl wait --for=condition=Complete (OpenShift's build conditions)" \
        kc wait -n "$NS" --for=condition=Complete build/dir-1 --timeout=10s
    expect_eq "one condition per phase it went through, the current one True" \
        "New=False Pending=False Running=False Complete=True" \
        "$(bq dir-1 '" ".join(c["type"] + "=" + c["status"] for c in at("status.conditions"))')"
    expect_eq "stages reported" "FetchInputs PullImages Build PushImage" \
        "$(bq dir-1 '" ".join(s["name"] for s in at("status.stages"))')"
    expect_eq "config: Env" '["APP_HOME=/app", "MODE=test"]' "$(cfg "$NS/dir:latest" 'at("config.Env")')"
    expect_eq "config: Labels (ARG default substituted)" '{"org.example.version": "1.0", "team": "blue"}' \
        "$(cfg "$NS/dir:latest" 'at("config.Labels")')"
    expect_eq "config: Entrypoint and Cmd" '[["/app/bin/server"], ["--port", "8080"]]' \
        "$(cfg "$NS/dir:latest" '[at("config.Entrypoint"), at("config.Cmd")]')"
    expect_eq "config: WorkingDir and User" "/app 1000:2000" \
        "$(cfg "$NS/dir:latest" 'at("config.WorkingDir") + " " + at("config.User")')"
    expect_eq "config: ExposedPorts" '["53/udp", "8080/tcp"]' \
        "$(cfg "$NS/dir:latest" 'sorted(at("config.ExposedPorts"))')"
    expect_eq "config: os, architecture, created" "linux amd64 1970-01-01T00:00:00Z" \
        "$(cfg "$NS/dir:latest" 'o["os"] + " " + o["architecture"] + " " + o["created"]')"
    reg_unpack "$REG/$NS/dir:latest" "$SW_TMP/u-dir"
    expect_eq "unpacked: contents" "some data|listen=8080" "$(cat "$r/app/data.txt")|$(cat "$r/etc/app/app.conf")"
    cmp -s "$CTX/app/bin/server" "$r/app/bin/server" || fail "unpacked: app/bin/server differs"
    pass "unpacked: app/bin/server is the context's"
    expect_eq "unpacked: modes (COPY keeps them, --chmod=0600 sets one)" "755 640 600" \
        "$(stat -c %a "$r/app/bin/server" "$r/app/data.txt" "$r/etc/app/app.conf" | tr '\n' ' ' | sed 's/ $//')"
    expect_eq "unpacked: the symlink" "data.txt" "$(readlink "$r/app/link")"
    if [ -e "$r/Dockerfile" ] || [ -e "$r/conf" ]; then
        fail "unpacked: files that were not copied are there"
    fi
    pass "unpacked: only what was copied"
    entries=$(reg_layer_entries "$SW_TMP/u-dir.oci")
    expect_contains "layer: the destination directory owned 1000:2000" "d app 0755 1000:2000" "$entries"
    expect_contains "layer: files owned 1000:2000" "f app/bin/server 0755 1000:2000" "$entries"
    expect_contains "layer: the symlink owned 1000:2000" "l app/link 0777 1000:2000 ->data.txt" "$entries"
    expect_contains "layer: COPY without --chown is root's, --chmod applied" \
        "f etc/app/app.conf 0600 0:0" "$entries"
    expect_eq "one layer per COPY" 2 "$(reg_raw "$REG/$NS/dir:latest" | sw_json 'len(o["layers"])')"

    # The same input (every mtime touched): the same digest, and no second tag event.
    find "$CTX" -exec touch -h -d '2001-02-03 04:05:06' {} +
    expect_ok "the same directory again (touched), --wait" sw start-build dir --from-dir="$CTX" --wait
    check_pushed "the same input again" dir-2 dir latest
    expect_eq "same input twice: same digest" "$D_DIR" "$DIGEST"
    expect_eq "same image: the stream keeps one event" "$D_DIR" "$(events dir latest)"
}

# ---- 2. DockerImage output, no layer reuse: the same bytes as the stream's image ----

check_docker_output()
{
    apply "apiVersion: build.openshift.io/v1
kind: BuildConfig
metadata: {name: ext}
spec:
  source: {type: Binary}
  strategy: {type: Docker, dockerStrategy: {noCache: true}}
  output: {to: {kind: DockerImage, name: $REG/ext/app:v1}}"
    expect_ok "DockerImage output: start-build --wait" sw start-build ext --from-dir="$CTX" --wait
    wait_build ext-1 Complete/ 5
    expect_eq "DockerImage output: imageDigest is the pushed digest" \
        "$(reg_digest "$REG/ext/app:v1")" "$(bq ext-1 'at("status.output.to.imageDigest")')"
    expect_eq "DockerImage output: the same bytes as the dir build's (other repository)" "$D_DIR" \
        "$(reg_digest "$REG/ext/app:v1")"
    expect_eq "DockerImage output: outputDockerImageReference" "$REG/ext/app:v1" \
        "$(bq ext-1 'at("status.outputDockerImageReference")')"
    run kc get is ext -n "$NS"
    [ "$RC" -ne 0 ] || fail "DockerImage output: a stream ext was created"
    pass "DockerImage output: no stream"
    expect_ok "DockerImage output again (noCache)" sw start-build ext --from-dir="$CTX" --wait
    expect_not_contains "noCache: no layer reused" "reused from the previous image" "$(sw logs build/ext-2)"
    expect_eq "noCache rebuild: same digest" "$D_DIR" "$(bq ext-2 'at("status.output.to.imageDigest")')"
}

# ---- 3. inline Dockerfile on an imported ImageStreamTag; ImageChange triggers ----

check_inline_trigger()
{
    local r=$SW_TMP/u-inline/rootfs base2 layer2
    expect_ok "import the base into base:v1" sw import-image base:v1 --from="$REG/base/img:1" --confirm --insecure
    expect_eq "base:v1 is the pushed base" "$BASE1" "$(events base v1)"
    # shellcheck disable=SC2016 # $A is the Dockerfile's
    apply 'apiVersion: build.openshift.io/v1
kind: BuildConfig
metadata: {name: inline}
spec:
  source:
    type: Dockerfile
    dockerfile: |
      FROM placeholder
      ENV PATH=/opt/bin:$A
      LABEL stage=inline
      WORKDIR /srv/www
      USER 33
      EXPOSE 443
      CMD ["serve"]
  strategy:
    type: Docker
    dockerStrategy:
      from: {kind: ImageStreamTag, name: "base:v1"}
  output:
    to: {kind: ImageStreamTag, name: "inline:latest"}
  triggers:
  - type: ImageChange
    imageChange: {}'
    check_pushed "inline Dockerfile on base:v1" inline-1 inline latest
    D_INLINE=$DIGEST
    expect_eq "the first build was the ImageChange trigger's" "Image change $REG/base/img@$BASE1" \
        "$(bq inline-1 'at("spec.triggeredBy.0.message") + " " + at("spec.triggeredBy.0.imageChangeBuild.imageID")')"
    expect_eq "the base resolved to the imported image" "DockerImage $REG/base/img@$BASE1" \
        "$(bq inline-1 'at("spec.strategy.dockerStrategy.from.kind") + " " + at("spec.strategy.dockerStrategy.from.name")')"
    # on a base image WORKDIR records no directory (the base may have it: an existing /tmp
    # keeps its 1777; the runtime makes a missing one), so the base's layer is the only one
    expect_eq "the base's layer, and no layer for WORKDIR" "$BASE1_LAYER 1" \
        "$(reg_raw "$REG/$NS/inline:latest" | sw_json 'o["layers"][0]["digest"] + " " + str(len(o["layers"]))')"
    expect_eq "config: the base's Env, ENV seeing it" '["A=B", "PATH=/opt/bin:B"]' \
        "$(cfg "$NS/inline:latest" 'at("config.Env")')"
    expect_eq "config: Entrypoint inherited; Cmd, WorkingDir, User, ExposedPorts set" \
        '[["/bin/sh"], ["serve"], "/srv/www", "33", ["443/tcp"]]' \
        "$(cfg "$NS/inline:latest" '[at("config.Entrypoint"), at("config.Cmd"), at("config.WorkingDir"), at("config.User"), sorted(at("config.ExposedPorts"))]')"
    expect_eq "config: the base's and the new labels" '{"io.slipway.test": "base", "stage": "inline"}' \
        "$(cfg "$NS/inline:latest" 'at("config.Labels")')"
    reg_unpack "$REG/$NS/inline:latest" "$SW_TMP/u-inline"
    if [ ! -f "$r/hello.txt" ] || [ -e "$r/srv/www" ]; then
        fail "unpacked inline: no hello.txt, or a /srv/www the base does not have"
    fi
    pass "unpacked inline: the base's file, the base's tree untouched by WORKDIR"

    # A new base image with a new digest: exactly one build, on it.
    reg_push_new base2 amd64 "$REG/base/img:1"
    base2=$(reg_digest "$REG/base/img:1")
    [ "$base2" != "$BASE1" ] || fail "the re-pushed base has the old digest"
    layer2=$(skopeo inspect --tls-verify=false "docker://$REG/base/img:1" | sw_json 'o["Layers"][0]')
    expect_ok "re-import base:v1 (new digest)" sw import-image base:v1
    expect_eq "base:v1 has the new image" "$base2 $BASE1" "$(events base v1)"
    check_pushed "ImageChange rebuild" inline-2 inline latest
    expect_eq "the rebuild is on the new base" "$REG/base/img@$base2 $layer2" \
        "$(bq inline-2 'at("spec.strategy.dockerStrategy.from.name")') $(reg_raw "$REG/$NS/inline:latest" | sw_json 'o["layers"][0]["digest"]')"
    [ "$DIGEST" != "$D_INLINE" ] || fail "the rebuild on a new base has the old digest"
    expect_eq "the output stream has two events" "$DIGEST $D_INLINE" "$(events inline latest)"
    sleep 2
    expect_eq "a new base digest: exactly one new build" "inline-1 inline-2" "$(builds_of inline)"

    # The same image again (re-pushed identical, re-imported): nothing.
    reg_push base2 "$REG/base/img:1"
    expect_ok "re-import base:v1 (same digest)" sw import-image base:v1
    expect_eq "base:v1: no new event" "$base2 $BASE1" "$(events base v1)"
    sleep 3
    expect_eq "the same base digest: no build" "inline-1 inline-2" "$(builds_of inline)"

    # The same image under another host name for the same registry (an alias the server was not
    # told is insecure): the trigger compares digests, so nothing; OpenShift compares pull specs.
    local alias=localhost:${REG##*:} base3
    expect_ok "point base:v1 at the alias" kc patch -n "$NS" imagestream base --type json -p \
        '[{"op":"test","path":"/spec/tags/0/name","value":"v1"},{"op":"replace","path":"/spec/tags/0/from/name","value":"'"$alias"'/base/img:1"},{"op":"add","path":"/spec/tags/0/importPolicy/insecure","value":true}]'
    expect_ok "re-import base:v1 through the alias" sw import-image base:v1
    expect_eq "base:v1 shows the alias's pull spec" "$alias/base/img@$base2" \
        "$(sw_api GET "$IAPI/imagestreams/base" | sw_json '[t for t in at("status.tags") if t["tag"] == "v1"][0]["items"][0]["dockerImageReference"]')"
    sleep 3
    expect_eq "the same digest under another host name: no build" "inline-1 inline-2" "$(builds_of inline)"
    # A new digest through the alias: one build, and its builder pulls the base over plain HTTP
    # because the tag says importPolicy.insecure (the alias is not an --insecure-registry).
    reg_push_new base3 amd64 "$REG/base/img:1"
    base3=$(reg_digest "$REG/base/img:1")
    expect_ok "re-import base:v1 (new digest, through the alias)" sw import-image base:v1
    check_pushed "ImageChange rebuild through an insecure tag" inline-3 inline latest
    expect_eq "the rebuild is on the alias's new base" "$alias/base/img@$base3" \
        "$(bq inline-3 'at("spec.strategy.dockerStrategy.from.name")')"
}

# ---- 4. a local git repository ----

check_git()
{
    local git=$SW_TMP/repo commit r=$SW_TMP/u-git/rootfs secret code
    mkdir -p "$git/site"
    git -C "$git" init -q -b main || fail "git init"
    printf 'FROM scratch\nCOPY site/ /usr/share/www/\nCOPY run.sh /usr/local/bin/\nENTRYPOINT ["/usr/local/bin/run.sh"]\n' \
        >"$git/Dockerfile"
    echo "<h1>hello</h1>" >"$git/site/index.html"
    printf '#!/bin/sh\nexec httpd\n' >"$git/run.sh"
    chmod 755 "$git/run.sh"
    git -C "$git" add -A
    git -C "$git" -c user.name=t -c user.email=t@example.com commit -qm "the site" || fail "git commit"
    commit=$(git -C "$git" rev-parse HEAD)
    expect_ok "new-build LOCAL-REPO" sw new-build "$git" --name=gitapp
    expect_eq "a Git source with file://" "Git file://$(cd "$git" && pwd -P)" \
        "$(kc get bc gitapp -n "$NS" -o 'jsonpath={.spec.source.type} {.spec.source.git.uri}')"
    check_pushed "git build (ConfigChange)" gitapp-1 gitapp latest
    D_GIT=$DIGEST
    expect_eq "git: the commit label" "$commit" \
        "$(cfg "$NS/gitapp:latest" 'at("config.Labels")["io.openshift.build.commit.id"]')"
    expect_eq "git: Entrypoint" '["/usr/local/bin/run.sh"]' "$(cfg "$NS/gitapp:latest" 'at("config.Entrypoint")')"
    reg_unpack "$REG/$NS/gitapp:latest" "$SW_TMP/u-git"
    expect_eq "git: the committed files" "<h1>hello</h1> 755" \
        "$(cat "$r/usr/share/www/index.html") $(stat -c %a "$r/usr/local/bin/run.sh")"
    if [ -e "$r/.git" ] || [ -e "$r/usr/share/www/.git" ]; then
        fail "git: .git copied into the image"
    fi
    pass "git: no .git in the image"

    # Webhooks: the secret in the URL is the credential (no token, as a git host calls them): a
    # wrong secret is refused (401, no build); the right one starts a build.
    secret=$(kc get bc gitapp -n "$NS" -o 'jsonpath={.spec.triggers[?(@.type=="Generic")].generic.secret}')
    [ -n "$secret" ] || fail "new-build made no generic webhook secret"
    code=$(curl -sSk --max-time 30 -X POST "$SW_URL$BAPI/buildconfigs/gitapp/webhooks/not-the-secret/generic" \
        -o "$SW_TMP/hook.out" -w '%{http_code}')
    expect_eq "webhook with a wrong secret: 401" 401 "$code"
    expect_contains "... as a Status" "Unauthorized" "$(cat "$SW_TMP/hook.out")"
    expect_eq "... and starts nothing" 1 "$(kc get bc gitapp -n "$NS" -o 'jsonpath={.status.lastVersion}')"
    code=$(curl -sSk --max-time 30 -X POST "$SW_URL$BAPI/buildconfigs/gitapp/webhooks/$secret/generic" \
        -o "$SW_TMP/hook.out" -w '%{http_code}')
    expect_match "webhook with the right secret: 2xx" '^20[01]$' "$code"
    check_pushed "webhook build" gitapp-2 gitapp latest
    expect_eq "webhook build of the same commit: same digest" "$D_GIT" "$DIGEST"
}

# ---- 5. run policies ----

# slow_bc NAME POLICY REPO [EXTRA SPEC YAML]: an inline Dockerfile whose base is pulled through
# the slow proxy ($SLOW/slow/REPO:1), output NAME:latest.
slow_bc()
{
    apply "apiVersion: build.openshift.io/v1
kind: BuildConfig
metadata: {name: $1}
spec:
  runPolicy: $2
  source: {type: Dockerfile, dockerfile: \"FROM placeholder\nLABEL policy=$2\n\"}
  strategy:
    type: Docker
    dockerStrategy: {from: {kind: DockerImage, name: \"$SLOW/slow/$3:1\"}}
  output: {to: {kind: ImageStreamTag, name: \"$1:latest\"}}
${4:-}"
}

check_run_policies()
{
    local s1_end s2_start
    slow_bc ser Serial serial
    slow_bc slo SerialLatestOnly slo
    expect_ok "start-build ser" sw start-build ser
    expect_ok "start-build slo" sw start-build slo
    wait_build ser-1 Running/ 10
    wait_build slo-1 Running/ 10
    expect_ok "start-build ser again" sw start-build ser
    expect_ok "start-build slo again" sw start-build slo
    expect_ok "start-build slo a third time" sw start-build slo
    wait_build slo-2 Cancelled/CancelledBuild 10
    # read the queued build first: if the first still runs after, they overlapped
    expect_eq "Serial: the second build waits" "New/ Running/" "$(phase ser-2) $(phase ser-1)"
    expect_eq "SerialLatestOnly: the newest waits" "New/ Running/" "$(phase slo-3) $(phase slo-1)"
    check_pushed "Serial: the first" ser-1 ser latest
    expect_eq "the first Serial build got both 429s of its slow base" 2 \
        "$(grep -cE '^[0-9.]+ [A-Z]+ /v2/slow/serial/manifests/[^ ]+ 429 ' "$REG_TMP/slow.requests")"
    check_pushed "Serial: the second" ser-2 ser latest
    s1_end=$(bq ser-1 'at("status.completionTimestamp")')
    s2_start=$(bq ser-2 'at("status.startTimestamp")')
    [[ ! "$s2_start" < "$s1_end" ]] || fail "ser-2 started ($s2_start) before ser-1 completed ($s1_end)"
    pass "Serial: the second started after the first completed"
    check_pushed "SerialLatestOnly: the first" slo-1 slo latest
    check_pushed "SerialLatestOnly: the newest" slo-3 slo latest
    expect_eq "SerialLatestOnly: the cancelled build never started" "" "$(bq slo-2 'at("status.startTimestamp")')"
    expect_eq "SerialLatestOnly: builds" "slo-1 slo-2 slo-3" "$(builds_of slo)"
}

# ---- 6. cancel, a killed builder, the deadline ----

# stopped_by_sigterm BUILD PID T0_NS: the builder PID stopped on the controller's SIGTERM (it
# logged "Build stopped.") well before the 10 s SIGKILL grace, counted from T0_NS.
stopped_by_sigterm()
{
    local ms
    for _ in $(seq 50); do
        kill -0 "$2" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$2" 2>/dev/null && fail "the builder of $1 still runs"
    ms=$((($(date +%s%N) - $3) / 1000000))
    [ "$ms" -lt 5000 ] || fail "the builder of $1 took $ms ms to stop on SIGTERM"
    wait_log "$1" "Build stopped." 5
    pass "$1: the builder stopped on SIGTERM within $ms ms"
}

check_stops()
{
    local pid t0
    slow_bc cancel Serial hang
    slow_bc killed Serial hang
    slow_bc deadline Serial hang "  completionDeadlineSeconds: 1"
    apply "apiVersion: build.openshift.io/v1
kind: BuildConfig
metadata: {name: pushcancel}
spec:
  source: {type: Dockerfile, dockerfile: \"FROM scratch\nWORKDIR /srv\n\"}
  strategy: {type: Docker, dockerStrategy: {}}
  output: {to: {kind: DockerImage, name: \"$SLOW/slow/pushhang:latest\"}}"
    for bc in cancel killed deadline pushcancel; do
        expect_ok "start-build $bc" sw start-build "$bc"
    done

    # Cancel while the builder waits for its base image.
    wait_build cancel-1 Running/ 10
    wait_log cancel-1 "STEP 1: FROM" 10
    wait_builder cancel-1
    t0=$(date +%s%N)
    expect_ok "cancel-build mid-run" sw cancel-build cancel-1
    wait_build cancel-1 Cancelled/CancelledBuild 8
    expect_eq "a cancelled build's condition carries the reason" "True CancelledBuild" \
        "$(bq cancel-1 '[c["status"] + " " + c["reason"] for c in at("status.conditions") if c["type"] == "Cancelled"][0]')"
    expect_eq "cancelled: the message" "The build was cancelled by the user." "$(bq cancel-1 'at("status.message")')"
    stopped_by_sigterm cancel-1 "$BPID" "$t0"
    untagged "cancelled" cancel latest

    # A builder killed by a signal nobody in slipway sent.
    wait_build killed-1 Running/ 10
    wait_log killed-1 "STEP 1: FROM" 10
    wait_builder killed-1
    pid=$BPID
    kill -9 "$pid"
    wait_build killed-1 Error/BuilderKilled 8
    expect_contains "killed: the message names the signal" "SIGKILL" "$(bq killed-1 'at("status.message")')"
    expect_contains "killed: the logSnippet is the log's tail" "STEP 1: FROM" "$(bq killed-1 'at("status.logSnippet")')"
    untagged "killed" killed latest

    # completionDeadlineSeconds: 1 while the base takes seconds.
    wait_build deadline-1 Failed/DeadlineExceeded 10
    expect_contains "deadline: the message" "deadline (1s)" "$(bq deadline-1 'at("status.message")')"
    untagged "deadline" deadline latest

    # Cancel mid-push: the output's blob upload is refused with 429 until the cancel.
    for _ in $(seq 100); do
        grep -q 'POST /v2/slow/pushhang/blobs/uploads/ 429' "$REG_TMP/slow.requests" && break
        sleep 0.1
    done
    grep -q 'POST /v2/slow/pushhang/blobs/uploads/ 429' "$REG_TMP/slow.requests" ||
        fail "pushcancel-1 never started its upload"
    expect_eq "pushcancel-1 is pushing" Running/ "$(phase pushcancel-1)"
    wait_builder pushcancel-1
    t0=$(date +%s%N)
    expect_ok "cancel-build mid-push" sw cancel-build pushcancel-1
    wait_build pushcancel-1 Cancelled/CancelledBuild 8
    stopped_by_sigterm pushcancel-1 "$BPID" "$t0"
    expect_eq "cancelled mid-push: no manifest pushed" "" "$(reg_digest "$REG/slow/pushhang:latest" 2>/dev/null)"
    for b in cancel-1 killed-1 deadline-1 pushcancel-1; do
        expect_eq "$b: no imageDigest" "" "$(bq "$b" 'at("status.output.to.imageDigest")')"
    done
}

# ---- 7. bad input: a clear reason, nothing tagged ----

# bad WHAT NEEDLE REASON FILE-OPTION: start-build bad --wait fails with NEEDLE; the Build says
# REASON and NEEDLE; bad:latest is not tagged.
bad()
{
    local what=$1 needle=$2 reason=$3 b
    shift 3
    expect_fails "$what: start-build --wait fails" "$needle" sw start-build bad "$@" --wait
    b=$(printf '%s\n' "$OUT" | sed -n 's|^build.build.openshift.io/\(bad-[0-9]*\) started$|\1|p')
    [ -n "$b" ] || fail "$what: no build name in: $OUT"
    expect_eq "$what: phase and reason" "Failed/$reason" "$(phase "$b")"
    expect_contains "$what: the message" "$needle" "$(bq "$b" 'at("status.message")')"
    expect_contains "$what: the logSnippet" "error: build failed ($reason)" "$(bq "$b" 'at("status.logSnippet")')"
    untagged "$what" bad latest
}

# bad_ctx DOCKERFILE: a fresh context $SW_TMP/bad with a file f and DOCKERFILE (printf %b).
bad_ctx()
{
    rm -rf "$SW_TMP/bad"
    mkdir -p "$SW_TMP/bad"
    echo data >"$SW_TMP/bad/f"
    printf '%b' "$1" >"$SW_TMP/bad/Dockerfile"
}

check_bad_input()
{
    expect_ok "new-build bad" sw new-build "$CTX" --name=bad
    bad_ctx 'FROM scratch\nCOPY f /f\nRUN make install\n'
    bad "RUN" "Dockerfile:3: RUN is not supported" DockerBuildFailed --from-dir="$SW_TMP/bad"
    bad_ctx 'FROM scratch\n\nFROBNICATE f\n'
    bad "an unknown instruction" "Dockerfile:3: unknown instruction: FROBNICATE" DockerBuildFailed \
        --from-dir="$SW_TMP/bad"
    bad_ctx 'FROM scratch\nCOPY ../x /x\n'
    bad "COPY ../x" 'Dockerfile:2: COPY ../x /x: "../x" leaves the build context' DockerBuildFailed \
        --from-dir="$SW_TMP/bad"
    # start-build --from-dir refuses such a link itself, so it goes up as an archive
    bad_ctx 'FROM scratch\nCOPY secret /x\n'
    ln -s /etc/passwd "$SW_TMP/bad/secret"
    tar -C "$SW_TMP/bad" -cf "$SW_TMP/bad.tar" . || fail "tar the symlink context"
    bad "a symlink out of the context" 'symlink "secret" points outside the build context' \
        DockerBuildFailed --from-archive="$SW_TMP/bad.tar"
    head -c 2500 "$SW_TMP/bad.tar" >"$SW_TMP/cut.tar"
    bad "a truncated tar" "the uploaded source archive is not usable" FetchSourceFailed \
        --from-archive="$SW_TMP/cut.tar"
    head -c 200000 /dev/urandom >"$SW_TMP/bad/random.bin"
    tar -C "$SW_TMP/bad" -czf "$SW_TMP/full.tgz" . || fail "tar czf"
    head -c "$(($(stat -c %s "$SW_TMP/full.tgz") / 2))" "$SW_TMP/full.tgz" >"$SW_TMP/cut.tgz"
    bad "a gzipped tar cut in half" "the uploaded source archive is not usable" FetchSourceFailed \
        --from-archive="$SW_TMP/cut.tgz"
    echo "just some text" >"$SW_TMP/plain.txt"
    bad "a file that is no archive" "is not a tar archive" FetchSourceFailed \
        --from-archive="$SW_TMP/plain.txt"
    expect_eq "no stream event for bad:latest at all" "" "$(events bad latest)"
}

# ---- the end: nothing left behind ----

check_clean()
{
    local logs
    expect_eq "no builder process left" "" "$(builder_pids)"
    expect_eq "per-build directories removed" "" "$(ls -A "$TMPDIR")"
    logs=$(grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error" "$SW_DIR/logs/$NS/"*.log 2>/dev/null)
    expect_eq "no sanitizer report in any build log" "" "$logs"
    reg_alive || fail "a registry or the proxy died during the test"
    pass "registry and proxy still up"
}

check_directory
check_docker_output
check_inline_trigger
check_git
check_run_policies
check_stops
check_bad_input
check_clean
echo "took $(($(date +%s) - START)) s"
sw_finish
