/* Live tests of src/registry/push against Debian's docker-registry, driven by
 * tests/registry/live_push.sh (ctest e2e/registry_push), which starts an open and an
 * htpasswd registry, runs this binary, then checks every image listed in $SW_PUSH_RESULTS with
 * skopeo inspect (digest), skopeo copy (every blob verified) and umoci unpack (layers match the
 * config's diff_ids, files present). Without SW_REGISTRY every test is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/manifest.h"
#include "registry/push.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_PIECE (64 * 1024)
#define BIG_FILE (3 * 1024 * 1024)
#define SMALL_FILE (700 * 1024 + 123)
#define MEDIA_LAYER_TAR "application/vnd.oci.image.layer.v1.tar"
#define MEDIA_CONFIG "application/vnd.oci.image.config.v1+json"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (run tests/registry/live_push.sh)", name);
    return v;
}

#define SKIP_UNLESS_LIVE()                                                                         \
    do {                                                                                           \
        if (!getenv("SW_REGISTRY"))                                                                \
            skip();                                                                                \
    } while (0)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != 0)                                                                              \
            fail_msg("%s: %d %s", #call, rc_, sw_error_msg());                                     \
    } while (0)

/* --insecure-registry 127.0.0.1: every port of it, plain http after the https ping. */
static int setup(void **state)
{
    if (!getenv("SW_REGISTRY"))
        return 0;
    static const char *const insecure[] = {"127.0.0.1", NULL};
    sw_registry_opts o = {.insecure_hosts = insecure, .timeout_ms = 10000};
    sw_registry *r;
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

static sw_ref ref_on(const char *host_env, const char *repo_tag)
{
    char s[512];
    sw_ref r;
    snprintf(s, sizeof(s), "%s/%s", env(host_env), repo_tag);
    if (sw_ref_parse(s, &r) != 0)
        fail_msg("%s: %s", s, sw_error_msg());
    return r;
}

/* Appends "REF DIGEST EXPECTED_FILE SIZE [auth]" for the script to verify with skopeo/umoci. */
static void record(const char *ref, const char *digest, const char *file, size_t size, bool auth)
{
    FILE *f = fopen(env("SW_PUSH_RESULTS"), "a");
    if (!f)
        fail_msg("cannot open SW_PUSH_RESULTS");
    fprintf(f, "%s %s %s %zu%s\n", ref, digest, file, size, auth ? " auth" : "");
    fclose(f);
}

static void digest_of(const void *data, size_t len, char out[80])
{
    unsigned char md[32];
    unsigned int n;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    sw_hex(md, 32, out + 7);
}

/* ---- a one-file uncompressed tar layer ---- */

static void octal(char *field, size_t width, uint64_t v)
{
    snprintf(field, width, "%0*llo", (int)width - 1, (unsigned long long)v);
}

/* A ustar archive holding path with size bytes of pseudo-random content (seeded). */
static unsigned char *make_tar(const char *path, size_t size, unsigned seed, size_t *len)
{
    size_t padded = (size + 511) / 512 * 512;
    *len = 512 + padded + 1024;
    unsigned char *t = sw_calloc(1, *len);
    char *h = (char *)t;
    sw_strlcpy(h, path, 100);
    octal(h + 100, 8, 0644);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    octal(h + 124, 12, size);
    octal(h + 136, 12, 0);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += t[i];
    snprintf(h + 148, 8, "%06o", sum);
    uint32_t x = 2463534242u ^ seed;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        t[512 + i] = (unsigned char)(x >> 7);
    }
    return t;
}

/* Streams data in 64 KiB writes through an upload session with the given chunk size,
 * hashing as it goes: the digest is known only at the end, as for a layer being compressed. */
