#!/usr/bin/env bash
# test_cli.sh: slipway's oc-style verbs (import-image, tag, describe; issue 3 part 6) against
# `slipway server` with its import controller and Debian's real docker-registry. Images are
# built with umoci and pushed with skopeo (tests/lib/registry.sh); digests are compared with
# what `skopeo inspect` reports. Covers: --help of every verb names every flag, usage errors
# exit 2; import-image --from --confirm creates the stream, without --confirm it refuses (missing
# stream, missing tag), re-import without --from picks up a new digest, --all imports a
# repository (50-tag cap, additional tags listed), --dry-run, a 404 tag exits 1 with the NotFound
# message, -n works; tag with a DockerImage source (imported by the controller), an istag source (a static
# copy by digest), --alias (follows the source across a re-import), --reference (pull spec, no
# image), -d (spec and status gone); describe is/istag layout and content (tag names, pull specs,
# "tagged from", history newest first, the failed import's error line). Every process and
# directory is removed on every exit path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"

START=$(date +%s)
sw_with_registry

sw() { "$SLIPWAY" "$@"; }

# isq [NS/]STREAM PYEXPR: EXPR on the stream; helpers tag/items/head/spec read it.
PYLIB='import json, sys
o = json.load(sys.stdin)
def tag(n):
    for t in (o.get("status") or {}).get("tags") or []:
        if t.get("tag") == n:
            return t
    return {}
def items(n):
    return tag(n).get("items") or []
def head(n, f="image"):
    i = items(n)
    return i[0].get(f, "") if i else ""
def spec(n):
    for t in (o.get("spec") or {}).get("tags") or []:
        if t.get("name") == n:
            return t
    return {}
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))'

isq()
{
    local ns=default name=$1
    case $1 in */*) ns=${1%%/*} name=${1#*/} ;; esac
    kc get is -n "$ns" "$name" -o json 2>/dev/null | python3 -c "$PYLIB" "$2" 2>/dev/null
}

expect_is() { expect_eq "$4" "$3" "$(isq "$1" "$2")"; }

# wait_is STREAM EXPR EXPECTED SECONDS WHAT: polls until EXPR on the stream is EXPECTED.
wait_is()
{
    local got deadline=$(($(date +%s) + $4))
    while :; do
        got=$(isq "$1" "$2")
        [ "$got" = "$3" ] && { pass "$5"; return 0; }
        [ "$(date +%s)" -lt "$deadline" ] || fail "$5: after $4 s [$2] on $1 is [$got], expected [$3]"
        sleep 0.2
    done
}

# line_no NEEDLE TEXT: the first line number of TEXT containing NEEDLE (fixed string), or 0.
# (awk reads all of a here-string: no pipe for an early exit to break under pipefail)
line_no() { awk -v n="$1" 'index($0, n) && !f {print NR; f = 1} END {if (!f) print 0}' <<<"$2"; }

# ---- setup ----

setup()
{
    local i manifest mt
    read -r PORT <<<"$(reg_free_ports 1)" || fail "no free port"
    REG=127.0.0.1:$PORT
    reg_start open "$PORT"
    reg_build_image app1 amd64
    reg_push app1 "$REG/demo/app:v1"
    for i in latest 1.0 1.1 2.0.0 dev; do
        reg_push app1 "$REG/demo/all:$i"
    done
    reg_push app1 "$REG/demo/many:t00"
    D1=$(reg_digest "$REG/demo/app:v1") || fail "skopeo inspect demo/app:v1"
    # 54 more tags of the same manifest straight through the registry API (fast, no skopeo).
    manifest=$REG_TMP/many.json
    reg_raw "$REG/demo/many:t00" >"$manifest" || fail "raw manifest of demo/many"
    mt=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("mediaType", "application/vnd.oci.image.manifest.v1+json"))' "$manifest")
    for i in $(seq -w 1 54); do
        curl -sf -X PUT -H "Content-Type: $mt" --data-binary "@$manifest" \
            "http://$REG/v2/demo/many/manifests/t$i" -o /dev/null || fail "PUT demo/many:t$i"
    done
    SW_CONTROLLERS=1 sw_start_server --insecure-registry "$REG"
    kc create namespace team >/dev/null || fail "kubectl create namespace team"
    pass "registry, images and server up ($(($(date +%s) - START)) s): v1=$D1"
}

# ---- help and usage ----

