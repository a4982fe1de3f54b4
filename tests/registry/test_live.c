/* Live tests of src/registry/client against Debian's docker-registry, driven by
 * tests/registry/live_client.sh (ctest e2e/registry_client), which starts the registries, pushes
 * images with skopeo and passes their digests in SW_DIGEST_*. Without SW_REGISTRY set (a plain
 * unit-test run) every test is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/client.h"
#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (run tests/registry/live_client.sh)", name);
    return v;
}

static int setup(void **state)
{
    if (!getenv("SW_REGISTRY"))
        return 0; /* the tests skip themselves */
    sw_registry *r;
    sw_registry_opts o = {.timeout_ms = 10000};
    if (sw_registry_new(&r, &o) != 0)
        return -1;
    *state = r;
    return 0;
}

static int teardown(void **state)
{
    sw_registry_free(*state);
    return 0;
}

/* The registries speak plain http: every call is insecure (https ping, then http). */
static const sw_registry_call open_call = {.insecure = true};

static sw_ref ref_on(const char *host_env, const char *repo_tag)
{
    char s[512];
    sw_ref r;
    snprintf(s, sizeof(s), "%s/%s", env(host_env), repo_tag);
    if (sw_ref_parse(s, &r) != 0)
        fail_msg("%s: %s", s, sw_error_msg());
    return r;
}

#define SKIP_UNLESS_LIVE()                                                                         \
    do {                                                                                           \
        if (!getenv("SW_REGISTRY"))                                                                \
            skip();                                                                                \
    } while (0)

/* GET the manifest of ref, check its digest and parse it. */
static sw_manifest *fetch_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                                   const char *want_digest, const char *want_type)
{
    char *body = NULL, mt[128], digest[80];
    size_t len = 0;
    if (sw_registry_get_manifest(r, c, ref, &body, &len, mt, digest) != 0)
        fail_msg("GET %s: %s", ref->repository, sw_error_msg());
    assert_string_equal(digest, want_digest);
    assert_string_equal(mt, want_type);
    sw_manifest *m = NULL;
    if (sw_manifest_parse(mt, body, len, &m) != 0)
        fail_msg("parse %s: %s", ref->repository, sw_error_msg());
    assert_string_equal(sw_manifest_media_type(m), want_type);
    sw_free(body);
    return m;
}

/* Fetches and checks the config blob of image manifest m. */
static void check_config(sw_registry *r, const sw_ref *ref, const sw_manifest *m, const char *arch,
                         const char *tag_label)
{
    const sw_descriptor *cd = sw_manifest_config(m);
    assert_non_null(cd);
    char *blob = NULL;
    size_t len = 0;
    if (sw_registry_get_blob(r, &open_call, ref, cd->digest, SW_CONFIG_MAX_BYTES, &blob, &len))
        fail_msg("config blob: %s", sw_error_msg());
    assert_int_equal((int64_t)len, cd->size);
    sw_image_config *c = NULL;
    assert_int_equal(sw_image_config_parse(blob, len, &c), 0);
    assert_string_equal(sw_image_config_str(c, "architecture"), arch);
    assert_string_equal(sw_image_config_str(c, "os"), "linux");
    assert_string_equal(sw_image_config_str(c, "config.WorkingDir"), "/work");
    assert_non_null(sw_image_config_str(c, "created"));
    sw_strv keys = sw_image_config_label_keys(c), vals = sw_image_config_label_values(c);
    bool found = false;
    for (size_t i = 0; i < keys.n; i++)
        found |= strcmp(keys.v[i], "io.slipway.test") == 0 && strcmp(vals.v[i], tag_label) == 0;
    assert_true(found);
    sw_strv ep = sw_image_config_entrypoint(c);
    assert_int_equal(ep.n, 1);
    assert_string_equal(ep.v[0], "/bin/sh");
    assert_int_equal(sw_image_config_diff_ids(c).n, sw_manifest_layer_count(m));
    sw_image_config_free(c);
    sw_free(blob);
}

