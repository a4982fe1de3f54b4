/* Unit tests for src/image/tarread: a tar written by src/image/tar, plain, gzip and zstd, reads
 * back into entries that write the very same bytes; spooling to files; prefix and --chown;
 * hand-made hostile headers ("..", absolute paths, hard links out of the archive, devices);
 * inputs that are not archives, truncated archives, and the size and entry caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/compress.h"
#include "image/tarread.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[] = "/tmp/sw-tarread-test-XXXXXX";

static int setup(void **state)
{
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    return sw_path_remove_tree(g_dir);
}

static int collect(void *payload, const void *data, size_t len)
{
    return sw_buf_put(payload, data, len);
}

static char *tar_bytes(sw_tar *t, size_t *len)
{
    sw_buf b = SW_BUF_INIT(64 << 20);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), 0);
    return sw_buf_detach(&b, len);
}

/* Writing t again must give exactly the len bytes of orig. */
static void expect_same_tar(sw_tar *t, const char *orig, size_t len)
{
    size_t blen;
    char *again = tar_bytes(t, &blen);
    assert_int_equal(blen, len);
    assert_memory_equal(again, orig, len);
    sw_free(again);
}

static char *compressed(sw_compress_kind kind, const char *in, size_t n, size_t *len)
{
    sw_buf b = SW_BUF_INIT(64 << 20);
    sw_compress_opts o = SW_COMPRESS_OPTS_INIT;
    sw_compress *c = NULL;
    o.kind = kind;
    o.threads = 1;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), 0);
    assert_int_equal(sw_compress_write(c, in, n), 0);
    assert_int_equal(sw_compress_finish(c), 0);
    sw_compress_free(c);
    return sw_buf_detach(&b, len);
}

static sw_tar *sample(void)
{
    char longp[300];
    memset(longp, 'p', 150);
    memcpy(longp + 150, "/", 1);
    memset(longp + 151, 'q', 120);
    longp[271] = '\0';
    sw_tar_entry e[] = {
        {.path = "etc", .type = SW_TAR_DIR, .mode = 0755},
        {.path = "etc/app.conf",
         .type = SW_TAR_REG,
         .mode = 0640,
         .uid = 5,
         .gid = 6,
         .data = "a=1\n",
         .data_len = 4},
        {.path = "bin/tool",
         .type = SW_TAR_REG,
         .mode = 04755,
         .data = "\x7f"
                 "ELF",
         .data_len = 4},
        {.path = "bin/alias", .type = SW_TAR_HARDLINK, .link = "bin/tool"},
        {.path = "lib/link", .type = SW_TAR_SYMLINK, .mode = 0777, .link = "../etc/app.conf"},
        {.path = "empty", .type = SW_TAR_REG, .mode = 0600},
        {.path = longp,
         .type = SW_TAR_REG,
         .mode = 0644,
         .uid = 3000000,
         .data = "L",
         .data_len = 1},
    };
    sw_tar *t = NULL;
    sw_tar_new(&t);
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
        assert_int_equal(sw_tar_add(t, &e[i]), 0);
    return t;
}

static void test_tarread_round_trip_is_byte_identical(void **state)
{
    sw_tar *t = sample();
    size_t len;
    char *orig = tar_bytes(t, &len);
    static const sw_compress_kind kinds[] = {SW_COMPRESS_NONE, SW_COMPRESS_GZIP, SW_COMPRESS_ZSTD};
    for (size_t k = 0; k < 3; k++) {
        size_t zlen;
        char *z = compressed(kinds[k], orig, len, &zlen);
        sw_tar *back = NULL;
        sw_tar_new(&back);
        sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
        sw_tarread_stats st;
        assert_int_equal(sw_tarread_add_mem(back, z, zlen, &o, &st), 0);
        assert_int_equal(st.entries, 7);
        assert_int_equal(st.skipped, 0);
        assert_int_equal(st.bytes, 4 + 4 + 1);
        expect_same_tar(back, orig, len);
        sw_free(z);
        sw_tar_free(back);
    }
    sw_free(orig);
    sw_tar_free(t);
}

/* in_place: an uncompressed archive's contents are named where they are in the archive file
 * (no copy); a compressed one's go to the spool file. Both read back byte for byte. */
