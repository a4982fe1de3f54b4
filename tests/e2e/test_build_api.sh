#!/usr/bin/env bash
# test_build_api.sh: the build API against callers that are not what they should be, on
# `slipway server` without controllers (nothing runs the builds). Covers: only the exact
# webhooks/<secret>/<type> shape is open without a token (a BuildConfig named "webhooks" or a
# namespace named "buildconfigs" opens nothing else); an upload without a token is refused
# before its body is read and nothing reaches the uploads directory; the GitHub webhook builds
# on a JSON push to its branch only (ping: nothing; other events, non-JSON: 400); details
# cannot move a phase back or store wrong types; logs of missing builds and ".." segments are
# 404; a message with bytes that are not UTF-8 still comes back as a Status; a dry-run upload
# keeps nothing; asFile must be a file name; a deleted Build takes its source and log along;
# tailLines and limitBytes on a log read; a stop is not held up by a log follow waiting for a
# build to start. Every process and directory is removed on every path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

START=$(date +%s)
API=/apis/build.openshift.io/v1/namespaces/default

# code METHOD PATH [CURL ARGS...]: the HTTP status; the body lands in $SW_TMP/body (no token:
# pass -H "Authorization: Bearer ..." yourself, or use acode for the admin token).
code()
{
    local m=$1 p=$2
    shift 2
    curl -sSk --max-time 30 -X "$m" -o "$SW_TMP/body" -w '%{http_code}' "$@" "$SW_URL$p"
}
acode() { code "$@" -H "Authorization: Bearer $SW_TOKEN"; }
body() { cat "$SW_TMP/body"; }

# mkbc NAME SPEC-JSON: a BuildConfig with that spec.
mkbc()
{
    local c
    c=$(acode POST "$API/buildconfigs" -H 'Content-Type: application/json' -d "{\"apiVersion\":
        \"build.openshift.io/v1\", \"kind\": \"BuildConfig\", \"metadata\": {\"name\": \"$1\"},
        \"spec\": $2}")
    [ "$c" = 201 ] || fail "create BuildConfig $1: $c $(body)"
}

last_version() { kc get bc "$1" -o 'jsonpath={.status.lastVersion}'; }
builds_of() { kc get builds -o 'jsonpath={.items[*].metadata.name}' | tr ' ' '\n' | grep -c "^$1-" || true; }

check_anonymous()
{
    mkbc webhooks '{"source": {"type": "Dockerfile", "dockerfile": "FROM scratch\nLABEL a=b"},
        "strategy": {"type": "Docker", "dockerStrategy": {}},
        "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:1/x/y:latest"}},
        "triggers": [{"type": "Generic", "generic": {"secret": "s3cr3t"}}]}'
    expect_eq "instantiate of a BuildConfig named webhooks, no token: 401" 401 \
        "$(code POST "$API/buildconfigs/webhooks/instantiate" -H 'Content-Type: application/json' \
            -d '{"kind": "BuildRequest", "apiVersion": "build.openshift.io/v1", "metadata": {"name": "webhooks"}}')"
    expect_eq "... and nothing started" 0 "$(last_version webhooks)"
    expect_eq "webhooks/<secret> without a type, no token: 401" 401 \
        "$(code POST "$API/buildconfigs/webhooks/webhooks/s3cr3t")"
    expect_eq "a namespace named buildconfigs, no token: 401" 401 \
        "$(code POST "/apis/build.openshift.io/v1/namespaces/buildconfigs/builds/webhooks/token")"
    expect_eq "the real generic webhook, no token: 200" 200 \
        "$(code POST "$API/buildconfigs/webhooks/webhooks/s3cr3t/generic")"
    expect_eq "... started webhooks-1" 1 "$(last_version webhooks)"

    head -c 8000000 /dev/zero >"$SW_TMP/big"
    local before
    before=$(find "$SW_DIR/uploads" -type f 2>/dev/null | wc -l)
    expect_eq "an 8 MB upload without a token: 401" 401 \
        "$(curl -sSk --max-time 30 -X POST -o "$SW_TMP/body" -w '%{http_code} %{size_upload}' \
            --data-binary @"$SW_TMP/big" "$SW_URL$API/buildconfigs/webhooks/instantiatebinary" |
            cut -d' ' -f1)"
    expect_contains "... as a Status" '"reason":"Unauthorized"' "$(body)"
    expect_eq "... and no file in uploads" "$before" \
        "$(find "$SW_DIR/uploads" -type f 2>/dev/null | wc -l)"
}

