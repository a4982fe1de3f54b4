#!/usr/bin/env bash
# test_build_controller.sh: the build controller alone (issue 4 part 2), with a fake builder
# (SW_BUILDER_BIN) that reads its Build with the build token and behaves as the Build's
# dockerStrategy.env says: FAKE_MODE ok|fail|ignore-term, FAKE_SLEEP seconds, FAKE_LINES,
# FAKE_DIGEST (reported through builds/<n>/details). It leaves its pid, arguments and the
# files it was given in $FAKE_DIR. Covers: ConfigChange builds once; the resolved base and
# output (ImageStreamTag → pull spec, output stream created) and the ImageStreamMapping of the
# digest; builder arguments (--ca, --token-file 0600, --insecure-registry, --push-auth from a
# dockerconfigjson Secret) and the token's limits; Serial queues, SerialLatestOnly cancels the
# older queued build, Parallel runs both; logs in builds/<n>/log, follow; exit 1 → Failed with a
# logSnippet; a killed builder → Error/BuilderKilled; cancel → Cancelled, a builder ignoring
# SIGTERM is SIGKILLed after the grace period; deadline → Failed; history pruning; a base that
# is not imported yet waits; ImageChange triggers once per image, never for the same image, not
# when paused; a restart turns a Running build into Error/BuilderLost; no --image-registry →
# InvalidOutputReference; --max-running-builds 1 runs Parallel builds one at a time; after a
# SIGKILL of the server, the next start kills the orphaned builder and removes its directory.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

START=$(date +%s)
export FAKE_DIR=$SW_TMP/fake
mkdir -p "$FAKE_DIR"
export SW_BUILDER_BIN=$SW_TMP/fake-builder
export SW_BUILD_KILL_GRACE_MS=1000
export TMPDIR=$SW_TMP/tmp # where the controller makes its per-build directories
mkdir -p "$TMPDIR"
REG=127.0.0.1:5999
D1=sha256:1111111111111111111111111111111111111111111111111111111111111111
D2=sha256:2222222222222222222222222222222222222222222222222222222222222222
D3=sha256:3333333333333333333333333333333333333333333333333333333333333333
OUTD=sha256:abababababababababababababababababababababababababababababababab

cat >"$SW_BUILDER_BIN" <<'EOF'
#!/usr/bin/python3
# A fake `slipway builder`: reads its Build with the build token, then acts as told.
import json, os, signal, ssl, stat, sys, time, urllib.error, urllib.request
argv = sys.argv[1:]
assert argv[0] == "builder", argv
opts = {}
for k, v in zip(argv[1::2], argv[2::2]):
    opts.setdefault(k, []).append(v)
