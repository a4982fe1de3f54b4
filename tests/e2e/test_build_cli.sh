#!/usr/bin/env bash
# test_build_cli.sh: slipway's build verbs (new-build, start-build, logs, cancel-build; issue 4
# part 5) against `slipway server` WITHOUT controllers: the test itself plays the build
# controller and builder (phases through builds/<n>/details, log lines through POST
# builds/<n>/log). Covers: --help of every verb names every flag; usage errors exit 2, a missing
# BuildConfig or build exits 1; new-build from a directory (Binary), an inline Dockerfile, a
# Dockerfile file with --to-docker and --push-secret, a git URL#ref, a local git repository and
# --binary over it (BuildConfig fields read back with kubectl jsonpath, the output stream
# created); start-build with --env/--build-arg/--no-cache/--commit in the Build spec, bc/NAME,
# --from-build (clone); --from-dir uploads a deterministic tar (fetched back with a build token,
# listed and extracted and diffed with the directory; the same directory twice, after a touch,
# gives the same sha256), a symlink out of the directory is refused before any build exists,
# --from-file keeps the file and sets spec.source.binary.asFile, --from-archive keeps the bytes;
# --follow and --wait end when the build finishes (exit 1 with the reason when it failed); logs
# build/NAME, --tail, bc/NAME (the latest), -f ending on Complete; cancel-build NAME, bc/NAME,
# --state, and a finished build refused. Every process and directory is removed on every path.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

START=$(date +%s)
sw() { "$SLIPWAY" "$@"; }

# jp KIND NAME JSONPATH: one field through kubectl.
jp() { kc get "$1" "$2" -o "jsonpath=$3" 2>&1; }

API=/apis/build.openshift.io/v1/namespaces/default

# api METHOD PATH [CURL ARGS...]: a request with the admin token; the body on stdout.
api()
{
    local m=$1 p=$2
    shift 2
    curl -sSk --max-time 20 -X "$m" -H "Authorization: Bearer $SW_TOKEN" "$@" "$SW_URL$p"
}

# phase BUILD PHASE [REASON MESSAGE]: what a builder reports through builds/<n>/details.
phase()
{
    local body
    body=$(printf '{"status":{"phase":"%s","reason":"%s","message":"%s"}}' "$2" "${3:-}" "${4:-}")
    [ "$(api PUT "$API/builds/$1/details" -H 'Content-Type: application/json' -d "$body" \
        -o /dev/null -w '%{http_code}')" = 200 ] || fail "details of $1 -> $2"
}

# logline BUILD TEXT: appends TEXT and a newline to the build's log.
logline()
{
    local code
    code=$(printf '%s\n' "$2" | api POST "$API/builds/$1/log" -H 'Content-Type: text/plain' \
        --data-binary @- -o /dev/null -w '%{http_code}')
    [ "$code" = 200 ] || [ "$code" = 201 ] || fail "append to the log of $1 (HTTP $code)"
}