check_github()
{
    mkbc gh '{"source": {"type": "Git", "git": {"uri": "https://example.invalid/x.git", "ref": "main"}},
        "strategy": {"type": "Docker", "dockerStrategy": {}},
        "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:1/x/gh:latest"}},
        "triggers": [{"type": "GitHub", "github": {"secret": "hub"}}]}'
    local hook=$API/buildconfigs/gh/webhooks/hub/github
    expect_eq "GitHub ping: 200" 200 "$(code POST "$hook" -H 'X-GitHub-Event: ping' -d '{}')"
    expect_eq "GitHub issues event: 400" 400 \
        "$(code POST "$hook" -H 'X-GitHub-Event: issues' -H 'Content-Type: application/json' -d '{"ref": "refs/heads/main"}')"
    expect_contains "... says push only" "push events only" "$(body)"
    expect_eq "GitHub push that is not JSON: 400" 400 \
        "$(code POST "$hook" -H 'X-GitHub-Event: push' -H 'Content-Type: application/x-www-form-urlencoded' -d 'payload=%7B%7D')"
    expect_eq "GitHub push to another branch: 200" 200 \
        "$(code POST "$hook" -H 'X-GitHub-Event: push' -H 'Content-Type: application/json' -d '{"ref": "refs/heads/dev"}')"
    expect_eq "... none of these started a build" 0 "$(last_version gh)"
    expect_eq "GitHub push to main: 200" 200 \
        "$(code POST "$hook" -H 'X-GitHub-Event: push' -H 'Content-Type: application/json' -d '{"ref": "refs/heads/main"}')"
    expect_eq "... started gh-1" 1 "$(last_version gh)"
}

details() { acode PUT "$API/builds/$1/details" -H 'Content-Type: application/json' -d "$2"; }

check_details()
{
    expect_eq "details: Running" 200 "$(details webhooks-1 '{"status": {"phase": "Running"}}')"
    expect_eq "details: back to New: 422" 422 "$(details webhooks-1 '{"status": {"phase": "New"}}')"
    expect_contains "... says why" "cannot go back from Running" "$(body)"
    expect_eq "details: a duration that is a string: 400" 400 \
        "$(details webhooks-1 '{"status": {"phase": "Running", "duration": "abc"}}')"
    expect_contains "... names the field" "duration" "$(body)"
    expect_eq "... nothing of it stored" "Running" \
        "$(kc get build webhooks-1 -o 'jsonpath={.status.phase}{.status.duration}')"
}

check_paths()
{
    expect_eq "log of a missing build, nowait: 404" 404 "$(acode GET "$API/builds/nope-1/log?nowait=true")"
    expect_eq "a .. namespace: 404" 404 \
        "$(acode GET "/apis/build.openshift.io/v1/namespaces/%2e%2e/builds/webhooks-1/log?nowait=true")"
    expect_eq "a .. name: 404" 404 "$(acode GET "$API/builds/%2e%2e/log?nowait=true")"
    expect_eq "follow=<not UTF-8>: 400" 400 "$(acode GET "$API/builds/webhooks-1/log?follow=%ff")"
    expect_eq "... still a Status, the byte replaced" "Status BadRequest" \
        "$(body | sw_json 'at("kind") + " " + at("reason")')"
}

check_binary()
{
    mkbc bin '{"source": {"type": "Binary"}, "strategy": {"type": "Docker", "dockerStrategy": {}},
        "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:1/x/bin:latest"}}}'
    printf 'dry\n' >"$SW_TMP/dry.txt"
    printf 'real\n' >"$SW_TMP/real.txt"
    expect_eq "dry-run upload: 201" 201 \
        "$(acode POST "$API/buildconfigs/bin/instantiatebinary?asFile=a.txt&dryRun=All" --data-binary @"$SW_TMP/dry.txt")"
    expect_eq "... named bin-1, not created" "bin-1 0" \
        "$(body | sw_json 'at("metadata.name")') $(builds_of bin)"
    [ -e "$SW_DIR/sources/default/bin-1" ] && fail "a dry-run upload was kept as bin-1's source"
    pass "... and its upload was not kept"
    expect_eq "asFile with a backslash: 400" 400 \
        "$(acode POST "$API/buildconfigs/bin/instantiatebinary?asFile=a%5Cb" --data-binary @"$SW_TMP/real.txt")"
    expect_eq "asFile with a newline: 400" 400 \
        "$(acode POST "$API/buildconfigs/bin/instantiatebinary?asFile=a%0Ab" --data-binary @"$SW_TMP/real.txt")"
    expect_eq "a real upload: 201" 201 \
        "$(acode POST "$API/buildconfigs/bin/instantiatebinary?asFile=a.txt" --data-binary @"$SW_TMP/real.txt")"
    local b
    b=$(body | sw_json 'at("metadata.name")')
    expect_eq "... kept the real bytes" "real" "$(cat "$SW_DIR/sources/default/$b")"

    printf 'one\ntwo\nthree\n' | acode POST "$API/builds/$b/log" -H 'Content-Type: text/plain' \
        --data-binary @- >/dev/null
    acode GET "$API/builds/$b/log?nowait=true&tailLines=2" >/dev/null
    expect_eq "log tailLines=2" "two