server, ns, name = opts["--server"][0], opts["--namespace"][0], opts["--build"][0]
token = open(opts["--token-file"][0]).read().strip()
ctx = ssl.create_default_context(cafile=opts["--ca"][0])
def api(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method, headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
bpath = "/apis/build.openshift.io/v1/namespaces/%s/builds/%s" % (ns, name)
code, b = api("GET", bpath)
assert code == 200, code
env = {e["name"]: e.get("value", "") for e in
       ((b["spec"].get("strategy") or {}).get("dockerStrategy") or {}).get("env") or []}
files = {}
for f in ("--token-file", "--push-auth", "--ca"):
    if f in opts:
        st = os.stat(opts[f][0])
        files[f] = {"mode": oct(stat.S_IMODE(st.st_mode)), "content": open(opts[f][0]).read()}
other, _ = api("GET", "/api/v1/namespaces/%s/secrets" % ns)
d = os.environ["FAKE_DIR"]
with open("%s/%s.json" % (d, name), "w") as f:
    json.dump({"argv": argv, "files": files, "other": other, "pid": os.getpid(),
               "from": ((b["spec"]["strategy"].get("dockerStrategy") or {}).get("from") or {}),
               "output": b["status"].get("outputDockerImageReference", "")}, f)
with open("%s/%s.pid" % (d, name), "w") as f:
    f.write(str(os.getpid()))
mode = env.get("FAKE_MODE", "ok")
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for i in range(int(env.get("FAKE_LINES", "3"))):
    print("%s says line %d" % (name, i), flush=True)
print("x" * 300, file=sys.stderr, flush=True)
time.sleep(float(env.get("FAKE_SLEEP", "0")))
for i in range(int(env.get("FAKE_TAIL_LINES", "0"))):
    print("%s tail line %05d" % (name, i), flush=True)
if env.get("FAKE_DIGEST"):
    code, _ = api("PUT", bpath + "/details",
                  {"status": {"output": {"to": {"imageDigest": env["FAKE_DIGEST"]}}}})
    assert code == 200, code
if mode == "fail":
    print("error: the fake build failed on purpose", flush=True)
    sys.exit(1)
print("%s done" % name, flush=True)
EOF
chmod +x "$SW_BUILDER_BIN"

# ---- helpers ----

api()
{
    local method=$1 path=$2 body=${3:-}
    if [ -n "$body" ]; then
        curl -sk --max-time 30 -X "$method" -H "Authorization: Bearer $SW_TOKEN" \
            -H 'Content-Type: application/json' --data-binary "$body" "$SW_URL$path"
    else
        curl -sk --max-time 30 -X "$method" -H "Authorization: Bearer $SW_TOKEN" "$SW_URL$path"
    fi
}

BAPI=/apis/build.openshift.io/v1/namespaces/default
IAPI=/apis/image.openshift.io/v1/namespaces/default

# jq_py EXPR: evaluates a Python expression on the JSON on stdin (o is the object).
jq_py()
{
    python3 -c 'import json, sys
try:
    o = json.load(sys.stdin)
except Exception:
    o = {}
st = o.get("status") or {}
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))' "$1" 2>/dev/null
}

bq() { api GET "$BAPI/builds/$1" | jq_py "$2"; }
phase() { bq "$1" 'st.get("phase", "") + "/" + st.get("reason", "")'; }

# wait_phase BUILD EXPECTED SECONDS: polls phase/reason of BUILD until it is EXPECTED.
wait_phase()
{
    local got deadline=$(($(date +%s) + $3))
    while :; do
        got=$(phase "$1")
        [ "$got" = "$2" ] && { pass "$1 is $2"; return 0; }
        [ "$(date +%s)" -lt "$deadline" ] || fail "$1: after $3 s its phase is [$got], expected [$2]"
        sleep 0.2
    done
}

# builds_of BC: names of the builds of BC, sorted.
builds_of()
{
    api GET "$BAPI/builds?labelSelector=openshift.io/build-config.name=$1" |
        jq_py '" ".join(sorted(i["metadata"]["name"] for i in o.get("items", [])))'
}

# mkbc NAME POLICY ENV_JSON [EXTRA_SPEC_JSON]: a BuildConfig with a DockerImage output.
mkbc()
{
    local extra=${4:-}
    local body
    body=$(python3 -c 'import json, sys
name, policy, env, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spec = {"runPolicy": policy, "source": {"type": "Dockerfile", "dockerfile": "FROM scratch\n"},
        "strategy": {"type": "Docker", "dockerStrategy": {"env": [
            {"name": k, "value": v} for k, v in env.items()]}},
        "output": {"to": {"kind": "DockerImage", "name": "127.0.0.1:5999/test/" + name + ":latest"}}}
if extra:
    for k, v in json.loads(extra).items():
        spec[k] = v
print(json.dumps({"apiVersion": "build.openshift.io/v1", "kind": "BuildConfig",
                  "metadata": {"name": name}, "spec": spec}))' "$1" "$2" "$3" "$extra")
    run api POST "$BAPI/buildconfigs" "$body"
    expect_contains "BuildConfig $1 created" "\"name\":\"$1\"" "$OUT"
}

# start BC [ENV_JSON]: instantiate; prints the new build's name.
start()
{
    local env=${2:-[]}
    api POST "$BAPI/buildconfigs/$1/instantiate" \
        "{\"kind\":\"BuildRequest\",\"apiVersion\":\"build.openshift.io/v1\",\"metadata\":{\"name\":\"$1\"},\"env\":$env}" |
        jq_py 'o["metadata"]["name"]'
}

# map STREAM TAG DIGEST: an ImageStreamMapping (a "push" without a registry).
map()
{
    run api POST "$IAPI/imagestreammappings" "{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStreamMapping\",\"metadata\":{\"name\":\"$1\"},\"tag\":\"$2\",\"image\":{\"metadata\":{\"name\":\"$3\"},\"dockerImageReference\":\"$REG/default/$1@$3\"}}"
    case $OUT in *'"Failure"'*) fail "mapping $1:$2 → $3: $OUT" ;; esac
}

