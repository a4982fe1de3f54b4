#!/usr/bin/env bash
# test_bad_input.sh: hostile and malformed requests sent with curl straight to the API of
# `slipway server` (issue 2, "Bad input"). Each must get the right HTTP status and Kubernetes
# Status reason; afterwards the server must still be ready, exit cleanly on SIGTERM and have no
# sanitizer report in its log. The server compacts every second, keeping one revision, so that a
# watch from an old resourceVersion meets 410 Expired, and closes connections idle for 2 s.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
ISP=/apis/image.openshift.io/v1/namespaces/default/imagestreams
CMP=/api/v1/namespaces/default/configmaps

# api METHOD PATH [CURL ARGS...]: sets CODE, BODY and HEADERS (the response header block).
api()
{
    local method=$1 path=$2
    shift 2
    CODE=$(curl -sk --max-time 20 -o "$SW_TMP/body" -D "$SW_TMP/headers" -w '%{http_code}' \
        -X "$method" -H "Authorization: Bearer $SW_TOKEN" "$@" "$SW_URL$path")
    BODY=$(cat "$SW_TMP/body")
    HEADERS=$(tr -d '\r' <"$SW_TMP/headers")
}

# post_json PATH JSON [CURL ARGS...]
post_json()
{
    local path=$1 json=$2
    shift 2
    api POST "$path" -H 'Content-Type: application/json' --data-binary "$json" "$@"
}

# field EXPR: evaluates EXPR on the JSON body `o` (Python), printing the result.
field()
{
    printf '%s' "$BODY" | $PY -c "import json,sys
o = json.load(sys.stdin)
print($1)" 2>/dev/null || echo "<body is not JSON: ${BODY:0:300}>"
}

# expect_status WHAT HTTP_CODE REASON [MESSAGE SUBSTRING]: the reply is a Failure Status.
expect_status()
{
    local what=$1 code=$2 reason=$3 msg=${4:-}
    [ "$CODE" = "$code" ] || fail "$what: expected HTTP $code, got $CODE: ${BODY:0:600}"
    expect_eq "$what: Status reason/code" "Status Failure $reason $code" \
        "$(field 'o["kind"], o["status"], o["reason"], o["code"]')"
    [ -z "$msg" ] || expect_contains "$what: message" "$msg" "$(field 'o["message"]')"
}

is_json()
{
    printf '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"%s"}%s}' \
        "$1" "${2:-}"
}

# Writes into a namespace follow its life: refused while it terminates (a finalizer holds it),
# NotFound once it is gone, accepted again when it is recreated. The server answers these from
# memory (apiserver/nscache.c), so each step checks that memory moved with the acknowledged
# namespace write.
check_namespace_lifecycle()
{
    local nsp=/api/v1/namespaces isp=/apis/image.openshift.io/v1/namespaces/held/imagestreams
    post_json $nsp '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"held","finalizers":["example.com/hold"]}}'
    [ "$CODE" = 201 ] || fail "create namespace held: HTTP $CODE: ${BODY:0:300}"
    post_json $isp "$(is_json before)"
    [ "$CODE" = 201 ] || fail "create into an active namespace: HTTP $CODE: ${BODY:0:300}"
    api DELETE $nsp/held
    post_json $isp "$(is_json during)"
    expect_status "create into a terminating namespace" 403 Forbidden \
        "unable to create new content in namespace held because it is being terminated"
    api PATCH $nsp/held -H 'Content-Type: application/merge-patch+json' \
        --data-binary '{"metadata":{"finalizers":null}}'
    # the namespace controller empties it and lifts spec.finalizers; then it goes
    for _ in $(seq 100); do
        api GET $nsp/held
        [ "$CODE" = 404 ] && break
        sleep 0.1
    done
    [ "$CODE" = 404 ] || fail "namespace held still there after its finalizer went: HTTP $CODE: ${BODY:0:300}"
    post_json $isp "$(is_json after)"
    expect_status "create into a deleted namespace" 404 NotFound 'namespaces "held" not found'
    post_json $nsp '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"held"}}'
    post_json $isp "$(is_json again)"
    [ "$CODE" = 201 ] || fail "create into a recreated namespace: HTTP $CODE: ${BODY:0:300}"
    pass "writes follow the namespace: 201 active, 403 terminating, 404 deleted, 201 recreated"
}