static void stream_blob(sw_registry *r, const sw_ref *repo, const sw_registry_call *c,
                        const unsigned char *data, size_t len, size_t chunk, char digest[80])
{
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, c, repo, &u));
    if (chunk)
        sw_registry_upload_set_chunk_size(u, chunk);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    for (size_t off = 0; off < len; off += WRITE_PIECE) {
        size_t n = len - off < WRITE_PIECE ? len - off : WRITE_PIECE;
        EVP_DigestUpdate(md, data + off, n);
        CHECK(sw_registry_upload_write(u, data + off, n));
    }
    unsigned char bin[32];
    unsigned int n;
    EVP_DigestFinal_ex(md, bin, &n);
    EVP_MD_CTX_free(md);
    memcpy(digest, "sha256:", 7);
    sw_hex(bin, 32, digest + 7);
    CHECK(sw_registry_upload_commit(u, digest));
}

/* ---- an image ---- */

typedef struct image {
    unsigned char *layer[2];
    size_t layer_len[2];
    char layer_digest[2][80];
    char *config;
    char config_digest[80];
    char *manifest;
    char manifest_digest[80];
} image;

static char *make_config(const image *im)
{
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_printf(&b,
                  "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":"
                  "\"1970-01-01T00:00:00Z\",\"config\":{\"Env\":[\"A=1\"],\"WorkingDir\":"
                  "\"/data\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\",\"%s\"]}}",
                  im->layer_digest[0], im->layer_digest[1]);
    return sw_buf_detach(&b, NULL);
}

static char *make_manifest(const image *im, const char *missing)
{
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_printf(&b,
                  "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{\"mediaType\":\"%s\","
                  "\"digest\":\"%s\",\"size\":%zu},\"layers\":[",
                  SW_MEDIA_OCI_MANIFEST, MEDIA_CONFIG, im->config_digest, strlen(im->config));
    for (int i = 0; i < 2; i++)
        sw_buf_printf(&b, "%s{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu}", i ? "," : "",
                      MEDIA_LAYER_TAR, i == 1 && missing ? missing : im->layer_digest[i],
                      im->layer_len[i]);
    sw_buf_puts(&b, "]}");
    return sw_buf_detach(&b, NULL);
}

static void image_make(image *im, unsigned seed)
{
    memset(im, 0, sizeof(*im));
    im->layer[0] = make_tar("data/big.bin", BIG_FILE, seed, &im->layer_len[0]);
    im->layer[1] = make_tar("data/small.bin", SMALL_FILE, seed + 1, &im->layer_len[1]);
    for (int i = 0; i < 2; i++)
        digest_of(im->layer[i], im->layer_len[i], im->layer_digest[i]);
    im->config = make_config(im);
    digest_of(im->config, strlen(im->config), im->config_digest);
    im->manifest = make_manifest(im, NULL);
    digest_of(im->manifest, strlen(im->manifest), im->manifest_digest);
}

static void image_free(image *im)
{
    sw_free(im->layer[0]);
    sw_free(im->layer[1]);
    sw_free(im->config);
    sw_free(im->manifest);
}

/* Layers streamed (the first in 1 MiB PATCH chunks, the second as one PUT), the config one-shot,
 * then the manifest by tag; returns the manifest digest the registry confirmed. */
static void push_image(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                       const image *im, char digest[80])
{
    char d[80];
    stream_blob(r, ref, c, im->layer[0], im->layer_len[0], 1024 * 1024, d);
    assert_string_equal(d, im->layer_digest[0]);
    stream_blob(r, ref, c, im->layer[1], im->layer_len[1], 0, d);
    assert_string_equal(d, im->layer_digest[1]);
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, c, ref, im->config_digest, im->config, strlen(im->config), NULL,
                                &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    CHECK(sw_registry_put_manifest(r, c, ref, SW_MEDIA_OCI_MANIFEST, im->manifest,
                                   strlen(im->manifest), digest));
    assert_string_equal(digest, im->manifest_digest);
}