# slipway completion bash: completes commands, then the command's flags from its --help.
complete_words()
{
    PATH=$(dirname "$SLIPWAY"):$PATH bash -c '. <("$1" completion bash); shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _slipway; printf "%s\n" "${COMPREPLY[@]}"' _ "$SLIPWAY" "$@"
}

check_completion()
{
    expect_eq "completion of 'slipway ser'" server "$(complete_words slipway ser)"
    expect_eq "completion of 'slipway server --max-conn'" \
        "--max-connections
--max-connections-per-address" "$(complete_words slipway server --max-conn | sort)"
    expect_contains "completion of 'slipway controllers --log'" "--log-format" \
        "$(complete_words slipway controllers --log)"
    expect_exit "completion without a shell is a usage error" 2 sw completion
    expect_exit "completion fish is a usage error" 2 sw completion fish
    if command -v zsh >/dev/null; then
        expect_ok "the zsh script parses" zsh -n <("$SLIPWAY" completion zsh)
        expect_contains "... and lists the commands" "'rollout:" "$("$SLIPWAY" completion zsh)"
    fi
}

check_help()
{
    local cmd flag
    declare -A flags=(
        [import-image]="--from --confirm --all --scheduled --insecure --import-mode --reference-policy --dry-run"
        [tag]="--source -d, --delete --alias --reference --scheduled --insecure --reference-policy"
        [describe]="")
    for cmd in import-image tag describe; do
        expect_ok "$cmd --help exits 0" sw "$cmd" --help
        for flag in ${flags[$cmd]} --kubeconfig "-n, --namespace" "-h, --help"; do
            expect_contains "$cmd --help names $flag" "$flag" "$OUT"
        done
        expect_contains "$cmd --help shows the usage line" "Usage:
  slipway $cmd [flags]" "$OUT"
    done
    expect_ok "slipway --help" sw --help
    for cmd in import-image tag describe; do
        expect_match "slipway --help lists $cmd" "^  $cmd " "$OUT"
    done
    expect_exit "import-image without a name is a usage error (exit 2)" 2 sw import-image
    expect_contains "... and says what is missing" "error: you must specify the name of an image stream" "$OUT"
    expect_exit "an unknown flag is a usage error" 2 sw tag --bogus a:b c:d
    expect_contains "... naming the flag" "error: unknown flag: --bogus" "$OUT"
    expect_exit "tag with one argument is a usage error" 2 sw tag a:b
    expect_exit "tag --alias -d is a usage error" 2 sw tag --alias -d a:b
    expect_contains "... with oc's message" "--alias and --delete may not be both specified" "$OUT"
    expect_exit "--reference-policy must be source or local" 2 sw tag --reference-policy=x a:b c:d
    expect_exit "--import-mode must be Legacy or PreserveOriginal" 2 \
        sw import-image x --import-mode=Other
    expect_exit "describe without a type is a usage error" 2 sw describe
    expect_exit "a bad --kubeconfig is an error (exit 1)" 1 \
        sw describe is/x --kubeconfig "$SW_TMP/none.kubeconfig"
    expect_match "... printed as error: <message>" "^error: .*none\.kubeconfig" "$OUT"
}

# ---- import-image ----