check_malformed_bodies()
{
    post_json "$ISP" '{bad'
    expect_status "malformed JSON" 400 BadRequest "invalid JSON"
    post_json "$ISP" '{"apiVersion":"image.openshift.io/v1","kind":'
    expect_status "truncated JSON" 400 BadRequest
    post_json "$ISP" '[1,2]'
    expect_status "JSON array body" 400 BadRequest
    post_json "$ISP" '"just a string"'
    expect_status "JSON string body" 400 BadRequest
    api POST "$ISP" -H 'Content-Type: application/json'
    expect_status "empty body" 400 BadRequest
    printf '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"n\xff\xfe"}}' \
        >"$SW_TMP/badutf8.json"
    api POST "$ISP" -H 'Content-Type: application/json' --data-binary "@$SW_TMP/badutf8.json"
    expect_status "invalid UTF-8" 400 BadRequest

    post_json "$ISP" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}'
    expect_status "wrong kind in the body" 400 BadRequest "ConfigMap"
    post_json "$ISP" '{"apiVersion":"image.openshift.io/v1","kind":"Image","metadata":{"name":"x"}}'
    expect_status "other kind of the same group" 400 BadRequest
    post_json "$ISP" '{"apiVersion":"image.openshift.io/v2","kind":"ImageStream","metadata":{"name":"x"}}'
    expect_status "wrong apiVersion" 400 BadRequest "image.openshift.io/v2"
    post_json "$ISP" '{"apiVersion":"v1","kind":"ImageStream","metadata":{"name":"x"}}'
    expect_status "core apiVersion for an OpenShift kind" 400 BadRequest
    post_json "$ISP" '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"x","namespace":"other"}}'
    expect_status "body namespace differs from the URL" 400 BadRequest "does not match the namespace"
    post_json "$ISP" "$(is_json meta-ok)"
    [ "$CODE" = 201 ] || fail "control create: expected 201, got $CODE: $BODY"
    api PUT "$ISP/meta-ok" -H 'Content-Type: application/json' --data-binary "$(is_json other-name)"
    expect_status "PUT body name differs from the URL" 400 BadRequest "does not match the name on the URL"
    api GET "$ISP/x"
    expect_status "none of the bad bodies created anything" 404 NotFound
}

check_size_and_depth()
{
    local big=$SW_TMP/big.json
    { printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"'
      head -c $((3 * 1024 * 1024 + 100)) /dev/zero | tr '\0' 'x'
      printf '"}}'; } >"$big"
    api POST "$CMP" -H 'Content-Type: application/json' --data-binary "@$big"
    expect_status "body over 3 MiB" 413 RequestEntityTooLarge
    api POST "$CMP" -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
        --data-binary "@$big"
    expect_status "chunked body over 3 MiB" 413 RequestEntityTooLarge
    api GET "$CMP/big"
    expect_status "oversize object not stored" 404 NotFound
    { printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"almost"},"data":{"a":"'
      head -c $((3 * 1024 * 1024 - 4096)) /dev/zero | tr '\0' 'y'
      printf '"}}'; } >"$big"
    api POST "$CMP" -H 'Content-Type: application/json' --data-binary "@$big"
    expect_eq "body just under 3 MiB is accepted" 201 "$CODE"
    api DELETE "$CMP/almost"
    expect_eq "delete the big ConfigMap" 200 "$CODE"

    $PY -c 'print("{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\",\"metadata\":{\"name\":\"deep\"},\"spec\":{\"x\":" + "[" * 200 + "]" * 200 + "}}")' >"$SW_TMP/deep.json"
    api POST "$ISP" -H 'Content-Type: application/json' --data-binary "@$SW_TMP/deep.json"
    expect_status "200 nested arrays" 400 BadRequest "depth"
    $PY -c 'print("[" * 100000 + "]" * 100000)' >"$SW_TMP/deeper.json"
    api POST "$ISP" -H 'Content-Type: application/json' --data-binary "@$SW_TMP/deeper.json"
    expect_status "100000 nested arrays" 400 BadRequest "depth"
    $PY -c 'print("{\"a\":" * 5000 + "1" + "}" * 5000)' >"$SW_TMP/deepobj.json"
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/merge-patch+json' \
        --data-binary "@$SW_TMP/deepobj.json"
    expect_status "deeply nested merge patch" 400 BadRequest "depth"
}