static void test_live__oci_manifest(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "demo/oci:v1");
    char digest[80], mt[128];
    int64_t size = 0;
    /* HEAD by tag gives the digest skopeo reports; the registry answers only because the
     * Accept list names the OCI type. */
    if (sw_registry_head_manifest(r, &open_call, &ref, digest, mt, &size) != 0)
        fail_msg("HEAD: %s", sw_error_msg());
    assert_string_equal(digest, env("SW_DIGEST_OCI"));
    assert_string_equal(mt, SW_MEDIA_OCI_MANIFEST);
    assert_true(size > 0);
    sw_manifest *m = fetch_manifest(r, &open_call, &ref, digest, SW_MEDIA_OCI_MANIFEST);
    assert_int_equal(sw_manifest_layer_count(m), 1);
    check_config(r, &ref, m, "amd64", "amd");
    sw_manifest_free(m);
    /* By digest: HEAD and GET verify against the ref's digest. */
    sw_ref by_digest = ref_on("SW_REGISTRY", "demo/oci");
    snprintf(by_digest.digest, sizeof(by_digest.digest), "%s", env("SW_DIGEST_OCI"));
    by_digest.tag[0] = '\0';
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &by_digest, digest, NULL, NULL), 0);
    m = fetch_manifest(r, &open_call, &by_digest, env("SW_DIGEST_OCI"), SW_MEDIA_OCI_MANIFEST);
    sw_manifest_free(m);
}

static void test_live__docker_schema2(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "demo/docker:v1");
    char digest[80], mt[128];
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &ref, digest, mt, NULL), 0);
    assert_string_equal(digest, env("SW_DIGEST_DOCKER"));
    assert_string_equal(mt, SW_MEDIA_DOCKER_MANIFEST);
    sw_manifest *m = fetch_manifest(r, &open_call, &ref, digest, SW_MEDIA_DOCKER_MANIFEST);
    check_config(r, &ref, m, "amd64", "amd");
    sw_manifest_free(m);
}

static void test_live__index(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "demo/multi:v1");
    char digest[80], mt[128];
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &ref, digest, mt, NULL), 0);
    assert_string_equal(digest, env("SW_DIGEST_INDEX"));
    assert_string_equal(mt, SW_MEDIA_OCI_INDEX);
    sw_manifest *idx = fetch_manifest(r, &open_call, &ref, digest, SW_MEDIA_OCI_INDEX);
    assert_int_equal(sw_manifest_entry_count(idx), 2);
    const sw_descriptor *amd = sw_manifest_find_platform(idx, "linux", "amd64", NULL);
    const sw_descriptor *arm = sw_manifest_find_platform(idx, "linux", "arm64", "v8");
    assert_non_null(amd);
    assert_non_null(arm);
    assert_string_equal(amd->digest, env("SW_DIGEST_OCI")); /* the same image as demo/oci */
    /* Each child by digest, verified, with its own config. */
    sw_ref child = ref;
    child.tag[0] = '\0';
    snprintf(child.digest, sizeof(child.digest), "%s", arm->digest);
    sw_manifest *m = fetch_manifest(r, &open_call, &child, arm->digest, SW_MEDIA_OCI_MANIFEST);
    check_config(r, &child, m, "arm64", "arm");
    sw_manifest_free(m);
    sw_manifest_free(idx);
}

static void test_live__tags(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "demo/oci");
    char **tags = NULL;
    size_t n = 0;
    if (sw_registry_list_tags(r, &open_call, &ref, 100, &tags, &n) != 0)
        fail_msg("tags: %s", sw_error_msg());
    assert_int_equal(n, 3);
    int seen = 0;
    for (size_t i = 0; i < n; i++)
        seen |= (strcmp(tags[i], "v1") == 0) | (strcmp(tags[i], "v2") == 0) << 1 |
                (strcmp(tags[i], "latest") == 0) << 2;
    assert_int_equal(seen, 7);
    sw_registry_tags_free(tags, n);
    ref = ref_on("SW_REGISTRY", "demo/nothing");
    assert_int_equal(sw_registry_list_tags(r, &open_call, &ref, 100, &tags, &n), SW_ENOTFOUND);
}

static void test_live__not_found(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "demo/oci:missing");
    char digest[80];
    char *body = NULL;
    size_t len;
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &ref, digest, NULL, NULL),
                     SW_ENOTFOUND);
    assert_int_equal(sw_registry_get_manifest(r, &open_call, &ref, &body, &len, NULL, NULL),
                     SW_ENOTFOUND);
    assert_non_null(strstr(sw_error_msg(), "MANIFEST_UNKNOWN"));
    ref = ref_on("SW_REGISTRY", "nobody/here:v1");
    assert_int_equal(sw_registry_get_manifest(r, &open_call, &ref, &body, &len, NULL, NULL),
                     SW_ENOTFOUND);
    assert_null(body);
}