fake() { python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$FAKE_DIR/$1.json" "$2"; }

SW_CONTROLLERS=1 sw_start_server --image-registry "$REG" --insecure-registry "$REG"

# ---- ConfigChange, resolution, arguments, the output mapping ----

map base v1 "$D1"
SECRET=$(printf '{"auths":{"%s":{"auth":"dTpw"}}}' "$REG" | base64 -w0)
run api POST /api/v1/namespaces/default/secrets "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"push\"},\"type\":\"kubernetes.io/dockerconfigjson\",\"data\":{\".dockerconfigjson\":\"$SECRET\"}}"
expect_contains "push secret created" '"name":"push"' "$OUT"
mkbc cc Serial "{\"FAKE_DIGEST\":\"$OUTD\"}" '{"triggers":[{"type":"ConfigChange"}],
  "strategy":{"type":"Docker","dockerStrategy":{"from":{"kind":"ImageStreamTag","name":"base:v1"},
  "env":[{"name":"FAKE_DIGEST","value":"'"$OUTD"'"}]}},
  "output":{"to":{"kind":"ImageStreamTag","name":"out:cc"},"pushSecret":{"name":"push"}}}'
wait_phase cc-1 Complete/ 30
sleep 1
expect_eq "ConfigChange built exactly once" "cc-1" "$(builds_of cc)"
expect_eq "base resolved into the spec" "DockerImage $REG/default/base@$D1" \
    "$(bq cc-1 'o["spec"]["strategy"]["dockerStrategy"]["from"]["kind"] + " " + o["spec"]["strategy"]["dockerStrategy"]["from"]["name"]')"
expect_eq "outputDockerImageReference" "$REG/default/out:cc" "$(bq cc-1 'st["outputDockerImageReference"]')"
expect_eq "the builder saw the resolved output" "$REG/default/out:cc" "$(fake cc-1 'o["output"]')"
expect_eq "timestamps and duration set" "True True True" \
    "$(bq cc-1 'str(bool(st.get("startTimestamp"))) + " " + str(bool(st.get("completionTimestamp"))) + " " + str(st.get("duration", 0) > 0)')"
expect_eq "the builder's digest kept" "$OUTD" "$(bq cc-1 'st["output"]["to"]["imageDigest"]')"
expect_eq "output stream got the tag event" "$OUTD $REG/default/out@$OUTD" \
    "$(api GET "$IAPI/imagestreams/out" | jq_py '[t for t in st["tags"] if t["tag"] == "cc"][0]["items"][0]["image"] + " " + [t for t in st["tags"] if t["tag"] == "cc"][0]["items"][0]["dockerImageReference"]')"
expect_eq "builder argv" "builder --server $SW_URL --ca --token-file --namespace default --build cc-1 --insecure-registry $REG --push-auth --workdir" \
    "$(fake cc-1 '" ".join(a for a in o["argv"] if not a.startswith("/"))')"
expect_eq "token file is 0600" "0o600" "$(fake cc-1 'o["files"]["--token-file"]["mode"]')"
expect_eq "push auth is the secret's config.json, 0600" "0o600 $(echo "$SECRET" | base64 -d)" \
    "$(fake cc-1 'o["files"]["--push-auth"]["mode"] + " " + o["files"]["--push-auth"]["content"]')"
