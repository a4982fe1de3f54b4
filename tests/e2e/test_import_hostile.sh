#!/usr/bin/env bash
# test_import_hostile.sh: ImageStreamImport against a registry that sends what a hostile or
# broken one could (tools/evilregistry.py): layer sizes that add past 2^63, a config whose
# `created` is not a time, a config of 2 MB of Env (an Image past 1 MiB), an index of 33
# platforms (PreserveOriginal keeps at most 32). Each becomes a failure of that one image (or an
# image without the bad field) while the rest of the request imports, and the server stays up
# with no sanitizer report. Requests with a bad importMode, referencePolicy or destination tag
# are refused (422) before slipway sends the registry anything. An import slower than the idle
# timeout is answered. A registry that never answers does not hold the server up: SIGTERM during such an import ends it within seconds, its client
# gets a 503 and nothing is recorded. Every process and directory is removed on every exit
# path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/registry.sh
. "$SW_TESTS/lib/registry.sh"

START=$(date +%s)
sw_with_registry
reg_start_tool evil "$SW_TESTS/e2e/tools/evilregistry.py" --log "$SW_TMP/evil.requests"
EVIL=127.0.0.1:${REG_TOOL_PORT[evil]}
# A one-second idle timeout: an import that takes longer still gets its answer.
sw_start_server --insecure-registry "$EVIL" --idle-timeout 1

ISIP=/apis/image.openshift.io/v1/namespaces/default/imagestreamimports

# isi NAME IMPORT IMAGES-JSON: POST an ImageStreamImport; the reply in $SW_TMP/isi.json, the
# HTTP status printed.
isi()
{
    curl -sSk --max-time 200 -o "$SW_TMP/isi.json" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/json' "$SW_URL$ISIP" \
        -d "{\"apiVersion\": \"image.openshift.io/v1\", \"kind\": \"ImageStreamImport\",
            \"metadata\": {\"name\": \"$1\"}, \"spec\": {\"import\": $2, \"images\": $3}}"
}

# img I EXPR: a Python expression over status.images[I] (s) of the last reply.
img() { sw_json "(lambda s: $2)(at('status.images.$1') or {})" <"$SW_TMP/isi.json"; }

# from REPO [EXTRA FIELDS]: one spec.images entry for the evil registry's REPO:latest, tagged REPO
# (or as EXTRA says).
from() { printf '{"from": {"kind": "DockerImage", "name": "%s/%s:latest"}, "to": {"name": "%s"}%s}' "$EVIL" "$1" "${3:-$1}" "${2:-}"; }

check_content()
{
    expect_eq "ISI of four images: 201" 201 \
        "$(isi mixed true "[$(from bigsize), $(from badtime), $(from fatenv), $(from good)]")"
    expect_eq "layer sizes past 2^63: that image fails" "Failure" "$(img 0 's["status"]["status"]')"
    expect_match "... saying why" '9007199254740992|2\^63' "$(img 0 's["status"]["message"]')"
    expect_eq "a config 'created' that is no time: imported" "Success" "$(img 1 's["status"]["status"]')"
    expect_eq "... without Created" "None" \
        "$(img 1 'str(s["image"]["dockerImageMetadata"].get("Created"))')"
    expect_eq "a 2 MB Env: that image fails" "Failure" "$(img 2 's["status"]["status"]')"
    expect_contains "... saying why" "at most 1048576" "$(img 2 's["status"]["message"]')"
    expect_eq "the good one beside them: imported" "Success 2024-01-02T03:04:05Z" \
        "$(img 3 's["status"]["status"] + " " + s["image"]["dockerImageMetadata"]["Created"]')"
    expect_eq "... and tagged" "good" \
        "$(kc get is mixed -o 'jsonpath={.status.tags[*].tag}' | tr ' ' '\n' | grep -x good)"
}

check_index()
{
    expect_eq "an index of 33 platforms, PreserveOriginal: 201" 201 \
        "$(isi wide true "[$(from wideindex ', "importPolicy": {"importMode": "PreserveOriginal"}')]")"
    expect_eq "... fails" "Failure" "$(img 0 's["status"]["status"]')"
    expect_contains "... saying why" "at most 32" "$(img 0 's["status"]["message"]')"
    expect_eq "the same index, Legacy: one platform imported" 201 "$(isi wide true "[$(from wideindex)]")"
    expect_eq "... Success" "Success" "$(img 0 's["status"]["status"]')"
}

