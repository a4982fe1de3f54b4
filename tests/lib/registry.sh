# registry.sh: helpers for tests that need a real registry (sourced by bash scripts, never run).
# reg_init DIR picks a work directory (the caller owns and removes it); reg_start runs Debian's
# docker-registry on a given 127.0.0.1 port with a generated config (storage under DIR, delete
# enabled, optional htpasswd/token auth, TLS and notification endpoints); reg_stop stops one.
# Images are built with umoci in one OCI layout under DIR (distinct content per call, so digests
# differ) and pushed with skopeo. Every process started here is recorded in REG_PIDS; the
# caller's EXIT trap calls reg_cleanup (it keeps $?), before removing DIR. reg_config,
# reg_unpack (skopeo copy + umoci unpack) and reg_layer_entries read pushed images back.
# shellcheck shell=bash disable=SC2034 # REG_* variables are read by the sourcing scripts

REG_TMP=
REG_PIDS=()
REG_SEQ=0
declare -gA REG_PID=() # registry name -> pid
declare -gA REG_URL=() # registry name -> scheme://127.0.0.1:port
declare -gA REG_TOOL_PORT=() # reg_start_tool name -> port

# reg__die MESSAGE: the caller's fail() when it has one, else a message and exit 1.
reg__die()
{
    if declare -F fail >/dev/null; then
        fail "$*"
    fi
    echo "FAIL [registry.sh]: $*" >&2
    exit 1
}

# reg_require: every tool the helpers use is on PATH.
reg_require()
{
    local tool
    for tool in docker-registry skopeo umoci htpasswd curl python3 openssl; do
        command -v "$tool" >/dev/null 2>&1 ||
            reg__die "$tool is not installed (run scripts/install-deps)"
    done
}

# reg_init DIR: the work directory for configs, storage, logs and the OCI layout.
reg_init()
{
    REG_TMP=$1
    mkdir -p "$REG_TMP" || reg__die "cannot create $REG_TMP"
}

# reg_cleanup: stops every process the helpers started; returns the status it was called with,
# so `trap 'reg_cleanup; other_cleanup' EXIT` still sees the script's exit status.
reg_cleanup()
{
    local rc=$?
    local p
    for p in "${REG_PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${REG_PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    REG_PIDS=()
    return "$rc"
}

# reg_track PID: records a process the caller started, for reg_cleanup.
reg_track()
{
    REG_PIDS+=("$1")
}