three" "$(body)"
    acode GET "$API/builds/$b/log?nowait=true&tailLines=0" >/dev/null
    expect_eq "log tailLines=0" "" "$(body)"
    acode GET "$API/builds/$b/log?nowait=true&limitBytes=5" >/dev/null
    expect_eq "log limitBytes=5" "one
t" "$(body)"
    expect_eq "dry-run log append: 200" 200 \
        "$(printf 'ghost\n' | acode POST "$API/builds/$b/log?dryRun=All" -H 'Content-Type: text/plain' --data-binary @-)"
    acode GET "$API/builds/$b/log?nowait=true&tailLines=1" >/dev/null
    expect_eq "... wrote nothing" "three" "$(body)"

    expect_eq "delete $b" 200 "$(acode DELETE "$API/builds/$b")"
    [ -e "$SW_DIR/sources/default/$b" ] && fail "the deleted build's source is still there"
    [ -e "$SW_DIR/logs/default/$b.log" ] && fail "the deleted build's log is still there"
    pass "... its source and log went with it"
}

check_names_and_tokens()
{
    local long tok
    long=$(printf 'a%.0s' $(seq 64))
    expect_eq "a BuildConfig name of 64 characters: 422" 422 \
        "$(acode POST "$API/buildconfigs" -H 'Content-Type: application/json' -d "{\"apiVersion\":
            \"build.openshift.io/v1\", \"kind\": \"BuildConfig\", \"metadata\": {\"name\": \"$long\"},
            \"spec\": {\"source\": {\"type\": \"Binary\"}, \"strategy\": {\"type\": \"Docker\"}}}")"
    expect_contains "... saying why" "no more than 63" "$(body)"
    expect_eq "an env name with '=': 422" 422 \
        "$(acode POST "$API/buildconfigs" -H 'Content-Type: application/json' -d '{"apiVersion":
            "build.openshift.io/v1", "kind": "BuildConfig", "metadata": {"name": "envx"},
            "spec": {"source": {"type": "Binary"}, "strategy": {"type": "Docker",
            "dockerStrategy": {"env": [{"name": "A=B", "value": "c"}]}}}}')"
    expect_contains "... saying why" "valid environment variable name" "$(body)"

    tok=$(acode POST "$API/builds/gh-1/token" >/dev/null && body | sw_json 'at("token")')
    expect_eq "a build token reads its running build" 200 \
        "$(code GET "$API/builds/gh-1" -H "Authorization: Bearer $tok")"
    expect_eq "the build finishes" 200 "$(details gh-1 '{"status": {"phase": "Failed"}}')"
    expect_eq "... and its token is dead: 401" 401 \
        "$(code GET "$API/builds/gh-1" -H "Authorization: Bearer $tok")"
    expect_eq "... also for details" 401 \
        "$(code PUT "$API/builds/gh-1/details" -H "Authorization: Bearer $tok" \
            -H 'Content-Type: application/json' -d '{"status": {"message": "late"}}')"
}

# Log follows end when the server stops, and the stop takes seconds, not a follow's 30 s wait
# for its build to start: one waiting for a build that never starts (nothing runs builds here)
# is answered 503; one of a Running build (webhooks-1, see check_details) is cut short, so
# `oc logs -f` does not take the log as complete.
check_follow_at_stop()
{
    mkbc idle '{"source": {"type": "None"}, "strategy": {"type": "Docker", "dockerStrategy": {}},
        "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:1/x/idle:latest"}}}'
    expect_eq "instantiate idle: 201" 201 \
        "$(acode POST "$API/buildconfigs/idle/instantiate" -H 'Content-Type: application/json' \
            -d '{"kind": "BuildRequest", "apiVersion": "build.openshift.io/v1", "metadata": {"name": "idle"}}')"
    local b
    b=$(body | sw_json 'at("metadata.name")')
    acode GET "$API/builds/$b/log?follow=true" >"$SW_TMP/follow.code" &
    local waiting=$!
    (
        curl -sSk --max-time 30 -o /dev/null -H "Authorization: Bearer $SW_TOKEN" \
            "$SW_URL$API/builds/webhooks-1/log?follow=true" 2>/dev/null
        echo $? >"$SW_TMP/running.rc"
    ) &
    local running=$!
    sleep 1
    local t0=$SECONDS
    sw_stop_server
    expect_eq "a stop with two log follows open takes under 5 s" 1 "$((SECONDS - t0 < 5))"
    wait "$waiting" "$running"
    expect_eq "... the follow of a build not started: 503" 503 "$(cat "$SW_TMP/follow.code")"
    expect_eq "... the follow of a Running build is cut (curl: partial transfer)" 18 \
        "$(cat "$SW_TMP/running.rc")"
}

sw_start_server
check_anonymous
check_github
check_details
check_paths
check_binary
check_names_and_tokens
check_follow_at_stop
sw_finish
echo "took $(($(date +%s) - START)) s"