check_import_image()
{
    expect_exit "import-image: a missing stream needs --confirm" 1 \
        sw import-image app:v1 --from="$REG/demo/app:v1"
    expect_contains "... with a clear message" \
        "error: no image stream named \"app\" exists, pass --confirm to create and import" "$OUT"
    expect_fails "... and creates nothing" NotFound kc get is app

    expect_ok "import-image --from --confirm" sw import-image app:v1 --from="$REG/demo/app:v1" --confirm
    expect_contains "... prints imported" "imagestream.image.openshift.io/app imported" "$OUT"
    expect_contains "... then describes the stream" "tagged from $REG/demo/app:v1" "$OUT"
    expect_contains "... and the image" "Image Name:	app:v1" "$OUT"
    expect_is app 'head("v1")' "$D1" "import-image: the tag has the digest skopeo reports"
    expect_is app 'head("v1", "dockerImageReference")' "$REG/demo/app@$D1" \
        "import-image: the pull spec is by digest"
    expect_is app 'spec("v1")["from"]' "{\"kind\": \"DockerImage\", \"name\": \"$REG/demo/app:v1\"}" \
        "import-image: the spec tag points at --from"

    expect_exit "import-image: a new tag with --from needs --confirm" 1 \
        sw import-image app:v9 --from="$REG/demo/app:v1"
    expect_contains "... with oc's wording" \
        "error: the tag \"v9\" does not exist on the image stream - choose an existing tag to import or use the 'confirm' flag to create a new image stream or tag" "$OUT"
    expect_exit "import-image: a tag the stream lacks, without --from" 1 sw import-image app:v8
    expect_contains "... points at the tag command" "use the 'tag' command to create a new tag" "$OUT"
    expect_exit "import-image: --from cannot change an existing tag's source" 1 \
        sw import-image app:v1 --from="$REG/demo/all:dev"
    expect_contains "... says so" "the tag \"v1\" points to \"$REG/demo/app:v1\"" "$OUT"
    expect_exit "import-image by ID is refused" 2 sw import-image "app@$D1"

    expect_exit "import-image: a tag the registry lacks exits 1" 1 \
        sw import-image app:nope --from="$REG/demo/app:nope" --confirm
    expect_match "... printing the image's failure" "^error: tag nope failed: .+" "$OUT"
    expect_contains "... and imported with errors" "imagestream.image.openshift.io/app imported with errors" "$OUT"
    expect_is app 'tag("nope")["conditions"][0]["reason"]' NotFound \
        "... recorded as an ImportSuccess=False NotFound condition"

    expect_ok "import-image -n team" sw import-image -n team app2 --from="$REG/demo/app:v1" --confirm
    expect_is team/app2 'head("latest")' "$D1" "import-image -n: default tag latest in namespace team"
}

check_import_all()
{
    expect_ok "import-image --all --confirm" sw import-image all --from="$REG/demo/all" --all --confirm
    expect_is all '" ".join(sorted(t["tag"] for t in o["status"]["tags"]))' "1.0 1.1 2.0.0 dev latest" \
        "import-image --all: every tag of the repository imported"
    expect_is all '" ".join(sorted(set(head(t["tag"]) for t in o["status"]["tags"])))' "$D1" \
        "... each with the pushed digest"
    expect_is all '" ".join(sorted(t["name"] for t in o["spec"]["tags"]))' "1.0 1.1 2.0.0 dev latest" \
        "... and a spec tag each"

    expect_ok "import-image --all again (spec tags, digests unchanged)" sw import-image all --all
    expect_not_contains "... reports no failure" "error:" "$OUT"
    expect_ok "import-image --dry-run" sw import-image dry:v1 --from="$REG/demo/app:v1" --confirm --dry-run
    expect_contains "... says dry run" "imagestream.image.openshift.io/dry imported (dry run)" "$OUT"
    expect_contains "... shows the image" "Name:		$D1" "$OUT"
    expect_fails "... and creates no stream" NotFound kc get is dry

    expect_ok "import-image --all of 55 tags" sw import-image many --from="$REG/demo/many" --all --confirm
    expect_contains "... lists the 5 tags it left out" \
        "info: The remote repository contained 5 additional tags which were not imported: t50, t51, t52, t53, t54" "$OUT"
    expect_is many 'len(o["status"]["tags"])' 50 "... and imports 50"
}

# ---- tag ----