# reg_free_ports N: N distinct free 127.0.0.1 ports (all bound at once, then released), picked
# below the kernel's ephemeral range (32768-60999), so no outgoing connection of any process
# can take one between its release here and the registry's bind.
reg_free_ports()
{
    python3 -c 'import random, socket, sys
socks, ports = [], set()
while len(socks) < int(sys.argv[1]):
    p = random.randint(20000, 32767)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    if p in ports:
        s.close()
        continue
    ports.add(p)
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# reg_htpasswd USER PASSWORD: writes a bcrypt htpasswd file and prints its path.
reg_htpasswd()
{
    local file=$REG_TMP/htpasswd-$1
    htpasswd -Bbn "$1" "$2" >"$file" 2>/dev/null || reg__die "htpasswd $1"
    echo "$file"
}

# reg_selfsigned NAME: a self-signed certificate for 127.0.0.1; prints "CERT KEY".
reg_selfsigned()
{
    local cert=$REG_TMP/$1-cert.pem key=$REG_TMP/$1-key.pem
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$key" -out "$cert" -days 1 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 ||
        reg__die "openssl req for $1"
    echo "$cert $key"
}

# reg_start NAME PORT [OPTIONS...]: writes $REG_TMP/NAME.yml and starts docker-registry on
# 127.0.0.1:PORT, waiting until /v2/ answers. Sets REG_PID[NAME] and REG_URL[NAME]. Options:
#   --htpasswd FILE                      basic auth (see reg_htpasswd)
#   --token REALM SERVICE ISSUER BUNDLE  Docker token auth
#   --tls CERT KEY                       serve HTTPS
#   --notify URL BEARER                  a notifications endpoint with Authorization: Bearer
#   --store NAME                         share the storage of another registry (default NAME)
#   --ca FILE                            SSL_CERT_FILE for the registry (to trust FILE's certs)
#   --debug ADDR                         debug server on ADDR with Prometheus metrics at /metrics
# Starting a stopped NAME again reuses its storage.
reg_start()
{
    local name=$1 port=$2 store=$1 scheme=http ca='' auth='' tls='' notify='' debug=''
    shift 2
    while [ $# -gt 0 ]; do
        case $1 in
        --htpasswd)
            auth="auth:
  htpasswd:
    realm: slipway-test
    path: $2"
            shift 2 ;;
        --token)
            auth="auth:
  token:
    realm: $2
    service: $3
    issuer: $4
    rootcertbundle: $5"
            shift 5 ;;
        --tls)
            tls="  tls:
    certificate: $2
    key: $3"
            scheme=https
            shift 3 ;;
        --notify)
            notify="notifications:
  endpoints:
    - name: slipway
      url: $2
      headers:
        Authorization: [Bearer $3]
      timeout: 2s
      threshold: 10
      backoff: 1s"
            shift 3 ;;
        --store) store=$2; shift 2 ;;
        --ca) ca=$2; shift 2 ;;
        --debug)
            debug="  debug:
    addr: $2
    prometheus:
      enabled: true
      path: /metrics"
            shift 2 ;;
        *) reg__die "reg_start: unknown option $1" ;;
        esac
    done
    cat >"$REG_TMP/$name.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REG_TMP/$store-store
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$tls
$debug
$auth
$notify
EOF
    if [ -n "$ca" ]; then
        SSL_CERT_FILE=$ca docker-registry serve "$REG_TMP/$name.yml" >>"$REG_TMP/$name.log" 2>&1 &
    else
        docker-registry serve "$REG_TMP/$name.yml" >>"$REG_TMP/$name.log" 2>&1 &
    fi
    local pid=$!
    REG_PIDS+=("$pid")
    REG_PID[$name]=$pid
    REG_URL[$name]=$scheme://127.0.0.1:$port
    local i code
    for i in $(seq 1 100); do
        code=$(curl -sk --max-time 2 -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/")
        case $code in 200 | 401) return 0 ;; esac
        kill -0 "$pid" 2>/dev/null || reg__die "registry $name exited: $(tail -n 5 "$REG_TMP/$name.log")"
        sleep 0.05
    done
    reg__die "registry $name did not come up on port $port"
}

# reg_start_tool NAME SCRIPT [ARGS...]: starts `python3 SCRIPT --port-file F ARGS...` (a helper
# such as tests/e2e/tools/faultproxy.py or tokenserver.py that picks a free port and writes it
# to F), waits for the port and sets REG_PID[NAME] and REG_TOOL_PORT[NAME]. Log: $REG_TMP/NAME.log.
reg_start_tool()
{
    local name=$1 script=$2 portfile=$REG_TMP/$1.port
    shift 2
    rm -f "$portfile"
    python3 "$script" --port-file "$portfile" "$@" >>"$REG_TMP/$name.log" 2>&1 &
    local pid=$! i
    REG_PIDS+=("$pid")
    REG_PID[$name]=$pid
    for i in $(seq 1 200); do
        if [ -s "$portfile" ]; then
            REG_TOOL_PORT[$name]=$(cat "$portfile")
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || reg__die "$name exited: $(tail -n 5 "$REG_TMP/$name.log")"
        sleep 0.05
    done
    reg__die "$name did not write its port"
}

# reg_stop NAME: stops registry NAME and waits for it to exit.
reg_stop()
{
    local pid=${REG_PID[$1]:-}
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    REG_PID[$1]=
}

# reg_alive: every registry reg_start started and reg_stop did not stop is still running.
reg_alive()
{
    local name
    for name in "${!REG_PID[@]}"; do
        [ -z "${REG_PID[$name]}" ] && continue
        kill -0 "${REG_PID[$name]}" 2>/dev/null || return 1
    done
    return 0
}

