#!/usr/bin/env bash
# test_watch_catchup.sh: watches from revisions that already left the in-memory watch cache
# (8192 events) are replayed from the store's history. Covers: a replay within the limits
# delivers every event after the requested revision exactly once and in order, then live ones;
# a replay past 64 MiB of events answers 410 Expired and the server stays up (it once freed
# memory it did not own there). Every process and directory is removed on every exit path.
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
curl -sSk --max-time 10 -H "Authorization: Bearer $SW_TOKEN" \
    "$SW_URL$CMP?watch=1&resourceVersion=$RV0&timeoutSeconds=3" >"$SW_TMP/few.watch" &
WATCH=$!
sleep 1
sw_api PATCH $CMP/few -H 'Content-Type: application/merge-patch+json' -d '{"data":{"n":"live"}}' >/dev/null
wait $WATCH
expect_eq "the replay, then the live event: each once, in order" "1 2 3 live" \
    "$(python3 -c 'import json, sys
print(" ".join(json.loads(l)["object"]["data"]["n"] for l in open(sys.argv[1]) if l.strip()))' "$SW_TMP/few.watch")"

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
sw_finish
echo "took $(($(date +%s) - START)) s"