expect_contains "CA file is the server's CA" "BEGIN CERTIFICATE" "$(fake cc-1 'o["files"]["--ca"]["content"]')"
expect_eq "the build token cannot list secrets" "403" "$(fake cc-1 'o["other"]')"
[ -z "$(ls "$TMPDIR" 2>/dev/null)" ] || fail "per-build directories were left behind"
pass "per-build directories removed"

# A base from a reference tag (a pull spec, no image: no ImageStreamTag to read) resolves to
# that pull spec, read from the stream as OpenShift's build controller does.
run api POST "$IAPI/imagestreams" '{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"refbase"},"spec":{"tags":[{"name":"v1","reference":true,"from":{"kind":"DockerImage","name":"'"$REG"'/elsewhere/img:1"}}]}}'
expect_eq "a reference tag has no ImageStreamTag" 404 \
    "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SW_TOKEN" "$SW_URL$IAPI/imagestreamtags/refbase:v1")"
mkbc refb Serial '{}' '{"strategy":{"type":"Docker","dockerStrategy":{"from":{"kind":"ImageStreamTag","name":"refbase:v1"}}}}'
run api POST "$BAPI/buildconfigs/refb/instantiate" '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1","metadata":{"name":"refb"}}'
wait_phase refb-1 Complete/ 30
expect_eq "the reference tag's pull spec is the base" "DockerImage $REG/elsewhere/img:1" \
    "$(bq refb-1 'o["spec"]["strategy"]["dockerStrategy"]["from"]["kind"] + " " + o["spec"]["strategy"]["dockerStrategy"]["from"]["name"]')"

# A BuildConfig deleted with its builds orphaned (--cascade=orphan) and made again under the
# same name: its old builds stay, so the new one's generated names must move past theirs, or
# its ConfigChange build is lost and every instantiate answers 409.
mkbc gone Serial '{}' '{"triggers":[{"type":"ConfigChange"}]}'
wait_phase gone-1 Complete/ 30
run api DELETE "$BAPI/buildconfigs/gone" '{"propagationPolicy":"Orphan"}'
for _ in $(seq 100); do
    [ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SW_TOKEN" "$SW_URL$BAPI/buildconfigs/gone")" = 404 ] && break
    sleep 0.1
done
expect_eq "an orphaned build keeps no reference to its deleted config" "[]" \
    "$(bq gone-1 'json.dumps(o["metadata"].get("ownerReferences", []))')"
mkbc gone Serial '{}' '{"triggers":[{"type":"ConfigChange"}]}'
wait_phase gone-2 Complete/ 30
run api POST "$BAPI/buildconfigs/gone/instantiate" '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1","metadata":{"name":"gone"}}'
expect_contains "instantiate after the re-creation" '"name":"gone-3"' "$OUT"
wait_phase gone-3 Complete/ 30
expect_eq "the re-created config's builds follow the old ones" "gone-1 gone-2 gone-3" "$(builds_of gone)"

# An output stream that cannot be created says why: an invalid name ends the build, a missing
# namespace keeps it New with the reason (it may be created later); neither is retried mute.
mkbc badout Serial '{}' '{"output":{"to":{"kind":"ImageStreamTag","name":"My_App:latest"}}}'
run api POST "$BAPI/buildconfigs/badout/instantiate" '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1","metadata":{"name":"badout"}}'
wait_phase badout-1 Error/InvalidOutputReference 20
expect_contains "the message names the stream" "default/My_App cannot be created" \
    "$(bq badout-1 'st.get("message", "")')"
mkbc nons Serial '{}' '{"output":{"to":{"kind":"ImageStreamTag","namespace":"nosuchns","name":"app:latest"}}}'
run api POST "$BAPI/buildconfigs/nons/instantiate" '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1","metadata":{"name":"nons"}}'
wait_phase nons-1 New/InvalidOutputReference 20
run api DELETE "$BAPI/builds/nons-1"

# ---- runPolicy ----

