/* Unit tests for src/image/layer: diff_id and digest equal sha256 computed separately (with
 * OpenSSL directly) over the tar and the blob, sizes, the sink and the file get the same
 * bytes, thread count and compression choices, failures remove the partial file, and
 * SOURCE_DATE_EPOCH parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/layer.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char g_dir[] = "/tmp/sw-layer-test-XXXXXX";
static char g_out[600];

static int setup(void **state)
{
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_out, sizeof(g_out), "%s/blob", g_dir);
    return 0;
}

static int teardown(void **state)
{
    unlink(g_out);
    return rmdir(g_dir);
}

static int collect(void *payload, const void *data, size_t len)
{
    return sw_buf_put(payload, data, len);
}

static void openssl_digest(const void *p, size_t n, char out[SW_SHA256_DIGEST_BUF])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(p, n, md);
    memcpy(out, "sha256:", 7);
    sw_hex(md, sizeof(md), out + 7);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    sw_buf b = SW_BUF_INIT(64 << 20);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sw_buf_put(&b, chunk, n);
    fclose(f);
    return sw_buf_detach(&b, len);
}

/* A tar of a few MiB of in-memory files. */
static sw_tar *sample_tar(void)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    size_t n = 600 * 1024;
    unsigned char *data = sw_malloc(n);
    for (int f = 0; f < 5; f++) {
        for (size_t i = 0; i < n; i++)
            data[i] = (f % 2) ? (unsigned char)((i * 2654435761u) >> 13)
                              : (unsigned char)"abcdefgh\n"[i % 9];
        char path[32];
        snprintf(path, sizeof(path), "data/file-%d", f);
        sw_tar_entry e = {
            .path = path, .type = SW_TAR_REG, .mode = 0644, .data = data, .data_len = n};
        assert_int_equal(sw_tar_add(t, &e), 0);
    }
    sw_tar_entry d = {.path = "data", .type = SW_TAR_DIR, .mode = 0755};
    assert_int_equal(sw_tar_add(t, &d), 0);
    sw_free(data);
    return t;
}

static void test_layer_digests_and_sizes(void **state)
{
    sw_tar *t = sample_tar();
    sw_buf tar = SW_BUF_INIT(64 << 20), sunk = SW_BUF_INIT(64 << 20);
    assert_int_equal(sw_tar_write(t, 0, collect, &tar), 0);

    sw_layer_opts o = SW_LAYER_OPTS_INIT;
    o.out_path = g_out;
    o.sink = collect;
    o.payload = &sunk;
    o.threads = 2;
    sw_layer_info info;
    assert_int_equal(sw_layer_build(t, &o, &info), 0);

    size_t blob_len;
    char *blob = read_file(g_out, &blob_len);
    assert_int_equal(blob_len, sunk.len);
    assert_memory_equal(blob, sunk.ptr, blob_len);
    assert_int_equal(info.size, blob_len);
    assert_int_equal(info.tar_size, tar.len);
    char want[SW_SHA256_DIGEST_BUF];
    openssl_digest(tar.ptr, tar.len, want);
    assert_string_equal(info.diff_id, want);
    openssl_digest(blob, blob_len, want);
    assert_string_equal(info.digest, want);
    assert_string_equal(info.media_type, "application/vnd.oci.image.layer.v1.tar+gzip");

    /* the blob is the tar, gzipped */
    unsigned char *back = sw_malloc(tar.len);
    uLongf back_len = tar.len;
    z_stream s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(inflateInit2(&s, 31), Z_OK);
    s.next_in = (unsigned char *)blob;
    s.avail_in = (uInt)blob_len;
    s.next_out = back;
    s.avail_out = (uInt)back_len;
    do { /* member by member: the blob is a multi-member gzip stream */
        assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
        if (s.avail_in)
            assert_int_equal(inflateReset(&s), Z_OK);
    } while (s.avail_in);
    assert_int_equal((size_t)(s.next_out - back), tar.len);
    assert_memory_equal(back, tar.ptr, tar.len);
    inflateEnd(&s);

    /* one thread, no sink: the same digest */
    sw_layer_opts o1 = SW_LAYER_OPTS_INIT;
    o1.threads = 1;
    sw_layer_info info1;
    assert_int_equal(sw_layer_build(t, &o1, &info1), 0);
    assert_string_equal(info1.digest, info.digest);
    assert_string_equal(info1.diff_id, info.diff_id);

    sw_free(back);
    sw_free(blob);
    sw_buf_dispose(&tar);
    sw_buf_dispose(&sunk);
    sw_tar_free(t);
}

