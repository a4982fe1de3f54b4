#!/usr/bin/env bash
# test_import.sh: image import end to end against Debian's real docker-registry (issue 3, "Tests
# (real registry)"). Registries: an open one, one behind htpasswd basic auth, one behind token
# auth (tools/tokenserver.py), one that is stopped mid-test, one that sends notifications to the
# server, and tools/faultproxy.py in front of the open one (429, 503, wrong digest, oversized
# manifest, malformed WWW-Authenticate). Images are built with umoci and pushed with skopeo.
# Covers: ImageStreamImport by tag and by digest (Images with layers and metadata), spec tags
# imported by the embedded controller, same digest → no new tag event, new digest → one, the
# `latest` alias following v1, scheduled re-import, multi-platform indexes (Legacy, prefer-arch,
# PreserveOriginal; HEAD-only re-import), failures as ImportSuccess=False conditions + Warning
# events with items kept and no retry loop, credentials from dockerconfigjson Secrets (never
# echoed), and a registry notification re-importing in under a second (second server run with
# a one-hour scheduled interval), also when the event arrives before the registry moves the tag.
# Every process and directory is removed on every exit path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"

TOOLS=$SW_TESTS/e2e/tools
START=$(date +%s)
sw_with_registry

rand() { od -An -N8 -tx8 /dev/urandom | tr -d ' '; }

USER_NAME=slipuser
PASSWORD=pw-$(rand)
WRONG_PASSWORD=wrong-$(rand)
NOTIFY_TOKEN=notify-$(rand)$(rand)
echo "$NOTIFY_TOKEN" >"$SW_TMP/notify.token"
OCI_MANIFEST=application/vnd.oci.image.manifest.v1+json
OCI_INDEX=application/vnd.oci.image.index.v1+json
V2S2_MANIFEST=application/vnd.docker.distribution.manifest.v2+json

# ---- JSON helpers ----

# The Python prelude of isq/imgq: o is the object; tag/items/head/spec/cond read a stream.
PYLIB='import json, sys
o = json.load(sys.stdin)
def tag(n):
    for t in (o.get("status") or {}).get("tags") or []:
        if t.get("tag") == n:
            return t
    return {}
def items(n):
    return tag(n).get("items") or []
def images(n):
    return " ".join(i.get("image", "") for i in items(n))
def head(n, f="image"):
    i = items(n)
    return i[0].get(f, "") if i else ""
def spec(n):
    for t in (o.get("spec") or {}).get("tags") or []:
        if t.get("name") == n:
            return t
    return {}
def cond(n):
    c = tag(n).get("conditions") or []
    return c[0] if c else {}
def ann(k):
    return ((o.get("metadata") or {}).get("annotations") or {}).get(k, "")
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))'

# pyq EXPR < JSON: EXPR evaluated with the helpers above.
pyq() { python3 -c "$PYLIB" "$1"; }

# isq [NS/]STREAM EXPR: EXPR on the stream.
isq()
{
    local ns=default name=$1
    case $1 in */*) ns=${1%%/*} name=${1#*/} ;; esac
    kc get is -n "$ns" "$name" -o json 2>/dev/null | pyq "$2" 2>/dev/null
}

# imgq DIGEST EXPR: EXPR on the Image.
imgq() { kc get image "$1" -o json 2>/dev/null | pyq "$2" 2>/dev/null; }

# wait_is [NS/]STREAM EXPR EXPECTED SECONDS WHAT: polls until EXPR on the stream is EXPECTED.
wait_is()
{
    local s=$1 expr=$2 want=$3 limit=$4 what=$5 got deadline
    deadline=$(($(date +%s%N) + limit * 1000000000))
    while :; do
        got=$(isq "$s" "$expr")
        if [ "$got" = "$want" ]; then
            pass "$what"
            return 0
        fi
        [ "$(date +%s%N)" -lt "$deadline" ] ||
            fail "$what: after ${limit}s [$expr] on $s is [$got], expected [$want]"
        sleep 0.2
    done
}

# expect_is [NS/]STREAM EXPR EXPECTED WHAT
expect_is() { expect_eq "$4" "$3" "$(isq "$1" "$2")"; }

# warnings NS STREAM TAG: "COUNT|MESSAGE" of the Warning events about importing TAG.
warnings()
{
    kc get events -n "$1" -o json | python3 -c 'import json, sys
stream, tag = sys.argv[1:3]
hits = [e for e in json.load(sys.stdin)["items"]
        if e.get("type") == "Warning" and e["involvedObject"].get("name") == stream
        and "importing tag %s failed" % tag in e.get("message", "")]
print("%d|%s|%s" % (len(hits), hits[0]["reason"] if hits else "", hits[0]["message"] if hits else ""))' "$2" "$3"
}