# Each waiting build is checked while the one it waits for still runs: the running ones sleep
# long enough (6 s) that a slow machine never sees them end before the check.
mkbc ser Serial '{"FAKE_SLEEP":"6"}'
mkbc slo SerialLatestOnly '{"FAKE_SLEEP":"6"}'
mkbc par Parallel '{"FAKE_SLEEP":"3"}'
for bc in ser slo par; do start $bc >/dev/null; start $bc >/dev/null; done
start slo >/dev/null
wait_phase ser-1 Running/ 15
expect_eq "Serial: the second waits" "New/" "$(phase ser-2)"
wait_phase par-1 Running/ 15
wait_phase par-2 Running/ 15
pass "Parallel runs both at once"
wait_phase slo-2 Cancelled/CancelledBuild 15
[ "$(phase slo-1)" = Running/ ] || fail "slo-1 ended before slo-3 could be checked: $(phase slo-1)"
expect_eq "SerialLatestOnly: the newest waits" "New/" "$(phase slo-3)"
# follow the running build's log until it finishes
api GET "$BAPI/builds/ser-1/log?follow=true" >"$SW_TMP/follow.log" &
FOLLOW=$!
wait_phase ser-1 Complete/ 15
wait_phase ser-2 Running/ 15
S1_END=$(bq ser-1 'st["completionTimestamp"]')
S2_START=$(bq ser-2 'st["startTimestamp"]')
[[ "$S2_START" > "$S1_END" || "$S2_START" == "$S1_END" ]] || fail "ser-2 started ($S2_START) before ser-1 ended ($S1_END)"
pass "Serial: the second started after the first completed"
wait_phase slo-1 Complete/ 15
wait_phase slo-3 Complete/ 15
wait_phase ser-2 Complete/ 15
wait_phase par-2 Complete/ 15
for _ in $(seq 50); do kill -0 $FOLLOW 2>/dev/null || break; sleep 0.1; done
kill -0 $FOLLOW 2>/dev/null && fail "log follow did not end with the build"
wait $FOLLOW
expect_contains "follow streamed the output" "ser-1 says line 2" "$(cat "$SW_TMP/follow.log")"
expect_contains "follow got the last line" "ser-1 done" "$(cat "$SW_TMP/follow.log")"
run api GET "$BAPI/builds/par-1/log"
expect_contains "builds/<n>/log holds stdout" "par-1 says line 0" "$OUT"
expect_contains "builds/<n>/log holds stderr" "xxxxxxxxxx" "$OUT"

# ---- failures, kill, cancel, deadline ----

mkbc fl Serial '{"FAKE_MODE":"fail","FAKE_LINES":"7"}'
mkbc kl Serial '{"FAKE_SLEEP":"60"}'
mkbc cn Serial '{"FAKE_SLEEP":"60"}'
mkbc ig Serial '{"FAKE_MODE":"ignore-term","FAKE_SLEEP":"60"}'
mkbc dl Serial '{"FAKE_SLEEP":"60"}' '{"completionDeadlineSeconds":2}'
for bc in fl kl cn ig dl; do start $bc >/dev/null; done
wait_phase fl-1 Failed/GenericBuildFailed 15
SNIP=$(bq fl-1 'st["logSnippet"]')
expect_contains "logSnippet has the last line" "error: the fake build failed on purpose" "$SNIP"
expect_eq "logSnippet is 5 lines" 5 "$(printf '%s\n' "$SNIP" | wc -l)"
expect_match "logSnippet elides long lines" '^x{58}\.\.\.x{59}$' "$SNIP"
wait_phase kl-1 Running/ 15
wait_phase cn-1 Running/ 15
wait_phase ig-1 Running/ 15
for b in kl-1 cn-1 ig-1; do
    for _ in $(seq 50); do [ -s "$FAKE_DIR/$b.pid" ] && break; sleep 0.1; done
done
kill -9 "$(cat "$FAKE_DIR/kl-1.pid")"
wait_phase kl-1 Error/BuilderKilled 10
expect_contains "killed: message names the signal" "SIGKILL" "$(bq kl-1 'st["message"]')"
expect_contains "killed: logSnippet" "kl-1 says line 2" "$(bq kl-1 'st["logSnippet"]')"
T0=$(date +%s%N)
run curl -sk -X PATCH -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/merge-patch+json' \
    --data '{"status":{"cancelled":true}}' "$SW_URL$BAPI/builds/cn-1/status"