static void test_tarread_in_place(void **state)
{
    sw_tar *t = sample();
    unsigned char big[10000]; /* longer than the leading bytes tarread compares */
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 7 + i / 13);
    sw_tar_entry be = {.path = "data/big.bin",
                       .type = SW_TAR_REG,
                       .mode = 0644,
                       .data = big,
                       .data_len = sizeof(big)};
    assert_int_equal(sw_tar_add(t, &be), 0);
    size_t len;
    char *orig = tar_bytes(t, &len);
    for (int gz = 0; gz < 2; gz++) {
        char path[600], spool[600];
        snprintf(path, sizeof(path), "%s/place-%d.tar", g_dir, gz);
        snprintf(spool, sizeof(spool), "%s/place-%d.spool", g_dir, gz);
        size_t zlen = len;
        char *z = gz ? compressed(SW_COMPRESS_GZIP, orig, len, &zlen) : orig;
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(z, 1, zlen, f), zlen);
        fclose(f);
        sw_tar *back = NULL;
        sw_tar_new(&back);
        sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
        o.spool_file = spool;
        o.in_place = true;
        sw_tarread_stats st;
        assert_int_equal(sw_tarread_add_file(back, path, &o, &st), 0);
        assert_int_equal(st.entries, 8);
        assert_int_equal(st.bytes, 4 + 4 + 1 + sizeof(big));
        struct stat sp;
        assert_int_equal(stat(spool, &sp), 0);
        /* plain: nothing copied; gzip: every content byte spooled */
        assert_int_equal((size_t)sp.st_size, gz ? 4 + 4 + 1 + sizeof(big) : 0);
        expect_same_tar(back, orig, len);
        sw_tar_free(back);
        if (gz)
            sw_free(z);
    }
    sw_free(orig);
    sw_tar_free(t);
}

static void test_tarread_spool_prefix_chown(void **state)
{
    sw_tar *t = sample();
    size_t len;
    char *orig = tar_bytes(t, &len);
    char path[600];
    snprintf(path, sizeof(path), "%s/in.tar", g_dir);
    FILE *f = fopen(path, "wb");
    fwrite(orig, 1, len, f);
    fclose(f);

    sw_tar *back = NULL;
    sw_tar_new(&back);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.prefix = "/opt/app/";
    o.spool_dir = g_dir;
    o.chown = true;
    o.uid = 1000;
    o.gid = 1001;
    sw_tarread_stats st;
    assert_int_equal(sw_tarread_add_file(back, path, &o, &st), 0);
    assert_int_equal(st.entries, 7);
    char spooled[700];
    snprintf(spooled, sizeof(spooled), "%s/spool-0", g_dir);
    assert_int_equal(access(spooled, F_OK), 0);

    /* what was read matches a tar built directly with the prefix and the ids */
    sw_tar *want = NULL;
    sw_tar_new(&want);
    sw_tar_entry d = {
        .path = "opt/app/etc", .type = SW_TAR_DIR, .mode = 0755, .uid = 1000, .gid = 1001};
    sw_tar_entry c = {.path = "opt/app/etc/app.conf",
                      .type = SW_TAR_REG,
                      .mode = 0640,
                      .uid = 1000,
                      .gid = 1001,
                      .data = "a=1\n",
                      .data_len = 4};
    assert_int_equal(sw_tar_add(want, &d), 0);
    assert_int_equal(sw_tar_add(want, &c), 0);
    size_t wlen, blen;
    char *w = tar_bytes(want, &wlen);
    char *b = tar_bytes(back, &blen);
    /* the first two entries in path order are opt/app/bin/... so compare by search */
    assert_non_null(memmem(b, blen, w + 512 * 0, 512)); /* the etc/ header, ids and all */
    assert_non_null(memmem(b, blen, "opt/app/bin/alias", 17));
    sw_free(w);
    sw_free(b);
    sw_tar_free(want);
    sw_tar_free(back);
    sw_free(orig);
    sw_tar_free(t);

    sw_tar_new(&back);
    assert_int_equal(sw_tarread_add_file(back, "/nonexistent/x.tar", &o, NULL), SW_ENOTFOUND);
    o.prefix = "a/../b";
    assert_int_equal(sw_tarread_add_file(back, path, &o, NULL), SW_EINVALID);
    o.prefix = NULL;
    o.version = 7;
    assert_int_equal(sw_tarread_add_file(back, path, &o, NULL), SW_EINVALID);
    sw_tar_free(back);
}

/* ---- hand-made archives ---- */

static void octal(unsigned char *f, size_t w, unsigned long long v)
{
    f[w - 1] = 0;
    for (size_t i = w - 1; i > 0; i--, v >>= 3)
        f[i - 1] = (unsigned char)('0' + (v & 7));
}

static void raw_entry(sw_buf *b, const char *name, char type, const char *link, const char *data)
{
    unsigned char h[512];
    size_t n = data ? strlen(data) : 0;
    memset(h, 0, sizeof(h));
    memcpy(h, name, strlen(name));
    octal(h + 100, 8, 0644);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    octal(h + 124, 12, n);
    octal(h + 136, 12, 0);
    h[156] = (unsigned char)type;
    if (link)
        memcpy(h + 157, link, strlen(link));
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++)
        sum += h[i];
    octal(h + 148, 7, sum);
    sw_buf_put(b, h, 512);
    if (n) {
        unsigned char pad[512];
        memset(pad, 0, sizeof(pad));
        sw_buf_put(b, data, n);
        sw_buf_put(b, pad, (512 - n % 512) % 512);
    }
}