check_names()
{
    post_json "$ISP" "$(is_json UPPER)"
    expect_status "uppercase ImageStream name" 422 Invalid 'metadata.name: Invalid value: "UPPER"'
    post_json "$ISP" "$(is_json "$(printf 'a%.0s' $(seq 254))")"
    expect_status "254-character name" 422 Invalid "metadata.name"
    post_json "$ISP" "$(is_json '..')"
    expect_status "ImageStream named .." 422 Invalid "may not be '..'"
    post_json "$ISP" "$(is_json 'a/b')"
    expect_status "name with a slash" 422 Invalid
    post_json "$ISP" "$(is_json 'a..b')"
    expect_status "ImageStream name with a doubled separator" 422 Invalid
    post_json "$ISP" "$(is_json '')"
    expect_status "empty name" 422 Invalid
    post_json "$CMP" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}'
    expect_status "ConfigMap name that is not a DNS subdomain" 422 Invalid "RFC 1123"
    post_json /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a.b"}}'
    expect_status "namespace name with a dot" 422 Invalid
    post_json "$CMP" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lbl","labels":{"bad key!":"v"}}}'
    expect_status "invalid label key" 422 Invalid "metadata.labels"
    api GET "$ISP"
    expect_eq "no invalid ImageStream was stored" "meta-ok" "$(field '" ".join(i["metadata"]["name"] for i in o["items"])')"
}

check_field_validation()
{
    post_json "$ISP?fieldValidation=Strict" "$(is_json strict1 ',"spec":{"bogus":1}')"
    expect_status "unknown field under Strict" 400 BadRequest 'unknown field "spec.bogus"'
    api GET "$ISP/strict1"
    expect_status "strict failure stored nothing" 404 NotFound
    post_json "$ISP?fieldValidation=Strict" "$(is_json strict2 ',"spec":{"tags":[{"name":"t","fromm":{}}]}')"
    expect_status "unknown nested field under Strict" 400 BadRequest 'unknown field "spec.tags[0].fromm"'
    post_json "$ISP?fieldValidation=Strict" "$(is_json strict3 ',"spec":{"lookupPolicy":{"local":"yes"}}')"
    expect_status "wrong JSON type under Strict" 400 BadRequest "spec.lookupPolicy.local"

    post_json "$ISP" "$(is_json warn1 ',"spec":{"bogus":1}')"
    expect_eq "unknown field without Strict is accepted" 201 "$CODE"
    expect_match "Warning header names the field (quotes escaped)" \
        '^Warning: 299 - ".*unknown field \\"spec\.bogus\\""$' "$HEADERS"
    post_json "$ISP?fieldValidation=Ignore" "$(is_json ignore1 ',"spec":{"bogus":1}')"
    expect_eq "unknown field with Ignore is accepted" 201 "$CODE"
    expect_not_contains "no Warning with Ignore" "Warning:" "$HEADERS"

    post_json "$ISP?fieldValidation=Strict" \
        '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"dup1","name":"dup2"}}'
    expect_status "duplicate field under Strict" 400 BadRequest "duplicate"
    post_json "$ISP?fieldValidation=Strict" "$(is_json dup3 ',"spec":{"lookupPolicy":{"local":true,"local":false}}')"
    expect_status "nested duplicate field under Strict" 400 BadRequest "duplicate"
    api GET "$ISP/dup3"
    expect_status "duplicate under Strict stored nothing" 404 NotFound
}

