# builder.sh: running `slipway builder` by hand, as the build controller would (sourced by
# test_builder.sh and test_buildah.sh, never run). The caller sets NS, REG (the registry given
# as --insecure-registry), WORK (an empty --workdir) and BUILDER_FLAGS (more flags, an array).
# After `builder`, OUT holds
# the builder's output (also in $SW_TMP/builder.log) and RC its exit status; the work directory
# must be empty again and the output free of sanitizer reports.
# shellcheck shell=bash

# api METHOD PATH [curl args...]: the build.openshift.io API of namespace NS, admin token.
api()
{
    local method=$1 path=$2
    shift 2
    curl -sk --max-time 60 -X "$method" -H "Authorization: Bearer $SW_TOKEN" "$@" \
        "$SW_URL/apis/build.openshift.io/v1/namespaces/$NS/$path"
}

# builder BUILD [ENV=VALUE...]: mints a build token and runs the builder with ENV.
builder()
{
    local b=$1
    shift
    api POST "builds/$b/token" | sw_json 'at("token")' >"$SW_TMP/token" || fail "token for $b"
    env "$@" "$SLIPWAY" builder --server "$SW_URL" --ca "$SW_DIR/tls.crt" \
        --token-file "$SW_TMP/token" --namespace "$NS" --build "$b" \
        --insecure-registry "$REG" --workdir "$WORK" ${BUILDER_FLAGS[@]+"${BUILDER_FLAGS[@]}"} \
        >"$SW_TMP/builder.log" 2>&1
    RC=$?
    OUT=$(cat "$SW_TMP/builder.log")
    [ -z "$(ls -A "$WORK")" ] || fail "the builder left files in its workdir: $(ls -A "$WORK")"
    grep -En "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error" "$SW_TMP/builder.log" >&2 &&
        fail "sanitizer report in the builder's output"
}

# builder_ok WHAT BUILD [ENV=VALUE...]: the builder must exit 0.
builder_ok()
{
    local what=$1
    shift
    builder "$@"
    [ "$RC" -eq 0 ] || fail "$what: builder exited $RC:
$OUT"
    pass "$what: builder exit 0"
}