static void test_live__registry_down(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY_DOWN", "demo/oci:v1");
    char digest[80];
    int64_t t0 = sw_time_mono_ms();
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &ref, digest, NULL, NULL),
                     SW_EUNAVAILABLE);
    int64_t took = sw_time_mono_ms() - t0;
    if (took > 3000)
        fail_msg("an unreachable registry took %lld ms to report", (long long)took);
    assert_non_null(strstr(sw_error_msg(), "unreachable after 4 attempts"));
}

static sw_creds *creds(const char *user, const char *pass)
{
    sw_creds *c;
    char json[512];
    sw_creds_new(&c);
    snprintf(json, sizeof(json),
             "{\"auths\":{\"http://%s\":{\"username\":\"%s\","
             "\"password\":\"%s\"}}}",
             env("SW_REGISTRY_AUTH"), user, pass);
    if (sw_creds_add_secret(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, json, strlen(json)) != 0)
        fail_msg("creds: %s", sw_error_msg());
    return c;
}

static void test_live__basic_auth(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    const char *user = env("SW_REGISTRY_USER"), *pass = env("SW_REGISTRY_PASS");
    sw_ref ref = ref_on("SW_REGISTRY_AUTH", "private/app:v1");
    char digest[80];
    /* Anonymous: 401, and the message says no credentials were found. */
    assert_int_equal(sw_registry_head_manifest(r, &open_call, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "no credentials"));
    sw_creds *good = creds(user, pass);
    sw_registry_call call = {.creds = good, .insecure = true};
    if (sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL) != 0)
        fail_msg("basic auth: %s", sw_error_msg());
    assert_string_equal(digest, env("SW_DIGEST_AUTH"));
    sw_manifest *m = fetch_manifest(r, &call, &ref, digest, SW_MEDIA_OCI_MANIFEST);
    sw_manifest_free(m);
    char **tags = NULL;
    size_t n = 0;
    assert_int_equal(sw_registry_list_tags(r, &call, &ref, 10, &tags, &n), 0);
    assert_int_equal(n, 1);
    sw_registry_tags_free(tags, n);
    /* Wrong password: 401 after authenticating, and neither secret in the message. */
    char wrong[128];
    snprintf(wrong, sizeof(wrong), "%s-wrong", pass);
    sw_creds *bad = creds(user, wrong);
    call.creds = bad;
    assert_int_equal(sw_registry_head_manifest(r, &call, &ref, digest, NULL, NULL),
                     SW_EUNAUTHORIZED);
    const char *msg = sw_error_msg();
    assert_non_null(strstr(msg, "rejected the credentials"));
    if (strstr(msg, user) || strstr(msg, pass) || strstr(msg, wrong))
        fail_msg("the message leaks a credential: %s", msg);
    sw_creds_free(good);
    sw_creds_free(bad);
}

/* Runs one insecure HEAD with debug logging sent to a file and returns the log (sw_malloc'd):
 * the only place the client says which HTTP version it spoke. */
static char *head_with_debug_log(sw_registry *r, const sw_ref *ref, char digest[80])
{
    char path[] = "/tmp/slipway-live-log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    int verbosity = sw_log_verbosity();
    sw_log_set_verbosity(SW_LOG_DEBUG);
    int rc = sw_registry_head_manifest(r, &open_call, ref, digest, NULL, NULL);
    sw_log_set_verbosity(verbosity);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    if (rc != 0)
        fail_msg("HEAD over TLS: %s", sw_error_msg());
    char *log = sw_calloc(1, 65536);
    ssize_t n = pread(fd, log, 65535, 0);
    assert_true(n > 0);
    close(fd);
    unlink(path);
    return log;
}

static void test_live__tls_http2(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY_TLS", "demo/oci:v1");
    char digest[80];
    /* Verification on (the default): a self-signed certificate is refused. */
    assert_int_equal(sw_registry_head_manifest(r, NULL, &ref, digest, NULL, NULL), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "TLS verification"));
    /* Insecure: the https ping succeeds, so https without verification, over HTTP/2. */
    char *log = head_with_debug_log(r, &ref, digest);
    assert_string_equal(digest, env("SW_DIGEST_OCI"));
    if (!strstr(log, "HEAD https://") || !strstr(log, "HTTP/2"))
        fail_msg("expected an HTTP/2 HEAD over https, log:\n%s", log);
    sw_free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live__oci_manifest), cmocka_unit_test(test_live__docker_schema2),
        cmocka_unit_test(test_live__index),        cmocka_unit_test(test_live__tags),
        cmocka_unit_test(test_live__not_found),    cmocka_unit_test(test_live__registry_down),
        cmocka_unit_test(test_live__basic_auth),   cmocka_unit_test(test_live__tls_http2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