static void test_layer_zstd_and_plain(void **state)
{
    sw_tar *t = sample_tar();
    sw_layer_opts o = SW_LAYER_OPTS_INIT;
    sw_layer_info z, z8, plain;
    o.compression = SW_COMPRESS_ZSTD;
    o.threads = 1;
    assert_int_equal(sw_layer_build(t, &o, &z), 0);
    o.threads = 8;
    assert_int_equal(sw_layer_build(t, &o, &z8), 0);
    assert_string_equal(z.digest, z8.digest);
    assert_string_equal(z.media_type, "application/vnd.oci.image.layer.v1.tar+zstd");
    o.compression = SW_COMPRESS_NONE;
    assert_int_equal(sw_layer_build(t, &o, &plain), 0);
    assert_string_equal(plain.digest, plain.diff_id);
    assert_string_equal(plain.diff_id, z.diff_id);
    assert_int_equal(plain.size, plain.tar_size);
    assert_string_equal(plain.media_type, "application/vnd.oci.image.layer.v1.tar");
    /* a different epoch changes the tar, hence both digests */
    o.epoch = 1;
    sw_layer_info later;
    assert_int_equal(sw_layer_build(t, &o, &later), 0);
    assert_string_not_equal(later.diff_id, plain.diff_id);
    sw_tar_free(t);
}

static int fail_third(void *payload, const void *data, size_t len)
{
    int *n = payload;
    return ++*n >= 3 ? SW_ETIMEOUT : 0;
}

static void test_layer_failures_clean_up(void **state)
{
    sw_tar *t = sample_tar();
    sw_layer_opts o = SW_LAYER_OPTS_INIT;
    sw_layer_info info;
    int calls = 0;
    o.out_path = g_out;
    o.sink = fail_third;
    o.payload = &calls;
    unlink(g_out);
    assert_int_equal(sw_layer_build(t, &o, &info), SW_ETIMEOUT);
    assert_int_equal(access(g_out, F_OK), -1);
    assert_string_equal(info.digest, "");

    /* a missing source file fails the tar step */
    sw_tar_entry e = {.path = "gone", .type = SW_TAR_REG, .src_path = "/nonexistent/slipway"};
    assert_int_equal(sw_tar_add(t, &e), 0);
    o.sink = NULL;
    assert_int_equal(sw_layer_build(t, &o, &info), SW_ENOTFOUND);
    assert_int_equal(access(g_out, F_OK), -1);

    /* an output file that cannot be created, bad options */
    o.out_path = "/nonexistent/dir/blob";
    assert_int_equal(sw_layer_build(t, &o, &info), SW_ERROR);
    o.version = 0;
    assert_int_equal(sw_layer_build(t, &o, &info), SW_EINVALID);
    o = (sw_layer_opts)SW_LAYER_OPTS_INIT;
    o.level = 42;
    assert_int_equal(sw_layer_build(t, &o, &info), SW_EINVALID);
    sw_tar_free(t);
}

static void test_layer_epoch_from_env(void **state)
{
    int64_t v = -1;
    unsetenv("SOURCE_DATE_EPOCH");
    assert_int_equal(sw_layer_epoch_from_env(&v), 0);
    assert_int_equal(v, 0);
    setenv("SOURCE_DATE_EPOCH", "", 1);
    assert_int_equal(sw_layer_epoch_from_env(&v), 0);
    assert_int_equal(v, 0);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    assert_int_equal(sw_layer_epoch_from_env(&v), 0);
    assert_int_equal(v, 1700000000);
    setenv("SOURCE_DATE_EPOCH", "-5", 1);
    assert_int_equal(sw_layer_epoch_from_env(&v), SW_EINVALID);
    setenv("SOURCE_DATE_EPOCH", "12abc", 1);
    assert_int_equal(sw_layer_epoch_from_env(&v), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "SOURCE_DATE_EPOCH"));
    setenv("SOURCE_DATE_EPOCH", "99999999999", 1);
    assert_int_equal(sw_layer_epoch_from_env(&v), SW_EINVALID);
    unsetenv("SOURCE_DATE_EPOCH");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_digests_and_sizes),
        cmocka_unit_test(test_layer_zstd_and_plain),
        cmocka_unit_test(test_layer_failures_clean_up),
        cmocka_unit_test(test_layer_epoch_from_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