# reg_logs: the tail of every registry log on stderr (for failure reports).
reg_logs()
{
    local f
    for f in "$REG_TMP"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f ----" >&2
        grep -v 'blob unknown' "$f" | tail -n 12 >&2
    done
}

reg__layout()
{
    if [ ! -f "$REG_TMP/oci/index.json" ]; then
        umoci init --layout "$REG_TMP/oci" || reg__die "umoci init"
    fi
}

# reg_build_image TAG ARCH [FILE]: a one-layer image tagged TAG in the layout $REG_TMP/oci, with
# a config (os linux, ARCH, a label, env, entrypoint, working dir). Every call writes different
# file content, so two builds never share a digest.
reg_build_image()
{
    local tag=$1 arch=$2 file=${3:-hello.txt} img
    reg__layout
    REG_SEQ=$((REG_SEQ + 1))
    img=$REG_TMP/oci:$tag
    mkdir -p "$REG_TMP/files"
    echo "slipway test $tag $arch #$REG_SEQ $$ $RANDOM$RANDOM" >"$REG_TMP/files/$file"
    umoci rm --image "$img" >/dev/null 2>&1
    umoci new --image "$img" || reg__die "umoci new $tag"
    umoci insert --image "$img" "$REG_TMP/files/$file" "/$file" >/dev/null ||
        reg__die "umoci insert $tag"
    umoci config --image "$img" --os linux --architecture "$arch" \
        --config.label "io.slipway.test=$tag" --config.env "A=B" \
        --config.entrypoint /bin/sh --config.workingdir /work || reg__die "umoci config $tag"
}

# reg_build_index TAG AMD_TAG ARM_TAG: an OCI image index tagged TAG of two images already in the
# layout (linux/amd64 and linux/arm64 v8); the index blob goes into blobs/sha256.
reg_build_index()
{
    reg__layout
    python3 - "$REG_TMP/oci" "$@" <<'PY' || reg__die "could not add index $1 to the layout"
import hashlib, json, os, sys
layout, tag, amd_tag, arm_tag = sys.argv[1:5]
with open(os.path.join(layout, "index.json")) as f:
    top = json.load(f)
def by_name(name):
    for m in top["manifests"]:
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == name:
            return {k: m[k] for k in ("mediaType", "digest", "size")}
    sys.exit("no manifest named " + name)
amd = dict(by_name(amd_tag), platform={"architecture": "amd64", "os": "linux"})
arm = dict(by_name(arm_tag), platform={"architecture": "arm64", "os": "linux", "variant": "v8"})
blob = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": [amd, arm]}, separators=(",", ":")).encode()
digest = hashlib.sha256(blob).hexdigest()
with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
    f.write(blob)
top["manifests"] = [m for m in top["manifests"]
                    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != tag]
top["manifests"].append({"mediaType": "application/vnd.oci.image.index.v1+json",
                         "digest": "sha256:" + digest, "size": len(blob),
                         "annotations": {"org.opencontainers.image.ref.name": tag}})
with open(os.path.join(layout, "index.json"), "w") as f:
    json.dump(top, f)
PY
}

# reg_push SRC_TAG DEST [skopeo copy options...]: copies layout tag SRC_TAG to docker://DEST
# (plain HTTP or unverified TLS). Pass --format v2s2 for Docker schema 2, --all for an index,
# --dest-creds USER:PASS for an auth registry.
reg_push()
{
    local src=$1 dest=$2
    shift 2
    skopeo copy -q --dest-tls-verify=false "$@" "oci:$REG_TMP/oci:$src" "docker://$dest" \
        >"$REG_TMP/skopeo.out" 2>&1 ||
        reg__die "skopeo copy $src -> $dest: $(cat "$REG_TMP/skopeo.out")"
}

# reg_push_new TAG ARCH DEST [skopeo copy options...]: builds a fresh image and pushes it.
reg_push_new()
{
    local tag=$1 arch=$2 dest=$3
    shift 3
    reg_build_image "$tag" "$arch"
    reg_push "$tag" "$dest" "$@"
}