# isi NS YAML-IMAGES: POSTs an ImageStreamImport (import: true) for stream NAME with the given
# spec.images YAML through kubectl create; the answer is left in $SW_TMP/isi.json.
isi()
{
    local ns=$1 name=$2 images=$3
    kc create -n "$ns" -o json -f - >"$SW_TMP/isi.json" 2>"$SW_TMP/isi.err" <<EOF ||
apiVersion: image.openshift.io/v1
kind: ImageStreamImport
metadata:
  name: $name
spec:
  import: ${ISI_IMPORT:-true}
  images:
$images
EOF
        fail "kubectl create imagestreamimport $name: $(cat "$SW_TMP/isi.err")"
}

isi_q() { pyq "$1" <"$SW_TMP/isi.json"; }

# dockercfg_secret NS NAME PASSWORD: a kubernetes.io/dockerconfigjson Secret with USER_NAME and
# PASSWORD for the basic-auth and token-auth registries.
dockercfg_secret()
{
    local cfg
    cfg=$(python3 -c 'import base64, json, sys
user, pw, hosts = sys.argv[1], sys.argv[2], sys.argv[3:]
auth = base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()
cfg = {"auths": {h: {"username": user, "password": pw, "auth": auth} for h in hosts}}
print(base64.b64encode(json.dumps(cfg).encode()).decode())' "$USER_NAME" "$3" "$BASIC" "$TOK" "$RD")
    kc apply -f - >/dev/null <<EOF || fail "cannot create secret $1/$2"
apiVersion: v1
kind: Secret
metadata:
  name: $2
  namespace: $1
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: $cfg
EOF
}

# raw_q REF PYEXPR: EXPR on the raw manifest of REF (as `o`).
raw_q() { reg_raw "$1" | pyq "$2"; }

fp_count() { grep -Ec "$1" "$REG_TMP/fp.requests" 2>/dev/null; }
isi_posts() { grep -c "POST /apis/image.openshift.io/v1/namespaces/[^/]*/imagestreamimports" "$SW_LOG"; }

# ---- registries and images ----

setup_registries()
{
    local htp
    read -r P_OPEN P_BASIC P_TOK P_DOWN P_NOTIFY <<<"$(reg_free_ports 5)" || fail "no free ports"
    OPEN=127.0.0.1:$P_OPEN BASIC=127.0.0.1:$P_BASIC TOK=127.0.0.1:$P_TOK
    DOWN=127.0.0.1:$P_DOWN NOTIFY=127.0.0.1:$P_NOTIFY
    htp=$(reg_htpasswd "$USER_NAME" "$PASSWORD")
    reg_start open "$P_OPEN"
    reg_start basic "$P_BASIC" --htpasswd "$htp"
    reg_start down "$P_DOWN"
    reg_start_tool tokensrv "$TOOLS/tokenserver.py" --cert-out "$REG_TMP/token-cert.pem" \
        --issuer slipway-test-issuer --service slipway-test-registry --user "$USER_NAME" \
        --password "$PASSWORD" --log "$REG_TMP/tokensrv.requests"
    reg_start tok "$P_TOK" --token "http://127.0.0.1:${REG_TOOL_PORT[tokensrv]}/token" \
        slipway-test-registry slipway-test-issuer "$REG_TMP/token-cert.pem"
    reg_start_tool fp "$TOOLS/faultproxy.py" --upstream "http://$OPEN" \
        --log "$REG_TMP/fp.requests" \
        --rule 429 2 '^/v2/fault/r429once/' \
        --rule 429 always '^/v2/fault/r429always/' \
        --rule 503 2 '^/v2/fault/r503/' \
        --rule baddigest always '^/v2/fault/baddigest/.*/manifests/' \
        --rule oversize always '^/v2/fault/oversize/.*/manifests/' \
        --rule badauth always '^/v2/fault/badauth/'
    FP=127.0.0.1:${REG_TOOL_PORT[fp]}
    # A registry that sends manifest and blob GETs elsewhere (307), as Docker Hub sends blobs to
    # a CDN: rd is the basic-auth registry's front, cdn the other host, serving without asking
    # for credentials (as pre-signed URLs do); both log whether Authorization came.
    reg_start_tool cdn "$TOOLS/faultproxy.py" --upstream "http://$BASIC" \
        --upstream-auth "$USER_NAME:$PASSWORD" --log-auth --log "$REG_TMP/cdn.requests"
    reg_start_tool rd "$TOOLS/faultproxy.py" --upstream "http://$BASIC" --log-auth \
        --log "$REG_TMP/rd.requests" --redirect-to "http://127.0.0.1:${REG_TOOL_PORT[cdn]}" \
        --rule redirect always '^/v2/.*/(manifests|blobs)/'
    RD=127.0.0.1:${REG_TOOL_PORT[rd]}
    pass "registries, token server and fault proxy up"
}

push_images()
{
    local r
    reg_build_image app1 amd64
    reg_push app1 "$OPEN/demo/app:v1"
    reg_push app1 "$OPEN/demo/app:v1-again"
    reg_push app1 "$OPEN/demo/docker:v1" --format v2s2
    for r in r429once r503 baddigest; do
        reg_push app1 "$OPEN/fault/$r/app:v1"
    done
    reg_push app1 "$DOWN/demo/app:v1"
    reg_push app1 "$BASIC/private/app:v1" --dest-creds "$USER_NAME:$PASSWORD"
    reg_push app1 "$TOK/private/app:v1" --dest-creds "$USER_NAME:$PASSWORD"
    reg_push_index multi "$OPEN/demo/multi:v1"
    reg_push_new sched1 amd64 "$OPEN/demo/sched:v1"
    D1=$(reg_digest "$OPEN/demo/app:v1") || fail "skopeo inspect demo/app"
    DDOCKER=$(reg_digest "$OPEN/demo/docker:v1") || fail "skopeo inspect demo/docker"
    DBASIC=$(reg_digest "$BASIC/private/app:v1" --creds "$USER_NAME:$PASSWORD") ||
        fail "skopeo inspect the basic-auth registry"
    DTOK=$(reg_digest "$TOK/private/app:v1" --creds "$USER_NAME:$PASSWORD") ||
        fail "skopeo inspect the token-auth registry"
    S1=$(reg_digest "$OPEN/demo/sched:v1") || fail "skopeo inspect demo/sched"
    INDEX=$(reg_digest "$OPEN/demo/multi:v1") || fail "skopeo inspect demo/multi"
    AMD=$(raw_q "$OPEN/demo/multi:v1" \
        '[m["digest"] for m in o["manifests"] if m["platform"]["architecture"] == "amd64"][0]')
    ARM=$(raw_q "$OPEN/demo/multi:v1" \
        '[m["digest"] for m in o["manifests"] if m["platform"]["architecture"] == "arm64"][0]')
    [ "$(reg_digest "$OPEN/demo/app:v1-again")" = "$D1" ] || fail "v1-again is not the v1 image"
    if [ -z "$AMD" ] || [ -z "$ARM" ] || [ "$INDEX" = "$AMD" ]; then
        fail "index children not found"
    fi
    pass "images pushed ($(($(date +%s) - START)) s): app=$D1 index=$INDEX"
}

start_server()
{
    SW_CONTROLLERS=1 sw_start_server --insecure-registry "$OPEN" --insecure-registry "$BASIC" \
        --insecure-registry "$TOK" --insecure-registry "$DOWN" --insecure-registry "$NOTIFY" \
        --insecure-registry "$FP" --insecure-registry "$RD" \
        --insecure-registry "127.0.0.1:${REG_TOOL_PORT[cdn]}" --registry-notifications-token-file "$SW_TMP/notify.token" "$@"
}

# ---- ImageStreamImport by tag and digest ----

check_isi_import()
{
    local layers
    isi default direct "  - from: {kind: DockerImage, name: $OPEN/demo/app:v1}
    to: {name: v1}
  - from: {kind: DockerImage, name: $OPEN/demo/app@$D1}
    to: {name: pinned}
  - from: {kind: DockerImage, name: $OPEN/demo/docker:v1}
    to: {name: docker}"
    expect_eq "ISI: every image imported" "Success Success Success" \
        "$(isi_q '" ".join(i["status"]["status"] for i in o["status"]["images"])')"
    expect_eq "ISI: status.images[0].image is the pushed digest" "$D1" \
        "$(isi_q 'o["status"]["images"][0]["image"]["metadata"]["name"]')"
    expect_eq "ISI: status.import is the stream" "direct" \
        "$(isi_q 'o["status"]["import"]["metadata"]["name"]')"
    expect_is direct 'head("v1")' "$D1" "import by tag: v1 points at the pushed digest"
    expect_is direct 'head("v1", "dockerImageReference")' "$OPEN/demo/app@$D1" \
        "import by tag: the pull spec is digest-pinned"
    expect_is direct 'head("pinned")' "$D1" "import by digest: pinned points at the digest"
    expect_is direct 'head("docker")' "$DDOCKER" "import of a Docker schema2 manifest"
    expect_is direct 'spec("v1")["from"]["name"]' "$OPEN/demo/app:v1" "ISI wrote the spec tag"

    layers=$(raw_q "$OPEN/demo/app:v1" '[[l["digest"], l["size"]] for l in o["layers"]]')
    expect_eq "Image: layers match the pushed manifest" "$layers" \
        "$(imgq "$D1" '[[l["name"], l["size"]] for l in o["dockerImageLayers"]]')"
    expect_eq "Image: config digest is the metadata Id" \
        "$(raw_q "$OPEN/demo/app:v1" 'o["config"]["digest"]')" \
        "$(imgq "$D1" 'o["dockerImageMetadata"]["Id"]')"
    expect_eq "Image: architecture and os" "amd64 linux" \
        "$(imgq "$D1" 'o["dockerImageMetadata"]["Architecture"] + " " + o["dockerImageMetadata"]["Os"]')"
    expect_eq "Image: label, entrypoint, env, working dir from the config blob" \
        'app1 ["/bin/sh"] A=B /work' \
        "$(imgq "$D1" '(lambda c: " ".join([c["Labels"]["io.slipway.test"], json.dumps(c["Entrypoint"]), [e for e in c["Env"] if e.startswith("A=")][0], c["WorkingDir"]]))(o["dockerImageMetadata"]["Config"])')"
    expect_eq "Image: OCI manifest media type" "$OCI_MANIFEST" \
        "$(imgq "$D1" 'o["dockerImageManifestMediaType"]')"
    expect_eq "Image of the schema2 push: media type and architecture" "$V2S2_MANIFEST amd64" \
        "$(imgq "$DDOCKER" 'o["dockerImageManifestMediaType"] + " " + o["dockerImageMetadata"]["Architecture"]')"

    ISI_IMPORT=false isi default dryrun "  - from: {kind: DockerImage, name: $OPEN/demo/app:v1}"
    expect_eq "ISI import:false: the image is resolved" "$D1" \
        "$(isi_q 'o["status"]["images"][0]["image"]["metadata"]["name"]')"
    expect_fails "ISI import:false creates no stream" "NotFound" kc get is dryrun
}

# ---- spec tags, same digest, new digest, latest alias ----

apply_ctl()
{
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream ctl"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: ctl
spec:
  tags:
  - name: v1
    from: {kind: DockerImage, name: $1}
  - name: latest
    from: {kind: ImageStreamTag, name: v1}
  - name: pinned
    from: {kind: DockerImage, name: $OPEN/demo/app@$D1}
EOF
}

check_spec_tags()
{
    apply_ctl "$OPEN/demo/app:v1"
    wait_is ctl 'head("v1")' "$D1" 15 "controller imports spec tag v1"
    expect_is ctl 'head("v1", "generation") == spec("v1")["generation"]' true \
        "v1 event carries the spec tag generation"
    wait_is ctl 'images("latest")' "$D1" 5 "latest (ImageStreamTag v1) follows the first import"
    wait_is ctl 'head("pinned", "dockerImageReference")' "$OPEN/demo/app@$D1" 5 \
        "controller imports a spec tag by digest"

    # Re-tag to the same digest: the generation is observed, no new tag event.
    apply_ctl "$OPEN/demo/app:v1-again"
    expect_is ctl 'spec("v1")["generation"]' 2 "changing from.name bumps the tag generation"
    wait_is ctl 'head("v1", "generation")' 2 10 "same digest: the new generation is observed"
    expect_is ctl 'images("v1")' "$D1" "same digest: no new tag event"
    expect_is ctl 'len(items("latest"))' 1 "same digest: latest gets no new event either"
    expect_is ctl 'cond("v1")' '{}' "same digest: no condition"
    isi default direct "  - from: {kind: DockerImage, name: $OPEN/demo/app:v1}
    to: {name: v1}"
    expect_is direct 'images("v1")' "$D1" "ISI re-import of an unchanged tag adds no event"

    # A new digest: exactly one new event, newest first; latest follows.
    reg_push_new app2 amd64 "$OPEN/demo/app:v1"
    D2=$(reg_digest "$OPEN/demo/app:v1") || fail "skopeo inspect demo/app"
    [ "$D2" != "$D1" ] || fail "the re-push did not change the digest"
    isi default direct "  - from: {kind: DockerImage, name: $OPEN/demo/app:v1}
    to: {name: v1}"
    expect_eq "ISI re-import answers the new digest" "$D2" \
        "$(isi_q 'o["status"]["images"][0]["image"]["metadata"]["name"]')"
    expect_is direct 'images("v1")' "$D2 $D1" "ISI re-import after a new push: one new event, newest first"
    expect_is direct 'images("pinned")' "$D1" "the digest-pinned tag is untouched"
    apply_ctl "$OPEN/demo/app:v1"
    wait_is ctl 'images("v1")' "$D2 $D1" 10 "controller: new digest gives one new event, newest first"
    wait_is ctl 'images("latest")' "$D2 $D1" 5 "latest follows v1 to the new digest"
    expect_eq "imagestreamtag ctl:latest serves the new image" "$D2" \
        "$(kc get istag ctl:latest -o jsonpath='{.image.metadata.name}')"
    expect_is ctl 'head("v1", "generation") == spec("v1")["generation"]' true \
        "the new event carries the new generation"
    expect_is ctl 'images("pinned")' "$D1" "the digest-pinned spec tag keeps its image"
}

# ---- scheduled import ----

check_scheduled()
{
    local t0 ms
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream sched"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: sched
spec:
  tags:
  - name: v1
    from: {kind: DockerImage, name: $OPEN/demo/sched:v1}
    importPolicy: {scheduled: true}
EOF
    wait_is sched 'head("v1")' "$S1" 15 "scheduled tag imported at creation"
    reg_push_new sched2 amd64 "$OPEN/demo/sched:v1"
    t0=$(date +%s%N)
    S2=$(reg_digest "$OPEN/demo/sched:v1")
    wait_is sched 'images("v1")' "$S2 $S1" 6 "scheduled import picks up the re-push"
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "scheduled re-import seen after $ms ms (interval 1 s)"
    # The scheduled stream would import every second: remove it before the quiet-window checks.
    expect_ok "delete the scheduled stream" kc delete is sched
}

# ---- manifest lists ----

check_index()
{
    local gets heads first_heads
    first_heads=$(fp_count ' HEAD /v2/demo/multi/manifests/')
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream multi"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: multi
spec:
  tags:
  - name: orig
    from: {kind: DockerImage, name: $FP/demo/multi:v1}
    importPolicy: {importMode: PreserveOriginal}
  - name: legacy
    from: {kind: DockerImage, name: $FP/demo/multi:v1}
  - name: arm
    annotations: {importer.image.openshift.io/prefer-arch: arm64}
    from: {kind: DockerImage, name: $FP/demo/multi:v1}
EOF
    wait_is multi '" ".join(head(t) for t in ("orig", "legacy", "arm"))' "$INDEX $AMD $ARM" 15 \
        "index imported: PreserveOriginal → index, Legacy → amd64, prefer-arch arm64 → arm64"
    expect_is multi 'head("legacy", "dockerImageReference")' "$FP/demo/multi@$AMD" \
        "Legacy: the pull spec names the amd64 child"
    expect_eq "Legacy: the amd64 Image records the index digest" "$INDEX" \
        "$(imgq "$AMD" 'ann("image.slipway.dev/index-digest")')"
    expect_eq "Legacy: the amd64 Image's metadata" "amd64 linux" \
        "$(imgq "$AMD" 'o["dockerImageMetadata"]["Architecture"] + " " + o["dockerImageMetadata"]["Os"]')"
    expect_eq "prefer-arch: the arm64 Image's metadata" "arm64 linux" \
        "$(imgq "$ARM" 'o["dockerImageMetadata"]["Architecture"] + " " + o["dockerImageMetadata"]["Os"]')"
    expect_eq "PreserveOriginal: the index Image lists both children" \
        "$(printf '%s\n' "$AMD amd64 linux" "$ARM arm64 linux" | sort | tr '\n' ';')" \
        "$(imgq "$INDEX" '"".join(sorted("%s %s %s;" % (m["digest"], m["architecture"], m["os"]) for m in o["dockerImageManifests"]))')"
    expect_eq "PreserveOriginal: the index Image's media type, no layers" "$OCI_INDEX 0" \
        "$(imgq "$INDEX" 'o["dockerImageManifestMediaType"] + " " + str(len(o.get("dockerImageLayers") or []))')"
    expect_ok "PreserveOriginal: both children stored as Images" kc get image "$AMD" "$ARM" -o name
    expect_eq "first import: nothing to compare with, so no HEAD" "$first_heads" \
        "$(fp_count ' HEAD /v2/demo/multi/manifests/')"

    # Re-import of the unchanged index: HEAD only, no new event.
    gets=$(fp_count ' GET /v2/demo/multi/manifests/')
    heads=$(fp_count ' HEAD /v2/demo/multi/manifests/')
    isi default multi "  - from: {kind: DockerImage, name: $FP/demo/multi:v1}
    to: {name: orig}
    importPolicy: {importMode: PreserveOriginal}
  - from: {kind: DockerImage, name: $FP/demo/multi:v1}
    to: {name: legacy}
  - from: {kind: DockerImage, name: $FP/demo/multi:v1}
    to: {name: arm}"
    expect_eq "re-import of an unchanged index: every image Success" "Success Success Success" \
        "$(isi_q '" ".join(i["status"]["status"] for i in o["status"]["images"])')"
    expect_is multi '" ".join(str(len(items(t))) for t in ("orig", "legacy", "arm"))' "1 1 1" \
        "re-import of an unchanged index: no new tag event"
    expect_eq "re-import of an unchanged index: no manifest GET" "$gets" \
        "$(fp_count ' GET /v2/demo/multi/manifests/')"
    expect_eq "re-import of an unchanged index: one HEAD per tag" "$((heads + 3))" \
        "$(fp_count ' HEAD /v2/demo/multi/manifests/')"
}

# ---- failures ----

# check_failure [NS/]STREAM TAG REASON NEEDLE ITEMS WHAT
check_failure()
{
    local s=$1 tag=$2 reason=$3 needle=$4 nitems=$5 what=$6 ns=default name=$1 msg ev
    case $s in */*) ns=${s%%/*} name=${s#*/} ;; esac
    wait_is "$s" 'cond("'"$tag"'").get("status", "")' False 25 "$what: ImportSuccess=False"
    expect_is "$s" 'cond("'"$tag"'")["type"] + " " + cond("'"$tag"'")["reason"]' \
        "ImportSuccess $reason" "$what: reason"
    msg=$(isq "$s" 'cond("'"$tag"'")["message"]')
    echo "  $what: $msg"
    expect_contains "$what: message" "$needle" "$msg"
    expect_is "$s" 'cond("'"$tag"'")["generation"] == spec("'"$tag"'")["generation"]' true \
        "$what: condition generation is the spec tag generation"
    expect_is "$s" "len(items(\"$tag\"))" "$nitems" "$what: items kept ($nitems)"
    ev=$(warnings "$ns" "$name" "$tag")
    expect_eq "$what: one Warning event" "1|$reason" "$(echo "$ev" | cut -d'|' -f1-2)"
    expect_contains "$what: the event explains" "$needle" "$ev"
    expect_not_contains "$what: no password in the condition" "$PASSWORD" "$msg"
    expect_not_contains "$what: no wrong password in the condition" "$WRONG_PASSWORD" "$msg"
    expect_not_contains "$what: no password in the event" "$PASSWORD" "$ev"
    expect_not_contains "$what: no wrong password in the event" "$WRONG_PASSWORD" "$ev"
}