static void test_push_live__image_existing_and_mount(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    image im;
    image_make(&im, 1);
    sw_ref ref = ref_on("SW_REGISTRY", "push/app:v1");
    char digest[80], head[80], s[600];
    sw_push_stats st0, st1;
    sw_registry_push_stats(r, &st0);
    push_image(r, NULL, &ref, &im, digest);
    sw_registry_push_stats(r, &st1);
    assert_int_equal(st1.upload_sessions - st0.upload_sessions, 3);
    assert_true(st1.bytes - st0.bytes == im.layer_len[0] + im.layer_len[1] + strlen(im.config));
    CHECK(sw_registry_head_manifest(r, NULL, &ref, head, NULL, NULL));
    assert_string_equal(head, digest);
    sw_ref_format(&ref, s, sizeof(s));
    record(s, digest, "data/big.bin", BIG_FILE, false);

    /* Again: HEAD finds every blob, nothing is uploaded. */
    sw_blob_pushed how = 0;
    for (int i = 0; i < 2; i++) {
        CHECK(sw_registry_push_blob(r, NULL, &ref, im.layer_digest[i], im.layer[i], im.layer_len[i],
                                    NULL, &how));
        assert_int_equal(how, SW_BLOB_EXISTED);
    }
    CHECK(sw_registry_push_blob(r, NULL, &ref, im.config_digest, im.config, strlen(im.config), NULL,
                                &how));
    assert_int_equal(how, SW_BLOB_EXISTED);
    sw_registry_push_stats(r, &st0);
    assert_int_equal(st0.upload_sessions, st1.upload_sessions);
    assert_int_equal(st0.bytes, st1.bytes);
    assert_int_equal(st0.blob_heads - st1.blob_heads, 3);

    /* Mount everything into a second repository: no upload, and the registry accepts a
     * manifest there (it checks the blobs are linked into that repository). */
    sw_ref other = ref_on("SW_REGISTRY", "push/mounted:v1");
    const char *digests[] = {im.layer_digest[0], im.layer_digest[1], im.config_digest};
    const void *datas[] = {im.layer[0], im.layer[1], im.config};
    size_t lens[] = {im.layer_len[0], im.layer_len[1], strlen(im.config)};
    for (int i = 0; i < 3; i++) {
        bool exists = true;
        CHECK(sw_registry_blob_exists(r, NULL, &other, digests[i], &exists, NULL));
        assert_false(exists);
        CHECK(sw_registry_push_blob(r, NULL, &other, digests[i], datas[i], lens[i], "push/app",
                                    &how));
        assert_int_equal(how, SW_BLOB_MOUNTED);
        CHECK(sw_registry_blob_exists(r, NULL, &other, digests[i], &exists, NULL));
        assert_true(exists);
    }
    sw_registry_push_stats(r, &st1);
    assert_int_equal(st1.upload_sessions, st0.upload_sessions);
    assert_int_equal(st1.bytes, st0.bytes);
    assert_int_equal(st1.mounts - st0.mounts, 3);
    CHECK(sw_registry_put_manifest(r, NULL, &other, SW_MEDIA_OCI_MANIFEST, im.manifest,
                                   strlen(im.manifest), digest));
    sw_ref_format(&other, s, sizeof(s));
    record(s, digest, "data/big.bin", BIG_FILE, false);

    /* The same manifest by digest. */
    sw_ref bydigest = ref_on("SW_REGISTRY", "push/mounted");
    bydigest.tag[0] = '\0';
    sw_strlcpy(bydigest.digest, im.manifest_digest, sizeof(bydigest.digest));
    CHECK(sw_registry_put_manifest(r, NULL, &bydigest, SW_MEDIA_OCI_MANIFEST, im.manifest,
                                   strlen(im.manifest), NULL));
    image_free(&im);
}