check_tag()
{
    local out
    expect_ok "tag a DockerImage source" sw tag "$REG/demo/app:v1" ext:v1
    expect_eq "... prints oc's message" "Tag ext:v1 set to $REG/demo/app:v1." "$OUT"
    expect_is ext 'spec("v1")["from"]["kind"]' DockerImage "... as a DockerImage spec tag"
    wait_is ext 'head("v1")' "$D1" 10 "... which the import controller imports"

    expect_ok "tag an image stream tag (static copy)" sw tag app:v1 copy:v1
    expect_eq "... prints the image it copied" "Tag copy:v1 set to app@$D1." "$OUT"
    expect_is copy 'spec("v1")["from"]' "{\"kind\": \"ImageStreamImage\", \"name\": \"app@$D1\"}" \
        "... the spec names the image, not the tag"
    expect_is copy 'head("v1")' "$D1" "... and the tag has that image"

    expect_exit "tag from an unknown image fails" 1 sw tag "app@sha256:0000" copy:bad
    expect_contains "... with the server's NotFound" 'imagestreamimages.image.openshift.io "app@sha256:0000" not found' "$OUT"
    expect_is copy 'spec("bad")' '{}' "... and writes no spec tag"
    expect_exit "tag to a destination without a tag is a usage error" 2 sw tag app:v1 copy
    expect_contains "... with oc's message" '"copy" must be of the form <stream_name>:<tag>' "$OUT"

    expect_ok "tag --alias" sw tag --alias app:v1 app:stable
    expect_eq "... prints oc's message" "Tag app:stable set up to track app:v1." "$OUT"
    expect_is app 'spec("stable")["from"]' '{"kind": "ImageStreamTag", "name": "app:v1"}' \
        "... the spec tracks the tag"
    expect_is app 'head("stable")' "$D1" "... and has its image now"
    expect_ok "tag app:v1 app:frozen (static)" sw tag app:v1 app:frozen

    reg_push_new app2 amd64 "$REG/demo/app:v1"
    D2=$(reg_digest "$REG/demo/app:v1") || fail "skopeo inspect the new demo/app:v1"
    [ "$D2" != "$D1" ] || fail "the new push has the old digest"
    expect_ok "import-image of an existing tag (no --from)" sw import-image app:v1
    expect_is app 'head("v1")' "$D2" "re-import: v1 has the new digest"
    expect_is app 'len(items("v1"))' 2 "re-import: one new history entry"
    expect_is app 'head("stable")' "$D2" "tag --alias: the alias followed the re-import"
    expect_is app 'head("frozen")' "$D1" "tag (no alias): the copy stayed on the old image"
    expect_is copy 'head("v1")' "$D1" "tag across streams: the copy stayed on the old image"

    expect_ok "tag --reference" sw tag --reference "$REG/demo/app:v1" refs:v1
    expect_is refs 'head("v1", "dockerImageReference") + "|" + head("v1")' "$REG/demo/app:v1|" \
        "tag --reference: status has the pull spec and no image"
    expect_is refs 'spec("v1")["reference"]' true "... and the spec says reference"

    expect_ok "tag into another namespace" sw tag "$REG/demo/app:v1" team/ext:v1
    expect_eq "... names the namespace" "Tag team/ext:v1 set to $REG/demo/app:v1." "$OUT"

    expect_ok "tag -d" sw tag -d app:frozen
    expect_eq "... prints oc's message" "Deleted tag default/app:frozen." "$OUT"
    expect_is app '[spec("frozen"), tag("frozen")]' '[{}, {}]' "tag -d: spec and status are gone"
    expect_exit "tag -d of a missing tag exits 1" 1 sw tag -d app:frozen
    expect_contains "... with the server's NotFound message" "not found" "$OUT"
    out=$(sw tag --scheduled app:v1 app:x 2>&1) && fail "tag --scheduled of an istag succeeded: $out"
    expect_contains "tag --scheduled of an image stream tag is refused" \
        "only container images can have importing flags set" "$out"
}

# ---- describe ----