apply_fails()
{
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream fails"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: fails
spec:
  tags:
  - name: notfound
    from: {kind: DockerImage, name: $OPEN/demo/app:$1}
  - name: down
    from: {kind: DockerImage, name: $DOWN/demo/app:$2}
  - name: r429
    from: {kind: DockerImage, name: $FP/fault/r429always/app:v1}
  - name: r429once
    from: {kind: DockerImage, name: $FP/fault/r429once/app:v1}
  - name: r503
    from: {kind: DockerImage, name: $FP/fault/r503/app:v1}
  - name: digest
    from: {kind: DockerImage, name: $FP/fault/baddigest/app:v1}
  - name: big
    from: {kind: DockerImage, name: $FP/fault/oversize/app:v1}
  - name: badauth
    from: {kind: DockerImage, name: $FP/fault/badauth/app:v1}
EOF
}

check_failures()
{
    apply_fails v1 v1
    wait_is fails 'head("notfound") + " " + head("down")' "$D2 $D1" 25 \
        "imports that succeed before their failure"
    expect_is fails 'head("r429once")' "$D1" "429 with Retry-After twice, then success"
    expect_eq "the proxy answered 429 twice for r429once" 2 "$(fp_count 'r429once/.* 429 429$')"
    expect_eq "Retry-After honoured: a second between the 429s and the retry" ok \
        "$(grep ' /v2/fault/r429once/' "$REG_TMP/fp.requests" | head -n 3 | awk '
            NR == 1 { a = $1 } NR == 2 { b = $1 } NR == 3 { c = $1 }
            END { print (b - a >= 0.9 && c - b >= 0.9) ? "ok" : "gaps " b - a " " c - b }')"
    expect_is fails 'head("r503")' "$D1" "503 twice, then success (5xx retried)"
    expect_eq "the proxy answered 503 twice for r503" 2 "$(fp_count 'r503/.* 503 503$')"
    check_failure fails r429 ServiceUnavailable "429" 0 "always 429"
    expect_contains "always 429: the message says Too Many Requests" "Too Many Requests" \
        "$(isq fails 'cond("r429")["message"]')"
    expect_match "the proxy served a manifest whose digest does not match" \
        ' GET /v2/fault/baddigest/app/manifests/(sha256:[0-9a-f]+|v1) 200 baddigest$' \
        "$(cat "$REG_TMP/fp.requests")"
    expect_match "the proxy served an oversized manifest" ' /v2/fault/oversize/.* 200 oversize$' \
        "$(cat "$REG_TMP/fp.requests")"
    expect_match "the proxy sent a malformed challenge" ' /v2/fault/badauth/.* 401 badauth$' \
        "$(cat "$REG_TMP/fp.requests")"
    check_failure fails digest Invalid "digest" 0 "manifest digest mismatch"
    check_failure fails big Invalid "larger than" 0 "oversized manifest"
    check_failure fails badauth Unauthorized "WWW-Authenticate" 0 "malformed WWW-Authenticate"
    expect_fails "never-imported tag: no imagestreamtag" "NotFound" kc get istag fails:r429

    # Items kept: a missing tag and a stopped registry after a good import.
    reg_stop down
    apply_fails nope v2
    check_failure fails notfound NotFound "nope" 1 "404 tag"
    check_failure fails down ServiceUnavailable "$DOWN" 1 "registry down"
    expect_is fails 'head("notfound") + " " + head("down")' "$D2 $D1" \
        "failed re-imports keep serving the previous images"
    expect_eq "imagestreamtag of a failed re-import serves the previous image" "$D1" \
        "$(kc get istag fails:down -o jsonpath='{.image.metadata.name}')"
}