run curl -sk -X PATCH -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/merge-patch+json' \
    --data '{"status":{"cancelled":true}}' "$SW_URL$BAPI/builds/ig-1/status"
wait_phase cn-1 Cancelled/CancelledBuild 10
wait_phase ig-1 Cancelled/CancelledBuild 10
MS=$((($(date +%s%N) - T0) / 1000000))
[ "$MS" -ge 1000 ] || fail "ig-1 ignoring SIGTERM was cancelled in ${MS} ms, before the 1 s grace"
pass "a builder ignoring SIGTERM is SIGKILLed after the grace (${MS} ms)"
for b in kl-1 cn-1 ig-1; do
    kill -0 "$(cat "$FAKE_DIR/$b.pid")" 2>/dev/null && fail "the builder of $b still runs"
done
pass "no builder left running"
wait_phase dl-1 Failed/DeadlineExceeded 15

# A Build without a BuildConfig runs at once; a Build deleted while it runs loses its builder.
run api POST "$BAPI/builds" '{"apiVersion":"build.openshift.io/v1","kind":"Build","metadata":{"name":"lone"},
  "spec":{"source":{"type":"Dockerfile","dockerfile":"FROM scratch\n"},"strategy":{"type":"Docker",
  "dockerStrategy":{"env":[{"name":"FAKE_SLEEP","value":"60"}]}}}}'
expect_contains "lone Build created" '"name":"lone"' "$OUT"
wait_phase lone Running/ 15
for _ in $(seq 50); do [ -s "$FAKE_DIR/lone.pid" ] && break; sleep 0.1; done
run api DELETE "$BAPI/builds/lone"
for _ in $(seq 50); do kill -0 "$(cat "$FAKE_DIR/lone.pid")" 2>/dev/null || break; sleep 0.1; done
kill -0 "$(cat "$FAKE_DIR/lone.pid")" 2>/dev/null && fail "the builder of a deleted build still runs"
pass "deleting a running build kills its builder"

# ---- history pruning ----

mkbc pr Serial '{}' '{"successfulBuildsHistoryLimit":1,"failedBuildsHistoryLimit":1}'
for _ in 1 2 3; do start pr >/dev/null; done
for _ in 1 2; do start pr '[{"name":"FAKE_MODE","value":"fail"}]' >/dev/null; done
wait_phase pr-5 Failed/GenericBuildFailed 30
for _ in $(seq 50); do [ "$(builds_of pr)" = "pr-3 pr-5" ] && break; sleep 0.2; done
expect_eq "history: newest Complete and newest Failed kept" "pr-3 pr-5" "$(builds_of pr)"

# ---- a base that is not imported yet, ImageChange triggers ----

mkbc wt Serial '{}' '{"strategy":{"type":"Docker","dockerStrategy":{"from":{"kind":"ImageStreamTag","name":"later:v1"}}}}'
start wt >/dev/null
wait_phase wt-1 New/InvalidImageReference 15
pass "waits for its base image"
map later v1 "$D1"
wait_phase wt-1 Complete/ 30

map trig v1 "$D1"
mkbc ic Serial '{}' '{"triggers":[{"type":"ImageChange","imageChange":{}}],
  "strategy":{"type":"Docker","dockerStrategy":{"from":{"kind":"ImageStreamTag","name":"trig:v1"}}}}'
wait_phase ic-1 Complete/ 30
expect_eq "initial image triggers one build" "ic-1" "$(builds_of ic)"
map trig v1 "$D2"
wait_phase ic-2 Complete/ 30
expect_eq "ImageChange build uses the new image" "$REG/default/trig@$D2" \
    "$(bq ic-2 'o["spec"]["strategy"]["dockerStrategy"]["from"]["name"]')"