# source_of BUILD FILE: the uploaded binary, fetched as the builder does (with a build token).
source_of()
{
    local tok
    tok=$(api POST "$API/builds/$1/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])') ||
        fail "build token for $1"
    curl -sSfk --max-time 20 -H "Authorization: Bearer $tok" -o "$2" "$SW_URL$API/builds/$1/source" ||
        fail "GET builds/$1/source with the build token"
}

# wait_exit PID SECONDS WHAT: the background command ends within SECONDS; its status in RC.
wait_exit()
{
    for _ in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$1" 2>/dev/null && fail "$3: still running after $2 s"
    wait "$1"
    RC=$?
    pass "$3"
}

check_help()
{
    local cmd flag
    declare -A flags=(
        [new-build]="--name -D, --dockerfile --dockerfile-file --to --to-docker --push-secret --no-output --strategy --binary --context-dir"
        [start-build]="--from-dir --from-file --from-archive --from-build -F, --follow -w, --wait -e, --env --build-arg --commit --no-cache"
        [logs]="-f, --follow --tail --version"
        [cancel-build]="--state")
    for cmd in new-build start-build logs cancel-build; do
        expect_ok "$cmd --help exits 0" sw "$cmd" --help
        for flag in ${flags[$cmd]} --kubeconfig "-n, --namespace" "-h, --help"; do
            expect_contains "$cmd --help names $flag" "$flag" "$OUT"
        done
    done
    expect_ok "slipway --help" sw --help
    for cmd in new-build start-build logs cancel-build; do
        expect_match "slipway --help lists $cmd" "^  $cmd " "$OUT"
    done
}

check_usage()
{
    expect_exit "start-build without a name: exit 2" 2 sw start-build
    expect_contains "... says what is missing" "error: you must give the name of a BuildConfig" "$OUT"
    expect_exit "start-build --bogus: exit 2" 2 sw start-build x --bogus
    expect_contains "... names the flag" "unknown flag: --bogus" "$OUT"
    expect_exit "two --from-* flags: exit 2" 2 sw start-build x --from-dir=. --from-file=f
    expect_exit "--env without '=': exit 2" 2 sw start-build x --env=NOVALUE
    expect_contains "... names the bad pair" '"NOVALUE" is not NAME=VALUE' "$OUT"
    expect_exit "--env with a binary upload: exit 2" 2 sw start-build x --from-dir=. -e A=1
    expect_exit "new-build --push-secret that is no Secret name: exit 2" 2 \
        sw new-build --name x --to x:latest --push-secret=Bad_Secret .
    expect_contains "it names the rule" "lowercase RFC 1123 subdomain" "$OUT"
    expect_exit "a name and --from-build: exit 2" 2 sw start-build x --from-build=x-1
    expect_exit "logs without an argument: exit 2" 2 sw logs
    expect_exit "logs pod/x: exit 2" 2 sw logs pod/x
    expect_contains "... says what logs shows" "expected build/NAME or bc/NAME" "$OUT"
    expect_exit "logs --tail=abc: exit 2" 2 sw logs build/x --tail=abc
    expect_exit "cancel-build --state=done: exit 2" 2 sw cancel-build x --state=done
    expect_exit "cancel-build without builds: exit 2" 2 sw cancel-build
    expect_exit "new-build without a source: exit 2" 2 sw new-build --name=x
    expect_contains "... says what a source is" "you must give a source" "$OUT"
    expect_exit "new-build --strategy=source without a builder image: exit 2" 2 \
        sw new-build --binary --name=x --strategy=source
    expect_contains "... says which flag names it" "--image=REF or --image-stream" "$OUT"
    expect_exit "new-build --strategy=custom: exit 2" 2 sw new-build --binary --name=x --strategy=custom
    expect_exit "new-build --to and --to-docker: exit 2" 2 sw new-build --binary --name=x --to=a:b --to-docker=r/x
    expect_exit "start-build of a missing BuildConfig: exit 1" 1 sw start-build nope
    expect_contains "... with the server's NotFound" 'buildconfigs.build.openshift.io "nope" not found' "$OUT"
    expect_exit "bundled short flags (-Fw, as pflag takes them) parse: exit 1 on the missing BC" 1 \
        sw start-build nope -Fw
    expect_exit "an unknown flag in a bundle: exit 2" 2 sw start-build nope -Fx
    expect_contains "... names it" "unknown shorthand flag: 'x' in -Fx" "$OUT"
    expect_exit "logs bc/nope: exit 1" 1 sw logs bc/nope
    expect_exit "cancel-build of a missing build: exit 1" 1 sw cancel-build nope-1
    expect_contains "... with the server's NotFound" '"nope-1" not found' "$OUT"
}

# ---- new-build ----

make_context()
{
    CTX=$SW_TMP/ctx
    mkdir -p "$CTX/sub/deeper" "$CTX/empty"
    printf 'hello\n' >"$CTX/a.txt"
    printf '#!/bin/sh\necho hi\n' >"$CTX/sub/run.sh"
    chmod 755 "$CTX/sub/run.sh"
    chmod 600 "$CTX/a.txt"
    head -c 300000 /dev/urandom >"$CTX/sub/deeper/blob.bin"
    printf 'FROM scratch\nCOPY . /app\n' >"$CTX/Dockerfile"
    ln -s a.txt "$CTX/link-in"
    ln -s ../a.txt "$CTX/sub/link-up"
}

check_new_build()
{
    make_context
    expect_ok "new-build DIR" sw new-build "$CTX" --name=bin
    expect_contains "... prints the created BuildConfig" 'buildconfig.build.openshift.io "bin" created' "$OUT"
    expect_contains "... and the created stream" 'imagestream.image.openshift.io "bin" created' "$OUT"
    expect_contains "... and how to start it" "slipway start-build bin --from-dir=" "$OUT"
    expect_eq "DIR: Binary source" Binary "$(jp bc bin '{.spec.source.type}')"
    expect_eq "DIR: Docker strategy" Docker "$(jp bc bin '{.spec.strategy.type}')"
    expect_eq "DIR: output bin:latest" "ImageStreamTag bin:latest" "$(jp bc bin '{.spec.output.to.kind} {.spec.output.to.name}')"
    expect_eq "DIR: label build=bin" bin "$(jp bc bin '{.metadata.labels.build}')"
    expect_eq "DIR: webhooks, no ConfigChange" "GitHub Generic" "$(jp bc bin '{.spec.triggers[*].type}')"
    expect_eq "DIR: the stream exists" bin "$(jp is bin '{.metadata.name}')"

    expect_ok "new-build --dockerfile --to" sw new-build --name=df --dockerfile=$'FROM scratch\nLABEL a=b' --to=other:v1
    expect_eq "--dockerfile: Dockerfile source" Dockerfile "$(jp bc df '{.spec.source.type}')"
    expect_eq "--dockerfile: the text" $'FROM scratch\nLABEL a=b' "$(jp bc df '{.spec.source.dockerfile}')"
    expect_eq "--to: output other:v1" "other:v1" "$(jp bc df '{.spec.output.to.name}')"
    expect_eq "--to: the stream other was created" other "$(jp is other '{.metadata.name}')"
    expect_eq "--dockerfile: ConfigChange trigger" "GitHub Generic ConfigChange" "$(jp bc df '{.spec.triggers[*].type}')"

    expect_ok "new-build --dockerfile-file --to-docker --push-secret" \
        sw new-build --name=dff --dockerfile-file="$CTX/Dockerfile" --to-docker=127.0.0.1:5000/x/dff:1 --push-secret=regcred
    expect_eq "--dockerfile-file: the file's text" "$(cat "$CTX/Dockerfile")" "$(jp bc dff '{.spec.source.dockerfile}')"
    expect_eq "--to-docker: DockerImage output" "DockerImage 127.0.0.1:5000/x/dff:1" "$(jp bc dff '{.spec.output.to.kind} {.spec.output.to.name}')"
    expect_eq "--push-secret" regcred "$(jp bc dff '{.spec.output.pushSecret.name}')"
    expect_not_contains "--to-docker creates no stream" "imagestream" "$OUT"
    run kc get is dff
    [ "$RC" -ne 0 ] || fail "--to-docker: a stream dff exists"

    expect_ok "new-build GIT-URL#ref (name derived)" sw new-build https://git.example.com/org/My_App.git#v2
    expect_eq "git URL: Git source, uri and ref" "Git https://git.example.com/org/My_App.git v2" \
        "$(jp bc my-app '{.spec.source.type} {.spec.source.git.uri} {.spec.source.git.ref}')"

    git init -q "$SW_TMP/repo" || fail "git init"
    expect_ok "new-build LOCAL-REPO" sw new-build "$SW_TMP/repo" --name=local --context-dir=src
    expect_eq "local repo: Git source file://" "Git file://$(cd "$SW_TMP/repo" && pwd -P) src" \
        "$(jp bc local '{.spec.source.type} {.spec.source.git.uri} {.spec.source.contextDir}')"
    expect_ok "new-build LOCAL-REPO --binary" sw new-build "$SW_TMP/repo" --binary --name=localbin --to=bin:other
    expect_eq "--binary over a repository: Binary" Binary "$(jp bc localbin '{.spec.source.type}')"
    expect_contains "an existing stream is reused" 'imagestream.image.openshift.io "bin" already exists' "$OUT"

    expect_exit "new-build of an existing name: exit 1" 1 sw new-build "$CTX" --name=bin
    expect_contains "... says it exists" 'buildconfigs.build.openshift.io "bin" already exists' "$OUT"
}

# ---- start-build ----

check_start_plain()
{
    expect_ok "start-build with env, build args, no-cache, commit" \
        sw start-build df --env=A=1 -e B=two=2 --build-arg=V=3 --no-cache --commit=abc123
    expect_eq "... prints the build" "build.build.openshift.io/df-1 started" "$OUT"
    expect_eq "df-1: env" "A=1 B=two=2" "$(jp build df-1 '{range .spec.strategy.dockerStrategy.env[*]}{.name}={.value} {end}' | sed 's/ $//')"
    expect_eq "df-1: build args" "V=3" "$(jp build df-1 '{range .spec.strategy.dockerStrategy.buildArgs[*]}{.name}={.value}{end}')"
    expect_eq "df-1: noCache" true "$(jp build df-1 '{.spec.strategy.dockerStrategy.noCache}')"
    expect_eq "df-1: revision commit" abc123 "$(jp build df-1 '{.spec.revision.git.commit}')"
    expect_eq "df-1: manually triggered" "Manually triggered" "$(jp build df-1 '{.spec.triggeredBy[0].message}')"
    expect_ok "start-build bc/df" sw start-build bc/df
    expect_eq "... is df-2" "build.build.openshift.io/df-2 started" "$OUT"
    expect_eq "df-2: no env" "" "$(jp build df-2 '{.spec.strategy.dockerStrategy.env}')"
    expect_ok "start-build --from-build=df-1" sw start-build --from-build=df-1
    expect_eq "... is df-3" "build.build.openshift.io/df-3 started" "$OUT"
    expect_eq "df-3: the clone keeps df-1's env" "A=1 B=two=2" "$(jp build df-3 '{range .spec.strategy.dockerStrategy.env[*]}{.name}={.value} {end}' | sed 's/ $//')"
    expect_eq "bc df: lastVersion 3" 3 "$(jp bc df '{.status.lastVersion}')"
}

check_from_dir()
{
    local got=$SW_TMP/got
    expect_ok "start-build --from-dir" sw start-build bin --from-dir="$CTX"
    expect_contains "... prints the build" "build.build.openshift.io/bin-1 started" "$OUT"
    expect_contains "... says what it uploads" "Uploading directory \"$CTX\" as binary input" "$OUT"
    expect_match "... and how much (plain lines, not a TTY)" "^Uploading finished: [0-9]+ bytes sent$" "$OUT"
    source_of bin-1 "$SW_TMP/up1.tar"
    run tar -tvf "$SW_TMP/up1.tar"
    expect_eq "the tar lists the directory, sorted" \
        "Dockerfile a.txt empty/ link-in sub/ sub/deeper/ sub/deeper/blob.bin sub/link-up sub/run.sh" \
        "$(printf '%s\n' "$OUT" | awk '{print $6}' | tr '\n' ' ' | sed 's/ $//')"
    expect_match "entries are root-owned, mtime 0" "^-rw------- 0/0 +6 1970-01-01 00:00 a.txt$" "$OUT"
    expect_match "the executable keeps its mode" "^-rwxr-xr-x 0/0 .* sub/run.sh$" "$OUT"
    expect_match "the symlink stays a symlink" "^lrwxrwxrwx 0/0 .* sub/link-up -> ../a.txt$" "$OUT"
    mkdir -p "$got"
    tar -xf "$SW_TMP/up1.tar" -C "$got" || fail "extract the upload"
    diff -r --no-dereference "$CTX" "$got" >/dev/null || fail "the extracted upload differs from the directory: $(diff -r --no-dereference "$CTX" "$got" 2>&1 | head -5)"
    pass "the extracted upload equals the directory"
    touch -d '2001-02-03' "$CTX/a.txt" "$CTX/sub"
    expect_ok "the same directory again (touched)" sw start-build bin --from-dir="$CTX"
    source_of bin-2 "$SW_TMP/up2.tar"
    expect_eq "byte-identical uploads (sha256)" "$(sha256sum <"$SW_TMP/up1.tar")" "$(sha256sum <"$SW_TMP/up2.tar")"

    mkdir -p "$SW_TMP/bad/d"
    ln -s ../../outside "$SW_TMP/bad/d/escape"
    expect_exit "a symlink out of the directory: exit 1" 1 sw start-build bin --from-dir="$SW_TMP/bad"
    expect_contains "... names it" "the symlink d/escape points outside the directory" "$OUT"
    ln -sf /etc/passwd "$SW_TMP/bad/d/escape"
    expect_exit "an absolute symlink: exit 1" 1 sw start-build bin --from-dir="$SW_TMP/bad"
    expect_eq "... and no build was started" 2 "$(jp bc bin '{.status.lastVersion}')"
    expect_exit "--from-dir of a missing directory: exit 1" 1 sw start-build bin --from-dir="$SW_TMP/none"
    expect_exit "--from-dir on a Dockerfile config: exit 1" 1 sw start-build df --from-dir="$CTX"
    expect_contains "... says why" "has no Binary source" "$OUT"
}

check_from_file()
{
    expect_ok "start-build --from-file" sw start-build bin --from-file="$CTX/sub/deeper/blob.bin" --commit=f00d
    expect_contains "... is bin-3" "build.build.openshift.io/bin-3 started" "$OUT"
    expect_eq "bin-3: asFile" blob.bin "$(jp build bin-3 '{.spec.source.binary.asFile}')"
    expect_eq "bin-3: revision commit from --commit" f00d "$(jp build bin-3 '{.spec.revision.git.commit}')"
    source_of bin-3 "$SW_TMP/up3"
    cmp -s "$SW_TMP/up3" "$CTX/sub/deeper/blob.bin" || fail "the uploaded file differs"
    pass "the file is kept as it is"
    tar -czf "$SW_TMP/ctx.tgz" -C "$CTX" . || fail "tar czf"
    expect_ok "start-build --from-archive" sw start-build bc/bin --from-archive="$SW_TMP/ctx.tgz"
    expect_contains "... is bin-4" "build.build.openshift.io/bin-4 started" "$OUT"
    expect_eq "bin-4: no asFile" "" "$(jp build bin-4 '{.spec.source.binary.asFile}')"
    source_of bin-4 "$SW_TMP/up4"
    cmp -s "$SW_TMP/up4" "$SW_TMP/ctx.tgz" || fail "the uploaded archive differs"
    pass "the archive is kept byte for byte"
}

# start_bg OUT BUILD ARGS...: `sw start-build ARGS...` in the background (output in OUT, pid in
# PID) until the build BUILD it starts exists.
start_bg()
{
    local out=$1 build=$2
    shift 2
    sw start-build "$@" >"$out" 2>&1 &
    PID=$!
    SW_BG_PIDS+=("$PID")
    for _ in $(seq 50); do
        [ "$(jp build "$build" '{.metadata.name}')" = "$build" ] && break
        sleep 0.1
    done
}

check_follow_wait()
{
    local out=$SW_TMP/follow.out
    start_bg "$out" df-4 df --follow
    phase df-4 Running
    logline df-4 "step 1/2 : FROM scratch"
    logline df-4 "step 2/2 : LABEL a=b"
    phase df-4 Complete
    wait_exit "$PID" 15 "start-build --follow ends when the build completes"
    expect_eq "... exit 0" 0 "$RC"
    expect_eq "... printed the start and the log" "build.build.openshift.io/df-4 started
step 1/2 : FROM scratch
step 2/2 : LABEL a=b" "$(cat "$out")"

    start_bg "$out" df-5 df --wait
    phase df-5 Running
    phase df-5 Failed DockerBuildFailed "RUN is not supported (line 3)"
    wait_exit "$PID" 10 "start-build --wait ends when the build fails"
    expect_eq "... exit 1" 1 "$RC"
    expect_contains "... with the phase, reason and message" \
        "error: build default/df-5 ended as Failed (DockerBuildFailed): RUN is not supported (line 3)" "$(cat "$out")"

    start_bg "$out" df-6 df -w
    phase df-6 Complete
    wait_exit "$PID" 10 "start-build -w ends when the build completes"
    expect_eq "... exit 0" 0 "$RC"
}

# ---- logs ----

check_logs()
{
    local pid out=$SW_TMP/logs.out
    phase df-1 Running
    logline df-1 "first line"
    logline df-1 "second line"
    expect_ok "logs build/df-1" sw logs build/df-1
    expect_eq "... prints the log" "first line
second line" "$OUT"
    expect_ok "logs --tail=1" sw logs df-1 --tail=1
    expect_eq "... prints the last line" "second line" "$OUT"
    phase df-2 Running
    logline df-2 "not the latest"
    logline df-6 "the latest build"
    expect_ok "logs bc/df" sw logs bc/df
    expect_eq "... is the latest build's (df-6)" "the latest build" "$OUT"
    expect_ok "logs bc/df --version=2" sw logs bc/df --version=2
    expect_eq "... is df-2's" "not the latest" "$OUT"

    sw logs -f build/df-1 >"$out" 2>&1 &
    pid=$!
    SW_BG_PIDS+=("$pid")
    sleep 0.5
    logline df-1 "third line"
    sleep 0.3
    kill -0 "$pid" 2>/dev/null || fail "logs -f ended before the build finished"
    pass "logs -f keeps following a running build"
    phase df-1 Complete
    wait_exit "$PID" 10 "logs -f ends when the build completes"
    expect_eq "... exit 0" 0 "$RC"
    expect_eq "... with every line" "first line
second line
third line" "$(cat "$out")"
    expect_exit "logs of a missing build: exit 1" 1 sw logs build/df-99
    expect_contains "... not found" '"df-99" not found' "$OUT"
}

# ---- cancel-build ----

check_cancel()
{
    expect_ok "cancel-build df-2" sw cancel-build df-2
    expect_eq "... prints it" "build.build.openshift.io/df-2 marked for cancellation, waiting to be cancelled" "$OUT"
    expect_eq "df-2: status.cancelled" true "$(jp build df-2 '{.status.cancelled}')"
    expect_exit "cancel-build of a finished build: exit 1" 1 sw cancel-build build/df-1
    expect_contains "... says so" "build default/df-1 is already Complete" "$OUT"
    phase bin-2 Running
    expect_ok "cancel-build bc/bin --state=running" sw cancel-build bc/bin --state=running
    expect_eq "... only the running one" "build.build.openshift.io/bin-2 marked for cancellation, waiting to be cancelled" "$OUT"
    expect_eq "bin-1 untouched" "" "$(jp build bin-1 '{.status.cancelled}')"
    expect_ok "cancel-build bc/bin" sw cancel-build bc/bin
    expect_eq "... every unfinished build" "bin-1 bin-2 bin-3 bin-4" \
        "$(printf '%s\n' "$OUT" | sed -n 's|^build.build.openshift.io/\([^ ]*\) marked.*|\1|p' | sort | tr '\n' ' ' | sed 's/ $//')"
    expect_eq "bin-4: status.cancelled" true "$(jp build bin-4 '{.status.cancelled}')"
    expect_exit "cancel-build bc/nope: exit 1" 1 sw cancel-build bc/nope
}

# --wait watches the build: deleting it ends the wait with an error that says so.
check_wait_deleted()
{
    local out=$SW_TMP/wait-deleted.out
    start_bg "$out" df-7 df --wait
    phase df-7 Running
    [ "$(api DELETE "$API/builds/df-7" -o /dev/null -w '%{http_code}')" = 200 ] ||
        fail "delete df-7"
    wait_exit "$PID" 10 "start-build --wait ends when the build is deleted"
    expect_eq "... exit 1" 1 "$RC"
    expect_contains "... and says so" "error: build default/df-7 was deleted before it finished" \
        "$(cat "$out")"
}

# --wait on a build that sits unchanged while the store is compacted past its resourceVersion:
# after the server restarts, the watch resumes from a fresh list's revision. (It re-watched
# from the build's own, answered 410 at once, and looped: thousands of requests a second.)
check_wait_compacted()
{
    local out=$SW_TMP/wait-compacted.out n n2 compacting=(--compact-interval 1 --compact-keep 5 --v=2)
    sw_restart_server "${compacting[@]}"
    start_bg "$out" df-8 df --wait
    n=$(grep -c "compacted the store to revision" "$SW_LOG")
    for n2 in $(seq 30); do kc create configmap "wc$n2" --from-literal=a=b >/dev/null; done
    # compacted past df-8's resourceVersion: a compaction logged after the 30 writes
    for _ in $(seq 300); do
        [ "$(grep -c "compacted the store to revision" "$SW_LOG")" -gt "$n" ] && break
        sleep 0.1
    done
    sleep 1.5 # and one more pass, so the compaction that counts ran after the last write
    sw_restart_server "${compacting[@]}"
    echo "--- restarted for check_wait_compacted" >>"$SW_LOG"
    sleep 3
    n=$(sed -n '/^--- restarted for check_wait_compacted/,$p' "$SW_LOG" | grep -c '/builds')
    [ "$n" -lt 40 ] || fail "start-build --wait sent $n build requests in 3 s after the restart"
    pass "start-build --wait resumes without spinning after compaction ($n build requests)"
    phase df-8 Complete
    wait_exit "$PID" 15 "... and ends when the build completes"
    expect_eq "... exit 0" 0 "$RC"
}

# --from-dir leaves .git out at any depth (oc's default --exclude): not build input, and its
# config may hold credentials the server would keep.
check_git_excluded()
{
    local dir=$SW_TMP/withgit
    mkdir -p "$dir/.git" "$dir/sub/.git"
    printf 'FROM scratch\nCOPY . /\n' >"$dir/Dockerfile"
    echo hi >"$dir/sub/a.txt"
    printf '[remote "origin"]\n\turl = https://user:SECRET@example.com/x.git\n' >"$dir/.git/config"
    echo ref >"$dir/sub/.git/HEAD"
    expect_ok "new-build gitx" sw new-build --binary --name=gitx --no-output
    expect_ok "start-build gitx --from-dir" sw start-build gitx --from-dir="$dir"
    source_of gitx-1 "$SW_TMP/gitx.tar"
    expect_eq "the upload has no .git" "Dockerfile sub/ sub/a.txt" \
        "$(tar -tf "$SW_TMP/gitx.tar" | tr '\n' ' ' | sed 's/ $//')"
}

# new-build refuses a bad name before anything is created (usage, exit 2), and a BuildConfig
# the server refuses takes back the output stream new-build had just created.
check_new_build_failures()
{
    expect_exit "new-build --name=Bad_Name: exit 2" 2 sw new-build --binary --name=Bad_Name --to=nbx:latest
    expect_contains "... says why" "--name: a lowercase RFC 1123 label" "$OUT"
    expect_exit "new-build with a refused contextDir: exit 1" 1 \
        sw new-build --binary --name=nb1 --to=left1:latest --context-dir=../x
    expect_contains "... the server's reason" "spec.source.contextDir" "$OUT"
    expect_eq "... and no stream left behind" "" \
        "$(kc get is -o jsonpath='{range .items[*]}{.metadata.name} {end}' | tr ' ' '\n' | grep -x 'left1\|nbx')"
}

# Local inputs that never end or never open: a clear error, not a hang.
check_odd_files()
{
    expect_exit "new-build --dockerfile-file /dev/zero: exit 1" 1 \
        timeout 20 "$SLIPWAY" new-build --name zero --dockerfile-file /dev/zero
    expect_contains "... says it is too large" "larger than" "$OUT"
    mkfifo "$SW_TMP/fifo"
    expect_exit "start-build --from-file on a FIFO: exit 1" 1 \
        timeout 20 "$SLIPWAY" start-build bin --from-file "$SW_TMP/fifo"
    expect_contains "... says it is not a regular file" "not a regular file" "$OUT"
    # past the server's upload limit: refused from the headers, before the body is sent
    truncate -s 2100M "$SW_TMP/huge.bin"
    local t0=$SECONDS
    expect_exit "start-build --from-file of 2.1 GB: exit 1" 1 \
        timeout 60 "$SLIPWAY" start-build bin --from-file "$SW_TMP/huge.bin"
    expect_contains "... names the upload limit" "the upload is larger than the 2147483648-byte limit" "$OUT"
    [ $((SECONDS - t0)) -lt 20 ] || fail "the oversized upload took $((SECONDS - t0)) s to be refused"
    rm -f "$SW_TMP/huge.bin"
}

# No extra server flags: the controllers stay off, the test plays them.
# shellcheck disable=SC2119
sw_start_server
check_help
check_usage
check_new_build
check_start_plain
check_from_dir
check_from_file
check_follow_wait
check_logs
check_cancel
check_wait_deleted
check_odd_files
check_new_build_failures
check_git_excluded
check_wait_compacted
sw_finish
echo "took $(($(date +%s) - START)) s"