check_describe()
{
    local d new old
    expect_ok "describe is/app" sw describe is/app
    d=$OUT
    expect_contains "describe: Name line aligned as oc's tabwriter" "Name:			app" "$d"
    expect_match "describe: Namespace" '^Namespace:	+default$' "$d"
    expect_match "describe: Created age" '^Created:	+([0-9]+ seconds|About a minute|[0-9]+ minutes|Less than a second) ago$' "$d"
    expect_match "describe: Labels" '^Labels:	+<none>$' "$d"
    expect_match "describe: Image Lookup" '^Image Lookup:	+local=false$' "$d"
    expect_match "describe: Unique Images" '^Unique Images:	+2$' "$d"
    expect_match "describe: Tags count" '^Tags:	+3$' "$d"
    expect_match "describe: v1 lists its alias" '^v1 \(stable\)$' "$d"
    expect_contains "describe: tagged from" "  tagged from $REG/demo/app:v1" "$d"
    expect_contains "describe: the current image" "  * $REG/demo/app@$D2" "$d"
    expect_contains "describe: the older image" "
    $REG/demo/app@$D1
" "$d"
    new=$(line_no "  * $REG/demo/app@$D2" "$d")
    old=$(line_no "    $REG/demo/app@$D1" "$d")
    if [ "$new" -eq 0 ] || [ "$old" -le "$new" ]; then
        fail "describe: history not newest first:
$d"
    fi
    pass "describe: history newest first"
    expect_match "describe: ages under each item" '^      ([0-9]+ seconds?|Less than a second|About a minute) ago$' "$d"
    expect_match "describe: the failed tag" '^nope$' "$d"
    expect_match "describe: its import error" \
        '^  ! error: Import failed \(NotFound\): .+' "$d"
    expect_contains "describe: a tag without an image" "  not available" "$d"
    expect_ok "describe imagestreams app (TYPE NAME form)" sw describe imagestreams app
    # the same text but for ages, which may tick over a second between the two
    local ages='s/[0-9]+ seconds? ago|Less than a second ago|About a minute ago/AGO/g'
    expect_eq "... is the same text" "$(sed -E "$ages" <<<"$d")" "$(sed -E "$ages" <<<"$OUT")"

    expect_ok "describe is/refs" sw describe is/refs
    expect_contains "describe: a reference tag" "  reference to registry $REG/demo/app:v1" "$OUT"
    expect_ok "describe is/copy" sw describe is/copy
    expect_contains "describe: a copied image" "  tagged from app@$D1" "$OUT"

    expect_ok "describe istag/app:v1" sw describe istag/app:v1
    d=$OUT
    expect_match "describe istag: digest" "^Name:	+$D2\$" "$d"
    expect_match "describe istag: pull spec" "^Docker Image:	+$REG/demo/app@$D2\$" "$d"
    expect_match "describe istag: size and layers" '^Image Size:	+[0-9.]+[kM]?B in 1 layers$' "$d"
    expect_match "describe istag: architecture" '^Arch:	+amd64$' "$d"
    expect_match "describe istag: os" '^OS:	+linux$' "$d"
    expect_match "describe istag: entrypoint" '^Entrypoint:	+/bin/sh$' "$d"
    expect_match "describe istag: working dir" '^Working Dir:	+/work$' "$d"
    expect_match "describe istag: env" '^(Environment:)?	+A=B$' "$d"
    expect_match "describe istag: labels" '^Docker Labels:	+io\.slipway\.test=app2$' "$d"
    expect_ok "describe isimage by digest prefix" sw describe "isimage/app@${D1:0:19}"
    expect_match "describe isimage: the old image" "^Name:	+$D1\$" "$OUT"

    expect_exit "describe of a missing stream exits 1" 1 sw describe is/nothere
    expect_contains "... with the server's message" \
        'error: imagestreams.image.openshift.io "nothere" not found' "$OUT"
    expect_exit "describe of an unknown type exits 1" 1 sw describe pods/x
    expect_ok "describe is -n team" sw describe is -n team
    expect_match "describe is (all streams) in namespace team" '^Name:	+app2$' "$OUT"
    expect_match "... and the other one" '^Name:	+ext$' "$OUT"
}

# A token file the server cannot use (too long, too short, NUL bytes cutting it short) stops it
# with a message; it is never replaced by a new secret, which would lock every client out.
check_bad_secret_files()
{
    local d="$SW_TMP/badsecret"
    mkdir -p "$d"
    head -c 101 /dev/zero | tr '\0' a >"$d/token"
    local before
    before=$(sha256sum <"$d/token")
    expect_exit "server with a 101-byte token file exits 1" 1 \
        timeout 10 "$SLIPWAY" server --data-dir "$d" --listen 127.0.0.1:1
    expect_contains "... naming the file" "$d/token: not a usable secret" "$OUT"
    expect_eq "... and leaves it as it was" "$before" "$(sha256sum <"$d/token")"
    echo short >"$d/token"
    expect_exit "server with a 6-byte token file exits 1" 1 \
        timeout 10 "$SLIPWAY" server --data-dir "$d" --listen 127.0.0.1:1
    expect_eq "... and leaves it as it was" "short" "$(cat "$d/token")"
    { printf 'ab'; head -c 62 /dev/zero; } >"$d/token"
    expect_exit "server with 'ab' and 62 NUL bytes as its token exits 1" 1 \
        timeout 10 "$SLIPWAY" server --data-dir "$d" --listen 127.0.0.1:1
    expect_contains "... printable characters expected" "printable ASCII" "$OUT"
}

setup
check_help
check_completion
check_bad_secret_files
check_import_image
check_import_all
check_tag
check_describe
reg_alive || fail "the registry died during the test"
# slipway version: an argument it does not take is a usage error, not ignored
expect_ok "slipway version" "$SLIPWAY" version
expect_contains "it names the version" "slipway " "$OUT"
expect_exit "slipway version --bogus: exit 2" 2 "$SLIPWAY" version --bogus
expect_contains "it says why" "takes no arguments" "$OUT"

sw_finish
echo "test_cli: $(($(date +%s) - START)) s"