check_conflicts()
{
    local rv
    post_json "$ISP" "$(is_json twice)"
    expect_eq "first create" 201 "$CODE"
    rv=$(field 'o["metadata"]["resourceVersion"]')
    post_json "$ISP" "$(is_json twice)"
    expect_status "create twice" 409 AlreadyExists \
        'imagestreams.image.openshift.io "twice" already exists'
    api PATCH "$ISP/twice" -H 'Content-Type: application/merge-patch+json' \
        --data-binary '{"metadata":{"labels":{"v":"2"}}}'
    expect_eq "update after create" 200 "$CODE"
    api PUT "$ISP/twice" -H 'Content-Type: application/json' \
        --data-binary "$(printf '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"twice","resourceVersion":"%s"}}' "$rv")"
    expect_status "PUT with a stale resourceVersion" 409 Conflict \
        'Operation cannot be fulfilled on imagestreams.image.openshift.io "twice": the object has been modified'
    api PATCH "$ISP/twice" -H 'Content-Type: application/merge-patch+json' \
        --data-binary "{\"metadata\":{\"resourceVersion\":\"$rv\",\"labels\":{\"v\":\"3\"}}}"
    expect_status "PATCH with a stale resourceVersion" 409 Conflict
    api PUT "$ISP/twice" -H 'Content-Type: application/json' \
        --data-binary '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"twice","resourceVersion":"abc"}}'
    [ "$CODE" = 400 ] || [ "$CODE" = 409 ] || [ "$CODE" = 422 ] ||
        fail "PUT with a non-numeric resourceVersion: expected 400/409/422, got $CODE: $BODY"
    pass "PUT with a non-numeric resourceVersion is refused ($CODE)"
    api DELETE "$ISP/twice" -H 'Content-Type: application/json' \
        --data-binary '{"preconditions":{"uid":"00000000-0000-4000-8000-000000000000"}}'
    expect_status "DELETE with a wrong uid precondition" 409 Conflict "Precondition failed"
    api GET "$ISP/twice"
    expect_eq "stale writes changed nothing" "2" "$(field 'o["metadata"]["labels"]["v"]')"

    api GET "$ISP/x"
    expect_status "get missing" 404 NotFound 'imagestreams.image.openshift.io "x" not found'
    expect_eq "NotFound details" "x image.openshift.io imagestreams" \
        "$(field 'o["details"]["name"], o["details"]["group"], o["details"]["kind"]')"
    api GET "$CMP/x"
    expect_status "get missing ConfigMap" 404 NotFound 'configmaps "x" not found'
    api DELETE "$ISP/x"
    expect_status "delete missing" 404 NotFound
    post_json /apis/image.openshift.io/v1/namespaces/nowhere/imagestreams "$(is_json x)"
    expect_status "create into a missing namespace" 404 NotFound 'namespaces "nowhere" not found'
    check_namespace_lifecycle
    api GET /apis/image.openshift.io/v1/namespaces/default/nosuchthings
    expect_status "unknown resource" 404 NotFound
    api POST "$ISP/meta-ok" -H 'Content-Type: application/json' --data-binary '{}'
    expect_status "POST to an object path" 405 MethodNotAllowed
}