static void test_push_live__registry_refusals(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref ref = ref_on("SW_REGISTRY", "push/refused:v1");
    image im;
    image_make(&im, 11);
    /* Wrong digest at commit: the registry's DIGEST_INVALID. */
    char wrong[80];
    digest_of("not this", 8, wrong);
    sw_blob_upload *u = NULL;
    CHECK(sw_registry_upload_start(r, NULL, &ref, &u));
    sw_registry_upload_set_chunk_size(u, 256 * 1024);
    for (size_t off = 0; off < im.layer_len[1]; off += WRITE_PIECE) {
        size_t n = im.layer_len[1] - off < WRITE_PIECE ? im.layer_len[1] - off : WRITE_PIECE;
        CHECK(sw_registry_upload_write(u, im.layer[1] + off, n));
    }
    assert_int_equal(sw_registry_upload_commit(u, wrong), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "DIGEST_INVALID"));
    bool exists = true;
    CHECK(sw_registry_blob_exists(r, NULL, &ref, wrong, &exists, NULL));
    assert_false(exists);
    CHECK(sw_registry_blob_exists(r, NULL, &ref, im.layer_digest[1], &exists, NULL));
    assert_false(exists);

    /* A manifest naming a blob the repository lacks: MANIFEST_BLOB_UNKNOWN. */
    CHECK(sw_registry_push_blob(r, NULL, &ref, im.config_digest, im.config, strlen(im.config), NULL,
                                NULL));
    CHECK(sw_registry_push_blob(r, NULL, &ref, im.layer_digest[0], im.layer[0], im.layer_len[0],
                                NULL, NULL));
    char *m = make_manifest(&im, wrong);
    assert_int_equal(
        sw_registry_put_manifest(r, NULL, &ref, SW_MEDIA_OCI_MANIFEST, m, strlen(m), NULL),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "MANIFEST_BLOB_UNKNOWN"));
    sw_free(m);
    /* An aborted session leaves nothing behind, and a mount from a repository without the
     * blob falls back to an upload. */
    CHECK(sw_registry_upload_start(r, NULL, &ref, &u));
    CHECK(sw_registry_upload_write(u, "abc", 3));
    sw_registry_upload_abort(u);
    sw_blob_pushed how = 0;
    CHECK(sw_registry_push_blob(r, NULL, &ref, im.layer_digest[1], im.layer[1], im.layer_len[1],
                                "push/nothing-here", &how));
    assert_int_equal(how, SW_BLOB_UPLOADED);
    image_free(&im);
}

typedef struct worker {
    sw_registry *r;
    unsigned seed;
    int rc;
    char msg[256];
} worker;

static void *push_worker(void *p)
{
    worker *w = p;
    size_t len = 0;
    unsigned char *t = make_tar("data/par.bin", 512 * 1024, w->seed, &len);
    char digest[80];
    digest_of(t, len, digest);
    sw_ref ref = ref_on("SW_REGISTRY", "push/parallel");
    sw_blob_pushed how = 0;
    w->rc = sw_registry_push_blob(w->r, NULL, &ref, digest, t, len, NULL, &how);
    if (w->rc == 0 && how != SW_BLOB_UPLOADED)
        w->rc = -100;
    sw_strlcpy(w->msg, sw_error_msg(), sizeof(w->msg));
    sw_free(t);
    return NULL;
}

/* Four blobs pushed at once through one sw_registry (the builder pushes layers in parallel). */
static void test_push_live__parallel(void **state)
{
    SKIP_UNLESS_LIVE();
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.r = *state, .seed = 100 + (unsigned)i};
        pthread_create(&th[i], NULL, push_worker, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        if (w[i].rc != 0)
            fail_msg("worker %d: %d %s", i, w[i].rc, w[i].msg);
    }
}

static sw_creds *creds_for(const char *host, const char *user, const char *pass)
{
    sw_creds *c;
    char json[512];
    CHECK(sw_creds_new(&c));
    snprintf(json, sizeof(json), "{\"auths\":{\"%s\":{\"username\":\"%s\",\"password\":\"%s\"}}}",
             host, user, pass);
    CHECK(sw_creds_add_secret(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, json, strlen(json)));
    return c;
}