check_credentials()
{
    expect_ok "namespace for the wrong credentials" kc create namespace imp-bad
    dockercfg_secret default pull-secret "$PASSWORD"
    dockercfg_secret imp-bad pull-secret "$WRONG_PASSWORD"
    local ns
    for ns in default imp-bad; do
        kc apply -n "$ns" -f - >/dev/null <<EOF || fail "apply imagestream private in $ns"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: private
spec:
  tags:
  - name: basic
    from: {kind: DockerImage, name: $BASIC/private/app:v1}
  - name: token
    from: {kind: DockerImage, name: $TOK/private/app:v1}
EOF
    done
    wait_is private 'head("basic") + " " + head("token")' "$DBASIC $DTOK" 15 \
        "right credentials: basic-auth and token-auth registries import"
    expect_is private 'cond("basic")' '{}' "right credentials: no condition"
    check_failure imp-bad/private basic Unauthorized "$BASIC" 0 "basic auth, wrong password"
    check_failure imp-bad/private token Unauthorized "$TOK" 0 "token auth, wrong password"
    expect_match "the token server refused the wrong password" '^/token 401 ' \
        "$(cat "$REG_TMP/tokensrv.requests")"
    expect_match "the token server issued a token for the right one" "^/token 200 $USER_NAME\$" \
        "$(cat "$REG_TMP/tokensrv.requests")"
    # redirects are followed, and the credentials stay with the registry that asked for them
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream redirected"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: redirected
spec:
  tags:
  - name: v1
    from: {kind: DockerImage, name: $RD/private/app:v1}
EOF
    wait_is redirected 'head("v1")' "$DBASIC" 15 "a registry that redirects manifests and blobs (307) imports"
    expect_match "... it did redirect" ' /v2/private/app/manifests/[^ ]* 307 redirect auth=yes$' \
        "$(cat "$REG_TMP/rd.requests")"
    expect_match "... the other host served the manifest" ' /v2/private/app/manifests/[^ ]* 200 - auth=no$' \
        "$(cat "$REG_TMP/cdn.requests")"
    expect_eq "... and never saw the registry's credentials" "" \
        "$(grep 'auth=yes' "$REG_TMP/cdn.requests")"
}