check_refused_early()
{
    local before
    before=$(wc -l <"$SW_TMP/evil.requests")
    expect_eq "importMode Bogus: 422" 422 \
        "$(isi early true "[$(from good ', "importPolicy": {"importMode": "Bogus"}')]")"
    expect_contains "... naming the field" "importMode" "$(cat "$SW_TMP/isi.json")"
    expect_eq "referencePolicy Nope: 422" 422 \
        "$(isi early true "[$(from good ', "referencePolicy": {"type": "Nope"}')]")"
    expect_eq "a destination tag a/b: 422" 422 \
        "$(isi early true "[$(from good '' 'a/b')]")"
    expect_eq "... the registry was not asked anything" "$before" "$(wc -l <"$SW_TMP/evil.requests")"
    expect_eq "... and no stream was made" "NotFound" \
        "$(kc get is early -o name 2>&1 | grep -o NotFound | head -n 1)"
}

# An import is waiting on a registry that never answers (its timeout is 30 s, with retries):
# SIGTERM abandons that request and the server exits (sw_stop_server allows 10 s). The client
# gets a 503, and nothing is recorded: after a restart the stream has no failed tag, so the
# import can run again.
check_stop_during_import()
{
    local i
    sw_api POST /apis/image.openshift.io/v1/namespaces/default/imagestreams \
        -H 'Content-Type: application/json' -o /dev/null \
        -d "{\"metadata\": {\"name\": \"stalled\"}, \"spec\": {\"tags\": [{\"name\": \"latest\",
             \"from\": {\"kind\": \"DockerImage\", \"name\": \"$EVIL/stall:latest\"}}]}}"
    isi stalled true "[$(from stall '' latest)]" >"$SW_TMP/stall.code" &
    local client=$!
    for i in $(seq 100); do
        grep -q "/v2/stall/manifests" "$SW_TMP/evil.requests" && break
        sleep 0.1
    done
    expect_match "the import reached the stalling registry" "stall/manifests" \
        "$(grep -m1 /v2/stall/ "$SW_TMP/evil.requests")"
    sw_stop_server
    wait "$client"
    expect_eq "... its client got 503" 503 "$(cat "$SW_TMP/stall.code")"
    expect_contains "... saying why" "nothing was recorded" "$(cat "$SW_TMP/isi.json")"
    sw_start_server --insecure-registry "$EVIL"
    expect_eq "after a restart the stream is there, with no failed tag" "stalled:" \
        "$(kc get is stalled -o jsonpath='{.metadata.name}:{.status.tags}')"
}

# `slipway controllers` on its own (the server runs without its embedded ones): it imports a
# spec tag, and SIGTERM while one of its imports waits on the stalling registry ends it within
# seconds (its in-flight request is abandoned; the server's import carries on alone).
check_standalone_controllers()
{
    local i ctl
    "$SLIPWAY" controllers --kubeconfig "$SW_DIR/admin.kubeconfig" --v=1 >"$SW_TMP/ctl.log" 2>&1 &
    ctl=$!
    mkis() {
        sw_api POST /apis/image.openshift.io/v1/namespaces/default/imagestreams \
            -H 'Content-Type: application/json' -o /dev/null \
            -d "{\"metadata\": {\"name\": \"$1\"}, \"spec\": {\"tags\": [{\"name\": \"latest\",
                 \"from\": {\"kind\": \"DockerImage\", \"name\": \"$EVIL/$2:latest\"}}]}}"
    }
    mkis viactl good
    for i in $(seq 100); do
        [ -n "$(kc get is viactl -o 'jsonpath={.status.tags[0].items[0].image}')" ] && break
        sleep 0.2
    done
    expect_match "slipway controllers imported a spec tag" '^sha256:' \
        "$(kc get is viactl -o 'jsonpath={.status.tags[0].items[0].image}')"
    local before
    before=$(grep -c "/v2/stall/manifests" "$SW_TMP/evil.requests")
    mkis ctlstall stall
    for i in $(seq 100); do
        [ "$(grep -c "/v2/stall/manifests" "$SW_TMP/evil.requests")" -gt "$before" ] && break
        sleep 0.1
    done
    expect_eq "... its import of the stalling repository reached the registry" 1 \
        "$(($(grep -c "/v2/stall/manifests" "$SW_TMP/evil.requests") > before))"
    local t0=$SECONDS
    kill -TERM "$ctl"
    for i in $(seq 100); do
        kill -0 "$ctl" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$ctl" 2>/dev/null && { kill -KILL "$ctl"; fail "slipway controllers did not exit within 10 s of SIGTERM"; }
    local rc=0
    wait "$ctl" || rc=$?
    expect_eq "... SIGTERM during that import ends it within 5 s, status 0" "1 0" \
        "$((SECONDS - t0 < 5)) $rc"
}

check_content
check_index
check_refused_early
check_slow_import
check_stop_during_import
check_standalone_controllers
sw_finish
echo "took $(($(date +%s) - START)) s"