static void test_push_live__basic_auth(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    const char *host = env("SW_REGISTRY_AUTH");
    sw_ref ref = ref_on("SW_REGISTRY_AUTH", "private/pushed:v1");
    image im;
    image_make(&im, 21);
    /* Without credentials, and with wrong ones: refused, nothing secret in the message. */
    sw_blob_pushed how = 0;
    assert_int_equal(sw_registry_push_blob(r, NULL, &ref, im.config_digest, im.config,
                                           strlen(im.config), NULL, &how),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "no credentials"));
    sw_creds *bad = creds_for(host, "mallory", "hunter2-wrong");
    sw_registry_call badc = {.creds = bad};
    assert_int_equal(sw_registry_push_blob(r, &badc, &ref, im.config_digest, im.config,
                                           strlen(im.config), NULL, &how),
                     SW_EUNAUTHORIZED);
    assert_non_null(strstr(sw_error_msg(), "rejected the credentials"));
    assert_null(strstr(sw_error_msg(), "hunter2"));
    sw_blob_upload *u = NULL;
    assert_int_equal(sw_registry_upload_start(r, &badc, &ref, &u), SW_EUNAUTHORIZED);
    assert_int_equal(sw_registry_put_manifest(r, &badc, &ref, SW_MEDIA_OCI_MANIFEST, im.manifest,
                                              strlen(im.manifest), NULL),
                     SW_EUNAUTHORIZED);
    sw_creds_free(bad);
    /* The right credentials push the whole image. */
    sw_creds *good = creds_for(host, env("SW_REGISTRY_USER"), env("SW_REGISTRY_PASS"));
    sw_registry_call goodc = {.creds = good};
    char digest[80], s[600];
    push_image(r, &goodc, &ref, &im, digest);
    sw_ref_format(&ref, s, sizeof(s));
    record(s, digest, "data/small.bin", SMALL_FILE, true);
    sw_creds_free(good);
    image_free(&im);
}

/* sw_registry_copy_blob: an image pushed to the open registry is copied blob by blob into the
 * htpasswd one (streamed, never held whole), its manifest put there, and the script verifies it
 * with skopeo and umoci like the others. A size that does not match the blob, or a blob the
 * source lacks, fails and leaves nothing at the destination. */
static void test_push_live__copy_between_registries(void **state)
{
    SKIP_UNLESS_LIVE();
    sw_registry *r = *state;
    sw_ref src = ref_on("SW_REGISTRY", "copysrc/app:v1");
    sw_ref dst = ref_on("SW_REGISTRY_AUTH", "copied/app:v1");
    sw_ref bad = ref_on("SW_REGISTRY_AUTH", "copied/broken:v1");
    image im;
    image_make(&im, 31);
    char digest[80], s[600];
    push_image(r, NULL, &src, &im, digest);
    sw_creds *good =
        creds_for(env("SW_REGISTRY_AUTH"), env("SW_REGISTRY_USER"), env("SW_REGISTRY_PASS"));
    sw_registry_call goodc = {.creds = good};
    for (int i = 0; i < 2; i++)
        CHECK(sw_registry_copy_blob(r, NULL, &src, &goodc, &dst, im.layer_digest[i],
                                    im.layer_len[i]));
    CHECK(sw_registry_copy_blob(r, NULL, &src, &goodc, &dst, im.config_digest, strlen(im.config)));
    CHECK(sw_registry_put_manifest(r, &goodc, &dst, SW_MEDIA_OCI_MANIFEST, im.manifest,
                                   strlen(im.manifest), digest));
    assert_string_equal(digest, im.manifest_digest);
    sw_ref_format(&dst, s, sizeof(s));
    record(s, digest, "data/big.bin", BIG_FILE, true);

    assert_int_equal(
        sw_registry_copy_blob(r, NULL, &src, &goodc, &bad, im.layer_digest[0], im.layer_len[0] - 1),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "longer than"));
    assert_int_equal(
        sw_registry_copy_blob(r, NULL, &src, &goodc, &bad, im.layer_digest[1], im.layer_len[1] + 1),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "arrived, not"));
    char absent[80];
    digest_of("not pushed anywhere", 19, absent);
    assert_int_equal(sw_registry_copy_blob(r, NULL, &src, &goodc, &bad, absent, 19), SW_ENOTFOUND);
    for (int i = 0; i < 2; i++) {
        bool exists = true;
        CHECK(sw_registry_blob_exists(r, &goodc, &bad, im.layer_digest[i], &exists, NULL));
        assert_false(exists);
    }
    sw_creds_free(good);
    image_free(&im);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_push_live__image_existing_and_mount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_live__registry_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_live__parallel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_live__basic_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_push_live__copy_between_registries, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