# No retry loop: in a quiet window nothing imports, nothing is written.
check_quiet()
{
    local posts fpn rv1 rv2 rvp
    sleep 1
    posts=$(isi_posts)
    fpn=$(wc -l <"$REG_TMP/fp.requests")
    rv1=$(kc get is fails -o jsonpath='{.metadata.resourceVersion}')
    rvp=$(kc get is -n imp-bad private -o jsonpath='{.metadata.resourceVersion}')
    sleep 3
    expect_eq "quiet window: no ImageStreamImport posted (no hot loop)" "$posts" "$(isi_posts)"
    expect_eq "quiet window: the fault proxy saw no request" "$fpn" \
        "$(wc -l <"$REG_TMP/fp.requests")"
    rv2=$(kc get is fails -o jsonpath='{.metadata.resourceVersion}')
    expect_eq "quiet window: the failed stream is not rewritten" "$rv1" "$rv2"
    expect_eq "quiet window: the denied stream is not rewritten" "$rvp" \
        "$(kc get is -n imp-bad private -o jsonpath='{.metadata.resourceVersion}')"
}

# ---- notifications (second server run, scheduled interval one hour) ----

notify_code()
{
    curl -sk --max-time 5 -o /dev/null -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' "$@" -d '{"events":[]}' \
        "$SW_URL/notifications/registry"
}