expect_eq "ImageChange cause" "Image change $REG/default/trig@$D2" \
    "$(bq ic-2 'o["spec"]["triggeredBy"][0]["message"] + " " + o["spec"]["triggeredBy"][0]["imageChangeBuild"]["imageID"]')"
expect_eq "lastTriggeredImageID recorded" "$REG/default/trig@$D2" \
    "$(api GET "$BAPI/buildconfigs/ic" | jq_py 'st["imageChangeTriggers"][0]["lastTriggeredImageID"]')"
map trig v1 "$D2"
run api PATCH "$IAPI/imagestreams/trig" '{"metadata":{"annotations":{"touched":"yes"}}}'
sleep 2
expect_eq "the same image again: no build" "ic-1 ic-2" "$(builds_of ic)"
run curl -sk -X PATCH -H "Authorization: Bearer $SW_TOKEN" -H 'Content-Type: application/merge-patch+json' \
    --data '{"metadata":{"annotations":{"openshift.io/build-config.paused":"true"}}}' "$SW_URL$BAPI/buildconfigs/ic"
map trig v1 "$D3"
sleep 2
expect_eq "paused config: no build" "ic-1 ic-2" "$(builds_of ic)"

# ---- restart: a Running build whose builder is gone ----

# running_builder NAME: starts a 60 s build of a new Serial config NAME; prints the fake
# builder's pid once it runs.
running_builder()
{
    mkbc "$1" Serial '{"FAKE_SLEEP":"60"}' >/dev/null
    start "$1" >/dev/null
    wait_phase "$1-1" Running/ 15 >/dev/null
    for _ in $(seq 50); do [ -s "$FAKE_DIR/$1-1.pid" ] && break; sleep 0.1; done
    cat "$FAKE_DIR/$1-1.pid"
}

RSPID=$(running_builder rs) && [ -n "$RSPID" ] || fail "rs-1 did not start its builder"
kill -TERM "$SW_PID"
for _ in $(seq 100); do kill -0 "$SW_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SW_PID" 2>/dev/null && fail "server did not stop within 10 s"
wait "$SW_PID"
expect_eq "server stopped cleanly with a build running" 0 "$?"
SW_PID=
kill -0 "$RSPID" 2>/dev/null && fail "the builder of rs-1 survived the controller"
pass "the builder died with the controller"
SW_CONTROLLERS=1 sw_start_server
wait_phase rs-1 Error/BuilderLost 15
expect_contains "BuilderLost message" "builder process disappeared" "$(bq rs-1 'st["message"]')"

# Without --image-registry an ImageStreamTag output cannot be resolved.
mkbc nr Serial '{}' '{"output":{"to":{"kind":"ImageStreamTag","name":"nowhere:v1"}}}'
start nr >/dev/null
wait_phase nr-1 Error/InvalidOutputReference 15
expect_contains "InvalidOutputReference names --image-registry" "--image-registry" "$(bq nr-1 'st["message"]')"

# ---- --max-running-builds: the host's cap on builders, whatever the run policies ----

kill -TERM "$SW_PID"
wait "$SW_PID"
SW_PID=
SW_CONTROLLERS=1 sw_start_server --max-running-builds 1
mkbc cap Parallel '{"FAKE_SLEEP":"6"}'
for _ in 1 2 3; do start cap >/dev/null; done
wait_phase cap-1 Running/ 15
sleep 1
expect_eq "past the cap, Parallel builds wait in New" "New/ New/" "$(phase cap-2) $(phase cap-3)"
wait_phase cap-1 Complete/ 20
wait_phase cap-2 Running/ 15
expect_eq "... one at a time" "New/" "$(phase cap-3)"
wait_phase cap-3 Complete/ 40

# ---- a server killed outright: its orphaned builder and directory go at the next start ----