check_auth()
{
    local code
    code=$(curl -sk --max-time 10 -o "$SW_TMP/body" -w '%{http_code}' "$SW_URL$ISP")
    BODY=$(cat "$SW_TMP/body")
    CODE=$code
    expect_status "no token" 401 Unauthorized
    code=$(curl -sk --max-time 10 -o "$SW_TMP/body" -w '%{http_code}' \
        -H "Authorization: Bearer ${SW_TOKEN}x" "$SW_URL$ISP")
    BODY=$(cat "$SW_TMP/body")
    CODE=$code
    expect_status "wrong token" 401 Unauthorized
    code=$(curl -sk --max-time 10 -o /dev/null -w '%{http_code}' -u "admin:$SW_TOKEN" "$SW_URL$ISP")
    expect_eq "basic auth is not a bearer token" 401 "$code"
    code=$(curl -sk --max-time 10 -o /dev/null -w '%{http_code}' \
        -H "Authorization: Bearer ${SW_TOKEN:0:20}" "$SW_URL$ISP")
    expect_eq "token prefix" 401 "$code"
    code=$(curl -sk --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' --data-binary "$(is_json anon)" "$SW_URL$ISP")
    expect_eq "anonymous write" 401 "$code"
    api GET "$ISP/anon"
    expect_status "anonymous write stored nothing" 404 NotFound
    code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SW_PORT/readyz")
    [ "$code" != 200 ] || fail "plain HTTP on the TLS port answered 200"
    pass "plain HTTP on the TLS port is refused ($code)"
}

check_media_types()
{
    # k8s\0 + runtime.Unknown{typeMeta{apiVersion, kind}, raw: empty}: an ImageStream is never
    # accepted as protobuf (only JSON clients post OpenShift kinds).
    printf 'k8s\0\x0a\x24\x0a\x15image.openshift.io/v1\x12\x0bImageStream\x12\x00' >"$SW_TMP/pb.bin"
    api POST "$ISP" -H 'Content-Type: application/vnd.kubernetes.protobuf' \
        --data-binary "@$SW_TMP/pb.bin"
    expect_status "protobuf ImageStream body" 415 UnsupportedMediaType
    api POST "$CMP" -H 'Content-Type: text/plain' --data-binary '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"txt"}}'
    expect_status "text/plain request body" 415 UnsupportedMediaType
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/xml' --data-binary '<x/>'
    expect_status "unsupported patch content type" 415 UnsupportedMediaType
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/apply-patch+cbor' --data-binary '{}'
    expect_status "CBOR apply patch" 415 UnsupportedMediaType
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/json-patch+json' \
        --data-binary '[{"op":"test","path":"/metadata/name","value":"other"}]'
    expect_status "JSON patch with a failing test op" 422 Invalid
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/json-patch+json' \
        --data-binary '[{"op":"test","path":"/metadata/name","value":"meta-ok"},{"op":"add","path":"/metadata/labels","value":{"t":"1"}}]'
    expect_eq "JSON patch with a passing test op" 200 "$CODE"
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/json-patch+json' \
        --data-binary '[{"op":"remove","path":"/spec/nothing/here"}]'
    expect_status "JSON patch removing a missing path" 422 Invalid
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/json-patch+json' --data-binary '{"op":"add"}'
    [ "$CODE" = 400 ] || [ "$CODE" = 422 ] || fail "JSON patch that is not a list: got $CODE: $BODY"
    pass "JSON patch that is not a list is refused ($CODE)"
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/merge-patch+json' --data-binary '{"kind":"Image"}'
    [ "$CODE" = 400 ] || [ "$CODE" = 422 ] || fail "merge patch changing kind: got $CODE: $BODY"
    pass "merge patch changing kind is refused ($CODE)"
    api GET "$ISP/meta-ok"
    expect_eq "only the passing patch applied" "1 ImageStream" \
        "$(field 'o["metadata"]["labels"]["t"], o["kind"]')"
}

check_list_and_watch_params()
{
    api GET "$ISP?limit=1&continue=bogus"
    expect_status "bogus continue token" 400 BadRequest
    api GET "$ISP?continue=eyJ2IjoxfQ%3D%3D"
    [ "$CODE" = 400 ] || [ "$CODE" = 410 ] || fail "forged continue token: got $CODE: $BODY"
    pass "forged continue token is refused ($CODE)"
    local all
    post_json $CMP '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"limit-a"}}'
    post_json $CMP '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"limit-b"}}'
    api GET "$CMP"
    all=$(field 'len(o["items"])')
    [ "$all" -ge 2 ] || fail "two ConfigMaps to list: got $all"
    api GET "$CMP?limit=18446744073709551614"
    expect_eq "a limit of 2^64-2: every item, no continue" "200 $all None" \
        "$CODE $(field 'len(o["items"])') $(field 'o["metadata"].get("continue")')"
    api GET "$CMP?limit=9223372036854775807"
    expect_eq "a limit of 2^63-1: every item" "200 $all" "$CODE $(field 'len(o["items"])')"
    api GET "$ISP?labelSelector=a%20in%20(b"
    expect_status "labelSelector syntax error" 400 BadRequest
    api GET "$ISP?labelSelector=%3D%3Dx"
    expect_status "labelSelector without a key" 400 BadRequest
    api GET "$ISP?labelSelector=app%3Dok"
    expect_eq "valid labelSelector" "200 ImageStreamList" "$CODE $(field 'o["kind"]')"
    api GET "$ISP?fieldSelector=spec.foo%3Dx"
    expect_status "unsupported fieldSelector field" 400 BadRequest "field label not supported: spec.foo"
    api GET "$ISP?fieldSelector=metadata.name"
    expect_status "fieldSelector without an operator" 400 BadRequest
    api GET "$ISP?fieldSelector=metadata.name%3Dmeta-ok"
    expect_eq "valid fieldSelector" "200 meta-ok" \
        "$CODE $(field '" ".join(i["metadata"]["name"] for i in o["items"])')"
    api GET "$ISP?watch=true&timeoutSeconds=abc"
    expect_status "bad timeoutSeconds" 400 BadRequest
    api GET "$ISP?watch=true&resourceVersion=abc"
    expect_status "bad resourceVersion on watch" 400 BadRequest

    api GET "$ISP?watch=True&timeoutSeconds=1&fieldSelector=metadata.name%3Dmeta-ok"
    expect_eq "watch=True (Python) is a watch" 200 "$CODE"
    expect_eq "watch=True first event" "ADDED meta-ok" \
        "$(printf '%s\n' "$BODY" | head -n 1 | $PY -c 'import json,sys; e=json.load(sys.stdin); print(e["type"], e["object"]["metadata"]["name"])')"
    api GET "$ISP?watch=1&allowWatchBookmarks=True&timeoutSeconds=1&labelSelector=t%3D1"
    expect_eq "watch=1 with allowWatchBookmarks=True" "200 ADDED" \
        "$CODE $(printf '%s\n' "$BODY" | head -n 1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["type"])')"
    api GET "$ISP?watch=False"
    expect_eq "watch=False is a list" "200 ImageStreamList" "$CODE $(field 'o["kind"]')"
}

# A watch from before the compacted revision: 200, then one ERROR event (410 Expired), then EOF.
check_watch_compacted()
{
    local i first rv out=$SW_TMP/watch.out
    for i in $(seq 30); do
        api PATCH "$ISP/meta-ok" -H 'Content-Type: application/merge-patch+json' \
            --data-binary "{\"metadata\":{\"labels\":{\"n\":\"$i\"}}}"
        [ "$CODE" = 200 ] || fail "write $i before compaction: $CODE $BODY"
    done
    for _ in $(seq 300); do
        grep -q "compacted the store to revision" "$SW_LOG" && break
        sleep 0.1
    done
    grep -q "compacted the store to revision" "$SW_LOG" || fail "the server never compacted"
    pass "server compacted its store"
    CODE=$(curl -sk --max-time 15 -o "$out" -w '%{http_code}' -H "Authorization: Bearer $SW_TOKEN" \
        "$SW_URL$ISP?watch=true&resourceVersion=2")
    expect_eq "watch from a compacted revision: HTTP status" 200 "$CODE"
    first=$(head -n 1 "$out")
    expect_eq "first event is ERROR 410 Expired" "ERROR Status 410 Expired" \
        "$(printf '%s' "$first" | $PY -c 'import json,sys; e=json.load(sys.stdin); o=e["object"]; print(e["type"], o["kind"], o["code"], o["reason"])')"
    expect_contains "410 message" "too old resource version: 2" "$first"
    expect_eq "stream ends after the error" 1 "$(wc -l <"$out")"

    api GET "$ISP/meta-ok"
    rv=$(field 'o["metadata"]["resourceVersion"]')
    sw_bg curl -sk --max-time 15 -o "$out" -H "Authorization: Bearer $SW_TOKEN" \
        "$SW_URL$ISP?watch=true&resourceVersion=$rv&timeoutSeconds=3"
    sleep 0.5
    api PATCH "$ISP/meta-ok" -H 'Content-Type: application/merge-patch+json' \
        --data-binary '{"metadata":{"labels":{"n":"after"}}}'
    wait "${SW_BG_PIDS[@]}"
    SW_BG_PIDS=()
    expect_eq "watch from the current revision sees the next change" "MODIFIED after" \
        "$(head -n 1 "$out" | $PY -c 'import json,sys; e=json.load(sys.stdin); print(e["type"], e["object"]["metadata"]["labels"]["n"])')"
}

check_garbage_connections()
{
    local i
    # In a subshell: the server may close first, and a SIGPIPE must end the writer, not the test.
    for i in 1 2 3; do
        (printf 'GARBAGE %d\r\n\r\n' "$i" >&3) 3<>"/dev/tcp/127.0.0.1/$SW_PORT" 2>/dev/null || true
    done
    printf '\x16\x03\x01\x00\xff garbage' | timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$SW_PORT" 2>/dev/null
    { printf 'X-Big: '; head -c 200000 /dev/zero | tr '\0' h; printf '\n'; } >"$SW_TMP/bighdr"
    CODE=$(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SW_TOKEN" \
        -H "@$SW_TMP/bighdr" "$SW_URL$ISP")
    [ "$CODE" != 200 ] || fail "a 200 KB request header was accepted"
    pass "a 200 KB request header is refused ($CODE)"
    api GET "$ISP/meta-ok"
    expect_eq "server answers after garbage connections" 200 "$CODE"
}

# The server runs with --idle-timeout 2: a connection that sends nothing (or half a request, or
# stays idle after its answer) is closed after about 2 s, so idle sockets cannot pile up to the
# connection limit; a watch with no event for 4 s is no idle connection and stays open.
check_idle_connections()
{
    local out
    out=$(SW_PORT=$SW_PORT SW_TOKEN=$SW_TOKEN $PY - <<'PYEOF'
import json, os, socket, ssl, time
port, token = int(os.environ["SW_PORT"]), os.environ["SW_TOKEN"]
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE

def conn(tls=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    return ctx.wrap_socket(s) if tls else s

def closed_after(s, send=b""):
    if send:
        s.sendall(send)
    t0 = time.time()
    try:
        while s.recv(65536):
            pass
    except (OSError, ssl.SSLError):
        pass
    return time.time() - t0

print("silent %.1f" % closed_after(conn(tls=False)))
print("half %.1f" % closed_after(conn(), b"GET /version HTTP/1.1\r\nHost: x\r\n"))
print("keepalive %.1f" % closed_after(conn(), b"GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() + b"\r\n\r\n"))
w = conn()
auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
w.sendall(b"GET /api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=30 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
time.sleep(4)
c = conn()
body = json.dumps({"metadata": {"name": "after-idle"}}).encode()
c.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
c.recv(100)
buf = b""
while b"after-idle" not in buf:
    d = w.recv(65536)
    if not d:
        break
    buf += d
print("watch %s" % (b"after-idle" in buf))
PYEOF
)
    local t
    t=$(awk '/^silent/ {print $2}' <<<"$out")
    expect_match "a silent connection is closed after the idle timeout (${t}s)" '^[12]\.|^3\.0' "$t"
    t=$(awk '/^half/ {print $2}' <<<"$out")
    expect_match "half a request is closed after the idle timeout (${t}s)" '^[12]\.|^3\.0' "$t"
    t=$(awk '/^keepalive/ {print $2}' <<<"$out")
    expect_match "an idle keep-alive connection is closed after its answer (${t}s)" '^[12]\.|^3\.0' "$t"
    expect_eq "a watch 4 s without events stays open and gets the next one" "watch True" \
        "$(grep '^watch' <<<"$out")"
}

# What a review of the REST layer found (each used to crash the server, store an object no one
# could read back, or write for real on a misspelled option).
check_review_findings()
{
    local ops i
    post_json $CMP '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"}}'
    [ "$CODE" = 201 ] || fail "create configmap deep: HTTP $CODE"
    # JSON patch moves that nest a little deeper each round: refused before the depth a stored
    # object may have (64), so the object stays readable and deletable.
    ops=$($PY -c 'import json
chain = {}
for _ in range(20): chain = {"a": chain}
ops = [{"op": "add", "path": "/metadata/managedFields", "value": [{}]}]
for i in range(6):
    ops += [{"op": "add", "path": "/t", "value": chain},
            {"op": "move", "from": "/metadata/managedFields", "path": "/t" + "/a" * 20 + "/m"},
            {"op": "move", "from": "/t", "path": "/metadata/managedFields"}]
print(json.dumps(ops))')
    api PATCH $CMP/deep -H 'Content-Type: application/json-patch+json' --data-binary "$ops"
    expect_status "JSON patch nesting past 64 levels" 422 Invalid "deeper than 64 levels"
    api GET $CMP/deep
    expect_eq "... the object still reads" 200 "$CODE"
    api DELETE $CMP/deep
    expect_eq "... and deletes" 200 "$CODE"

    post_json $ISP '{"metadata":{"name":"nofrom"},"spec":{"tags":[{"name":"a","from":{"kind":"ImageStreamTag"}}]}}'
    expect_status "an ImageStream tag from an ImageStreamTag without a name" 422 Invalid
    post_json $ISP '{"metadata":{"name":"noname"},"spec":{"tags":[{"from":{"kind":"ImageStreamImage","name":"x@sha256:1"}}]}}'
    expect_status "an ImageStream tag without a name" 422 Invalid

    api PATCH $CMP/ssa -H 'Content-Type: application/apply-patch+yaml' --data-binary \
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"a":1},"immutable":"yes"}'
    expect_status "server-side apply create with wrong types" 400 BadRequest

    # An update keeps the client's key order, so status can be stored before metadata.
    post_json $ISP '{"metadata":{"name":"statusfirst"}}'
    [ "$CODE" = 201 ] || fail "create statusfirst: HTTP $CODE: ${BODY:0:300}"
    api PUT $ISP/statusfirst/status -H 'Content-Type: application/json' \
        -d '{"metadata":{"name":"statusfirst"},"status":{"tags":[]}}'
    [ "$CODE" = 200 ] || fail "status of statusfirst: HTTP $CODE: ${BODY:0:300}"
    api PUT $ISP/statusfirst -H 'Content-Type: application/json' \
        -d '{"status":{},"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"statusfirst"},"spec":{}}'
    [ "$CODE" = 200 ] || fail "update statusfirst: HTTP $CODE: ${BODY:0:300}"
    api GET $ISP/statusfirst
    expect_eq "status stored before metadata still reads (computed status spliced in)" \
        "200 statusfirst registry.example:5000/default/statusfirst" \
        "$CODE $(field 'o["metadata"]["name"], o["status"]["dockerImageRepository"]' | tr -d "(),'")"

    post_json "$CMP?dryRun=true" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry1"}}'
    expect_status "dryRun=true (not All)" 400 BadRequest "Invalid dry run value"
    api GET $CMP/dry1
    expect_eq "... wrote nothing" 404 "$CODE"
    post_json "$CMP?fieldValidation=Strictly" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv"}}'
    expect_status "an unknown fieldValidation" 400 BadRequest "fieldValidation"
    post_json $CMP '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"}}'
    api DELETE "$CMP/keep?propagationPolicy=Nonsense"
    expect_status "an unknown propagationPolicy" 422 Invalid \
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Nonsense"'
    api DELETE "$CMP/keep" -H 'Content-Type: application/json' \
        -d '{"propagationPolicy":"Orphan","orphanDependents":true}'
    expect_status "orphanDependents with a propagationPolicy" 422 Invalid \
        "orphanDependents and deletionPropagation cannot be both set"
    api DELETE "$CMP/keep" -H 'Content-Type: application/json' -d '{"dryRun":["Some"]}'
    expect_status "an unknown dryRun in DeleteOptions" 422 Invalid 'dryRun: Unsupported value'
    api DELETE "$CMP/keep" -H 'Content-Type: application/json' -d '{"propagationPolicy":7}'
    expect_status "a DeleteOptions field of the wrong type" 400 BadRequest "propagationPolicy"
    api DELETE "$CMP/keep" -H 'Content-Type: application/json' -d '[1]'
    expect_status "DeleteOptions that are not an object" 400 BadRequest "DeleteOptions"
    api GET "$CMP/keep"
    [ "$CODE" = 200 ] || fail "refused deletions deleted the ConfigMap: HTTP $CODE"
    api DELETE $CMP/keep -H 'Content-Type: application/json' -d '{"preconditions":{"resourceVersion":"1"}}'
    expect_status "a stale resourceVersion precondition" 409 Conflict "ResourceVersion in precondition: 1"

    post_json /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"nsx"}}'
    api PATCH /api/v1/namespaces/nsx -H 'Content-Type: application/merge-patch+json' \
        -d '{"spec":{"finalizers":["evil"]}}'
    expect_eq "a Namespace's spec does not change through the main resource" '200 ["kubernetes"]' \
        "$CODE $(field 'json.dumps(o["spec"]["finalizers"])')"
    post_json /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"nsy","finalizers":["x y"]}}'
    expect_status "a finalizer that is not a qualified name" 422 Invalid "qualified name"

    post_json $CMP '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"data":{"a":"1"},"immutable":true}'
    api PATCH $CMP/frozen -H 'Content-Type: application/merge-patch+json' -d '{"data":{"a":"2"},"immutable":false}'
    expect_status "an immutable ConfigMap" 422 Invalid "immutable"
    post_json /api/v1/namespaces/default/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"frozen"},"stringData":{"a":"1"},"immutable":true}'
    api PATCH /api/v1/namespaces/default/secrets/frozen -H 'Content-Type: application/merge-patch+json' -d '{"stringData":{"a":"2"}}'
    expect_status "an immutable Secret" 422 Invalid "immutable"

    api GET "$CMP?watch=true&resourceVersion=-1&timeoutSeconds=1"
    expect_status "a watch from resourceVersion -1" 400 BadRequest
    for i in 1 2 3; do post_json $CMP "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"page$i\"}}"; done
    local forged
    forged=$($PY -c 'import base64, json; print(base64.urlsafe_b64encode(json.dumps({"rv": 10**12, "start": "x"}).encode()).decode().rstrip("="))')
    api GET "$CMP?limit=1&continue=$forged"
    expect_status "a continue key from the future" 400 BadRequest "continue key is not valid"
}

sw_start_server --compact-interval 1 --compact-keep 1 --image-registry registry.example:5000 \
    --idle-timeout 2
check_malformed_bodies
check_size_and_depth
check_names
check_field_validation
check_conflicts
check_auth
check_media_types
check_list_and_watch_params
check_watch_compacted
check_garbage_connections
check_idle_connections
check_review_findings
sw_finish
