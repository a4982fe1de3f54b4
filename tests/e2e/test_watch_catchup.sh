#!/usr/bin/env bash
# test_watch_catchup.sh: watches from revisions that already left the in-memory watch cache
# (8192 events) are replayed from the store's history. Covers: a replay within the limits
# delivers every event after the requested revision exactly once and in order, then live ones;
# a replay past 64 MiB of events answers 410 Expired and the server stays up (it once freed
# memory it did not own there); more than 64 MiB of events at once (an initial state, or live
# events piled up unread) all arrive whole. Every process and directory is removed on every
# exit path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

START=$(date +%s)
sw_start_server
CMP=/api/v1/namespaces/default/configmaps

# writes WHAT N: N writes over one keep-alive connection (Python's http.client): creates of
# small secrets or serviceaccounts, or 900 KB merge patches of the ConfigMap named WHAT.
writes()
{
    python3 - "$SW_URL" "$SW_TOKEN" "$@" <<'PY'
import http.client, json, ssl, sys
url, token, what, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
host = url.split("//")[1]
c = http.client.HTTPSConnection(host, context=ssl._create_unverified_context())
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
for i in range(n):
    if what in ("secrets", "serviceaccounts"):
        body = {"metadata": {"name": "w-%d" % i}}
        c.request("POST", "/api/v1/namespaces/default/" + what, json.dumps(body), h)
    else:
        body = {"data": {"a": str(i) + "x" * 900000}}
        h2 = dict(h, **{"Content-Type": "application/merge-patch+json"})
        c.request("PATCH", "/api/v1/namespaces/default/configmaps/" + what, json.dumps(body), h2)
    r = c.getresponse()
    r.read()
    if r.status >= 300:
        sys.exit("write %d: HTTP %d" % (i, r.status))
PY
}

rv_of() { sw_api GET "$1" | sw_json 'at("metadata.resourceVersion")'; }

# A watch from a revision the cache no longer holds, with a few changes to replay.
sw_api POST $CMP -H 'Content-Type: application/json' -d '{"metadata":{"name":"few"}}' >/dev/null
RV0=$(rv_of $CMP/few)
for i in 1 2 3; do
    sw_api PATCH $CMP/few -H 'Content-Type: application/merge-patch+json' -d "{\"data\":{\"n\":\"$i\"}}" >/dev/null
done
writes secrets 8300 || fail "small writes"
pass "8300 writes pushed those changes out of the watch cache"
# The watch reads until the live event came (its timeout only bounds a failure).
python3 - "$SW_URL" "$SW_TOKEN" "$CMP?watch=1&resourceVersion=$RV0&timeoutSeconds=60" \
    >"$SW_TMP/few.watch" <<'PY' &
import http.client, json, ssl, sys
url, token, path = sys.argv[1:4]
c = http.client.HTTPSConnection(url.split("//")[1], context=ssl._create_unverified_context())
c.request("GET", path, headers={"Authorization": "Bearer " + token})
r = c.getresponse()
seen = []
while True:
    line = r.readline()
    if not line:
        break
    if line.strip():
        obj = json.loads(line)["object"]
        if obj["metadata"]["name"] != "few":
            continue  # another ConfigMap (kube-root-ca.crt, published by a controller)
        seen.append(obj["data"]["n"])
        if seen[-1] == "live":
            break
print(" ".join(seen))
PY
WATCH=$!
sleep 1
sw_api PATCH $CMP/few -H 'Content-Type: application/merge-patch+json' -d '{"data":{"n":"live"}}' >/dev/null
wait $WATCH
expect_eq "the replay, then the live event: each once, in order" "1 2 3 live" \
    "$(cat "$SW_TMP/few.watch")"

# A replay past 64 MiB: 410, and the server carries on.
sw_api POST $CMP -H 'Content-Type: application/json' -d '{"metadata":{"name":"big"}}' >/dev/null
RV1=$(rv_of $CMP/big)
writes big 80 || fail "big writes"
writes serviceaccounts 8300 || fail "more small writes"
OUT=$(curl -sSk --max-time 30 -H "Authorization: Bearer $SW_TOKEN" \
    "$SW_URL$CMP?watch=1&resourceVersion=$RV1&timeoutSeconds=5")
expect_contains "a replay past 64 MiB: 410 Expired" '"code":410' "$OUT"
sleep 0.5
expect_eq "... and the server is still up" 200 \
    "$(curl -sk -o /dev/null -w '%{http_code}' "$SW_URL/readyz")"

# More than 64 MiB of events at once (26 ConfigMaps of 2.8 MB): a watch's output buffer once
# overflowed and dropped events silently (a 200 with events missing and one cut line). Every
# event must arrive whole, both for the initial state of a watch without a resourceVersion and
# for live events piling up while the client does not read.
python3 - "$SW_URL" "$SW_TOKEN" >"$SW_TMP/huge.out" <<'PY' || fail "huge watch: $(cat "$SW_TMP/huge.out")"
import http.client, json, ssl, sys, time
url, token = sys.argv[1], sys.argv[2]
host = url.split("//")[1]
ctx = ssl._create_unverified_context()
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
CMP = "/api/v1/namespaces/default/configmaps"
N, SIZE = 26, 2800000

def conn():
    return http.client.HTTPSConnection(host, context=ctx, timeout=120)

def call(c, method, path, body, ctype="application/json"):
    c.request(method, path, json.dumps(body), dict(h, **{"Content-Type": ctype}))
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit("%s %s: HTTP %d" % (method, path, r.status))
    return json.loads(data)

def events(resp, want):
    """Reads events until `want` huge ones of the expected kind came, or the stream ends: the
    watch's timeout is long, so a slow machine never cuts a stream that is still arriving."""
    names, bad = [], 0
    while len(names) < want:
        line = resp.readline()
        if not line:
            break
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            bad += 1
            continue
        n = ev["object"]["metadata"]["name"]
        if n.startswith("huge-") and len(ev["object"]["data"]["v"]) >= SIZE:
            names.append((ev["type"], n))
    return names, bad

w = conn()
for i in range(N):
    call(w, "POST", CMP, {"metadata": {"name": "huge-%02d" % i}, "data": {"v": "x" * SIZE}})
rv = call(w, "GET", CMP + "?limit=1", None)["metadata"]["resourceVersion"]

c = conn()
c.request("GET", CMP + "?watch=1&timeoutSeconds=120", headers=h)
got, bad = events(c.getresponse(), N)
c.close()
print("initial", len([1 for t, n in got if t == "ADDED"]), "unparsable", bad)

c = conn()
c.request("GET", CMP + "?watch=1&timeoutSeconds=120&resourceVersion=" + rv, headers=h)
resp = c.getresponse()  # not read until every patch is in
for i in range(N):
    call(w, "PATCH", CMP + "/huge-%02d" % i, {"data": {"v": "y" * SIZE}},
         "application/merge-patch+json")
got, bad = events(resp, N)
c.close()
print("live", len([1 for t, n in got if t == "MODIFIED"]), "unparsable", bad)
PY
expect_eq "a watch's initial state of 73 MB: all 26 ADDED events, whole" "initial 26 unparsable 0" \
    "$(grep '^initial' "$SW_TMP/huge.out")"
expect_eq "73 MB of live events piled up unread: all 26 MODIFIED, whole" "live 26 unparsable 0" \
    "$(grep '^live' "$SW_TMP/huge.out")"
sw_finish
echo "took $(($(date +%s) - START)) s"