ORPH=$(running_builder orph) && [ -n "$ORPH" ] || fail "orph-1 did not start its builder"
kill -KILL "$SW_PID"
wait "$SW_PID" 2>/dev/null
SW_PID=
kill -0 "$ORPH" 2>/dev/null || fail "the builder should outlive a SIGKILLed server (re-parented)"
[ -n "$(ls -d "$TMPDIR"/slipway-build-* 2>/dev/null)" ] || fail "no build directory left behind"
pass "a SIGKILLed server leaves its builder and directory behind"
# Directories planted in the shared tmp by someone else, each naming a gone owner and a
# process that looks like its builder: not ours (no mkdtemp suffix; mode 0755), so the sweep
# must neither kill those processes nor remove the directories.
NSINO=$(stat -L -c %i /proc/self/ns/pid)
PLANTED=()
VICTIMS=()
for plant in "slipway-build-" "slipway-build-AbC123"; do
    P=$TMPDIR/$plant
    mkdir -p "$P"
    if [[ $plant == slipway-build- ]]; then chmod 700 "$P"; else chmod 755 "$P"; fi
    python3 -c 'import time; time.sleep(300)' --token-file "$P/token" &
    VICTIMS+=($!)
    SW_BG_PIDS+=($!)
    printf '999999 %s\n' "$NSINO" >"$P/owner"
    printf '%s\n' "$!" >"$P/builder"
    PLANTED+=("$P")
done
SW_CONTROLLERS=1 sw_start_server --max-running-builds 1
for _ in $(seq 50); do kill -0 "$ORPH" 2>/dev/null || break; sleep 0.1; done
kill -0 "$ORPH" 2>/dev/null && fail "the orphaned builder still runs after the restart"
for i in 0 1; do
    kill -0 "${VICTIMS[$i]}" 2>/dev/null || fail "the sweep killed a process of ${PLANTED[$i]}"
    [ -f "${PLANTED[$i]}/owner" ] || fail "the sweep removed ${PLANTED[$i]}"
    kill "${VICTIMS[$i]}"
    rm -rf "${PLANTED[$i]}"
done
pass "directories planted in tmp (wrong name shape or mode) are left alone"
expect_eq "the restart killed it and removed its directory" "" \
    "$(ls -d "$TMPDIR"/slipway-build-* 2>/dev/null)"
wait_phase orph-1 Error/BuilderLost 15

# ---- the API server down when a build ends: the outcome is delivered once it is back ----
# `slipway controllers` runs apart from the server; the builder ends while the server is
# stopped. Its last log line and its phase must arrive after the restart (they used to be
# dropped after one failed request, and the sweep then called the build lost).
sw_stop_server
sw_restart_server
"$SLIPWAY" controllers --kubeconfig "$SW_DIR/admin.kubeconfig" --v=2 >"$SW_TMP/ctl.log" 2>&1 &
CTL=$!
SW_BG_PIDS+=("$CTL")
mkbc down Serial '{"FAKE_SLEEP":"3","FAKE_TAIL_LINES":"5000"}'
run api POST "$BAPI/buildconfigs/down/instantiate" '{"kind":"BuildRequest","apiVersion":"build.openshift.io/v1","metadata":{"name":"down"}}'
wait_phase down-1 Running/ 20
for _ in $(seq 50); do
    [[ $(api GET "$BAPI/builds/down-1/log") == *"down-1 says line 2"* ]] && break
    sleep 0.1
done
kill -TERM "$SW_PID"
wait "$SW_PID" 2>/dev/null
SW_PID=
sleep 5 # the builder ends (after 3 s) while the server is down
sw_restart_server
wait_phase down-1 Complete/ 30
DOWNLOG=$(api GET "$BAPI/builds/down-1/log")
expect_contains "its last log line arrived after the restart" "down-1 done" "$DOWNLOG"
expect_eq "... and the 5,000 lines (100 KB) it wrote while the server was down, in order" \
    "5000 $(seq -f 'down-1 tail line %05g' 0 4999 | sha256sum | cut -c1-16)" \
    "$(grep -c 'tail line' <<<"$DOWNLOG") $(grep 'tail line' <<<"$DOWNLOG" | sha256sum | cut -c1-16)"
kill -TERM "$CTL"
wait "$CTL" 2>/dev/null

echo "took $(($(date +%s) - START)) s"
sw_finish