# reg_push_index TAG DEST [skopeo copy options...]: a fresh amd64+arm64 pair and an index of
# them, pushed with all its children.
reg_push_index()
{
    local tag=$1 dest=$2
    shift 2
    reg_build_image "$tag-amd" amd64 amd.txt
    reg_build_image "$tag-arm" arm64 arm.txt
    reg_build_index "$tag" "$tag-amd" "$tag-arm"
    reg_push "$tag" "$dest" --all "$@"
}

# reg_digest DEST [skopeo inspect options...]: the digest skopeo reports for a pushed tag.
reg_digest()
{
    local dest=$1
    shift
    skopeo inspect --tls-verify=false "$@" "docker://$dest" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Digest"])'
}

# reg_raw DEST [skopeo inspect options...]: the raw manifest of a pushed tag.
reg_raw()
{
    local dest=$1
    shift
    skopeo inspect --tls-verify=false --raw "$@" "docker://$dest"
}

# reg_config DEST [skopeo inspect options...]: the image config (JSON) of a pushed tag.
reg_config()
{
    local dest=$1
    shift
    skopeo inspect --config --tls-verify=false "$@" "docker://$dest"
}

# reg_unpack DEST DIR: copies a pushed image to the OCI layout DIR.oci (skopeo verifies every
# blob) and unpacks it rootless into DIR (the files under DIR/rootfs).
reg_unpack()
{
    rm -rf "$2" "$2.oci"
    skopeo copy -q --src-tls-verify=false "docker://$1" "oci:$2.oci:t" >"$REG_TMP/skopeo.out" 2>&1 ||
        reg__die "skopeo copy $1: $(cat "$REG_TMP/skopeo.out")"
    umoci unpack --rootless --image "$2.oci:t" "$2" >"$REG_TMP/umoci.out" 2>&1 ||
        reg__die "umoci unpack $1: $(cat "$REG_TMP/umoci.out")"
}

# reg_layer_entries LAYOUT: the tar headers of every layer of the layout's first image, one line
# each: "TYPE PATH MODE UID:GID[ ->TARGET]" (TYPE f, d, l symlink, h hard link; MODE octal),
# layers in manifest order. Shows what was recorded, which a rootless unpack cannot (owners).
reg_layer_entries()
{
    python3 - "$1" <<'PY' || reg__die "cannot list the layers of $1"
import io, json, os, subprocess, sys, tarfile
layout = sys.argv[1]
def blob(digest):
    algo, hexd = digest.split(":", 1)
    with open(os.path.join(layout, "blobs", algo, hexd), "rb") as f:
        return f.read()
index = json.load(open(os.path.join(layout, "index.json")))
manifest = json.loads(blob(index["manifests"][0]["digest"]))
for layer in manifest["layers"]:
    data = blob(layer["digest"])
    if layer["mediaType"].endswith("+zstd"):
        data = subprocess.run(["zstd", "-dc"], input=data, stdout=subprocess.PIPE, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for e in tar:
            kind = "d" if e.isdir() else "l" if e.issym() else "h" if e.islnk() else "f"
            target = " ->" + e.linkname if e.linkname else ""
            print("%s %s %04o %d:%d%s" % (kind, e.name, e.mode, e.uid, e.gid, target))
PY
}

# reg_script NAME: the usual setup of a script built on these helpers: checks the tools, makes
# TMP (a fresh temp dir, removed on exit together with every process started here), defines
# fail (prints "FAIL [NAME]: ...", the registry logs, exits 1) and calls reg_init "$TMP".
reg_script()
{
    REG_SCRIPT=$1
    reg_require
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/slipway-$REG_SCRIPT.XXXXXX")
    trap reg__script_exit EXIT
    trap 'exit 130' INT TERM
    # defined here, not at load time, so scripts with their own fail keep it
    # shellcheck disable=SC2317 # called by the sourcing script
    fail()
    {
        echo "FAIL [$REG_SCRIPT]: $*" >&2
        reg_logs
        exit 1
    }
    reg_init "$TMP"
}

reg__script_exit()
{
    local rc=$?
    reg_cleanup
    rm -rf "$TMP"
    exit "$rc"
}