static void raw_end(sw_buf *b)
{
    unsigned char z[1024];
    memset(z, 0, sizeof(z));
    sw_buf_put(b, z, sizeof(z));
}

static int read_raw(sw_buf *b, sw_tarread_stats *st)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.prefix = "dst";
    int rc = sw_tarread_add_mem(t, b->ptr, b->len, &o, st);
    sw_tar_free(t);
    sw_buf_clear(b);
    return rc;
}

static void test_tarread_hostile_headers(void **state)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_tarread_stats st;
    raw_entry(&b, "./", '5', NULL, NULL);
    raw_entry(&b, "/abs/file", '0', NULL, "x");
    raw_entry(&b, "dev/null", '3', NULL, NULL);
    raw_entry(&b, "fifo", '6', NULL, NULL);
    raw_entry(&b, "link", '2', "/etc/shadow", NULL); /* kept verbatim: never followed here */
    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), 0);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.skipped, 2);

    raw_entry(&b, "ok", '0', NULL, "x");
    raw_entry(&b, "../../etc/passwd", '0', NULL, "evil");
    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "unsafe"));

    raw_entry(&b, "a/./b", '0', NULL, "x");
    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), SW_EINVALID);

    raw_entry(&b, "h", '1', "../../etc/passwd", NULL);
    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), SW_EINVALID);

    raw_entry(&b, "s", '2', "", NULL);
    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), SW_EINVALID);
    sw_buf_dispose(&b);
}

static void test_tarread_not_archives_and_truncation(void **state)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_tarread_stats st;
    sw_buf_puts(&b, "just some text, not an archive\n");
    assert_int_equal(read_raw(&b, &st), SW_EUNSUPPORTED);
    size_t zlen;
    char *z = compressed(SW_COMPRESS_GZIP, "plain text in gzip\n", 19, &zlen);
    sw_buf_put(&b, z, zlen);
    assert_int_equal(read_raw(&b, &st), SW_EUNSUPPORTED);
    sw_free(z);

    raw_end(&b);
    assert_int_equal(read_raw(&b, &st), 0); /* an empty archive */
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.headers, 0); /* ADD copies such a file as it is */

    raw_entry(&b, "a", '0', NULL, "first");
    raw_entry(&b, "b", '0', NULL, "second file with contents");
    raw_end(&b);
    b.len = 512 + 512 + 512 + 10; /* cut inside b's contents */
    assert_int_equal(read_raw(&b, &st), SW_EINVALID);
    sw_buf_dispose(&b);
}

static void test_tarread_caps(void **state)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    raw_entry(&b, "a", '0', NULL, "0123456789");
    raw_entry(&b, "b", '0', NULL, "0123456789");
    raw_entry(&b, "c", '5', NULL, NULL);
    raw_end(&b);
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.max_bytes = 15;
    assert_int_equal(sw_tarread_add_mem(t, b.ptr, b.len, &o, NULL), SW_ELIMIT);
    sw_tar_free(t);
    sw_tar_new(&t);
    o.max_bytes = 20;
    o.max_entries = 2;
    assert_int_equal(sw_tarread_add_mem(t, b.ptr, b.len, &o, NULL), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 2 entries"));
    sw_tar_free(t);
    sw_tar_new(&t);
    /* skipped entries (FIFOs) and the archive's root count too: a stream of headers that add
     * nothing is no cheaper to read */
    sw_buf fifos = SW_BUF_INIT(1 << 20);
    raw_entry(&fifos, "./", '5', NULL, NULL);
    for (int i = 0; i < 20; i++)
        raw_entry(&fifos, "p", '6', NULL, NULL);
    raw_end(&fifos);
    sw_tarread_stats st;
    o.max_entries = 10;
    assert_int_equal(sw_tarread_add_mem(t, fifos.ptr, fifos.len, &o, &st), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 10 entries"));
    assert_int_equal(st.headers, 10);
    o.max_entries = 21;
    assert_int_equal(sw_tarread_add_mem(t, fifos.ptr, fifos.len, &o, &st), 0);
    assert_int_equal(st.headers, 21);
    assert_int_equal(st.skipped, 20);
    sw_buf_dispose(&fifos);
    o.max_entries = 3;
    o.spool_dir = "/nonexistent/spool";
    assert_int_equal(sw_tarread_add_mem(t, b.ptr, b.len, &o, NULL), SW_ERROR);
    sw_tar_free(t);
    sw_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tarread_round_trip_is_byte_identical),
        cmocka_unit_test(test_tarread_spool_prefix_chown),
        cmocka_unit_test(test_tarread_in_place),
        cmocka_unit_test(test_tarread_hostile_headers),
        cmocka_unit_test(test_tarread_not_archives_and_truncation),
        cmocka_unit_test(test_tarread_caps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