check_notifications()
{
    local t0 ms n1 n2
    expect_eq "notification without a token: 401" 401 "$(notify_code)"
    expect_eq "notification with a wrong token: 401" 401 \
        "$(notify_code -H "Authorization: Bearer wrong-$NOTIFY_TOKEN")"
    expect_eq "notification with the token: 200" 200 \
        "$(notify_code -H "Authorization: Bearer $NOTIFY_TOKEN")"

    reg_start notify "$P_NOTIFY" --notify "$SW_URL/notifications/registry" "$NOTIFY_TOKEN" \
        --ca "$SW_DIR/tls.crt"
    reg_push_new note1 amd64 "$NOTIFY/notify/app:v1"
    n1=$(reg_digest "$NOTIFY/notify/app:v1")
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream notified"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: notified
spec:
  tags:
  - name: v1
    from: {kind: DockerImage, name: $NOTIFY/notify/app:v1}
    importPolicy: {scheduled: true}
  - name: manual
    from: {kind: DockerImage, name: $NOTIFY/notify/app:v1}
EOF
    wait_is notified 'head("v1") + " " + head("manual")' "$n1 $n1" 15 "notified stream imported"
    reg_build_image note2 amd64
    reg_push note2 "$NOTIFY/notify/app:v1"
    t0=$(date +%s%N)
    ms=$(python3 - "$SW_URL" "$SW_TOKEN" "$SW_DIR/tls.crt" "$t0" <<'PY'
import http.client, json, ssl, sys, time
url, token, ca, t0 = sys.argv[1:5]
conn = http.client.HTTPSConnection(url.split("://")[1], timeout=5,
                                   context=ssl.create_default_context(cafile=ca))
path = "/apis/image.openshift.io/v1/namespaces/default/imagestreams/notified"
deadline = time.time() + 5
while time.time() < deadline:
    conn.request("GET", path, headers={"Authorization": "Bearer " + token})
    o = json.loads(conn.getresponse().read())
    tags = {t["tag"]: t for t in (o.get("status") or {}).get("tags") or []}
    if len((tags.get("v1") or {}).get("items") or []) > 1:
        print((time.time_ns() - int(t0)) // 1000000)
        sys.exit(0)
    time.sleep(0.01)
print("timeout")
PY
    )
    n2=$(reg_digest "$NOTIFY/notify/app:v1")
    [ "$ms" != timeout ] || fail "the notification did not re-import within 5 s"
    echo "push done → status updated: $ms ms"
    [ "$ms" -lt 1000 ] || fail "notification re-import took $ms ms (limit 1000)"
    pass "a notification re-imports in under a second ($ms ms)"
    expect_is notified 'images("v1")' "$n2 $n1" "the notification imported the pushed digest"
    expect_is notified 'images("manual")' "$n1" "tags that are not scheduled are left alone"
    expect_match "the server logged the notification re-import" \
        "re-imported default/notified after a push of $NOTIFY/notify/app:v1" "$(cat "$SW_LOG")"
}

# The registry sends the push event before it moves the tag: an event that arrives while the tag
# still names the old digest must still end in the pushed one. Emulated on the open registry
# (no notifications of its own): the event is posted, the tag moved 300 ms later.
check_notification_race()
{
    local r1 r2 mt
    reg_push_new race1 amd64 "$OPEN/demo/race:v1"
    reg_push_new race2 amd64 "$OPEN/demo/race:next"
    r1=$(reg_digest "$OPEN/demo/race:v1")
    r2=$(reg_digest "$OPEN/demo/race:next")
    reg_raw "$OPEN/demo/race:next" >"$SW_TMP/race2.json"
    mt=$(pyq 'o.get("mediaType", "'"$OCI_MANIFEST"'")' <"$SW_TMP/race2.json")
    kc apply -f - >/dev/null <<EOF || fail "apply imagestream race"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: race
spec:
  tags:
  - name: v1
    from: {kind: DockerImage, name: $OPEN/demo/race:v1}
    importPolicy: {scheduled: true}
EOF
    wait_is race 'head("v1")' "$r1" 15 "race stream imported"
    expect_eq "early push event accepted" 200 "$(curl -sk --max-time 5 -o /dev/null \
        -w '%{http_code}' -X POST -H "Authorization: Bearer $NOTIFY_TOKEN" \
        -H 'Content-Type: application/vnd.docker.distribution.events.v1+json' \
        -d '{"events":[{"action":"push","target":{"mediaType":"'"$mt"'","digest":"'"$r2"'",
             "repository":"demo/race","tag":"v1",
             "url":"http://'"$OPEN"'/v2/demo/race/manifests/'"$r2"'"},
             "request":{"host":"'"$OPEN"'"}}]}' "$SW_URL/notifications/registry")"
    sleep 0.3
    curl -sf -X PUT -H "Content-Type: $mt" --data-binary "@$SW_TMP/race2.json" \
        "http://$OPEN/v2/demo/race/manifests/v1" >/dev/null || fail "cannot move demo/race:v1"
    wait_is race 'images("v1")' "$r2 $r1" 5 \
        "an event ahead of the tag move still ends in the pushed digest (retried)"
}

setup_registries
push_images
start_server --scheduled-import-interval 1
check_isi_import
check_spec_tags
check_scheduled
check_index
check_failures
check_credentials
check_quiet
reg_alive || fail "a registry or helper died during the test"
sw_finish

start_server --scheduled-import-interval 3600
check_notifications
check_notification_race
reg_alive || fail "a registry or helper died during the test"
echo "test_import: $(($(date +%s) - START)) s"
sw_finish
