/* Unit tests for src/image/tar: byte-identical output whatever the add order and the files'
 * timestamps, the ustar header fields (checked by a small reader here, checksums included),
 * PAX records for long paths, link targets and large ids, symlinks, directories, modes and
 * --chown ids, hard link groups, path cleaning, and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/tar.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/str.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static int collect(void *payload, const void *data, size_t len)
{
    return sw_buf_put(payload, data, len);
}

typedef struct rd_entry {
    char name[5000];
    char link[5000];
    char type;
    unsigned mode, uid, gid;
    uint64_t size, mtime;
    size_t data_off; /* offset of the contents in the archive */
    char uname[33], gname[33];
} rd_entry;

static uint64_t octal(const unsigned char *f, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && f[i] >= '0' && f[i] <= '7'; i++)
        v = v * 8 + (uint64_t)(f[i] - '0');
    return v;
}

static void apply_pax(rd_entry *e, const char *rec, size_t len)
{
    size_t off = 0;
    uint64_t id_u = 0, id_g = 0;
    while (off < len) {
        const char *end = rec + off;
        uint64_t n = 0;
        assert_int_equal(sw_parse_u64(&end, len - off, &n), 0);
        assert_true(n > 0);
        assert_int_equal(*end, ' ');
        assert_int_equal(rec[off + n - 1], '\n'); /* the length prefix is exact */
        const char *kv = end + 1, *eq = memchr(kv, '=', (size_t)(rec + off + n - kv));
        assert_non_null(eq);
        size_t klen = (size_t)(eq - kv), vlen = (size_t)(rec + off + n - 1 - (eq + 1));
        char val[5000];
        assert_true(vlen < sizeof(val));
        memcpy(val, eq + 1, vlen);
        val[vlen] = '\0';
        if (klen == 4 && memcmp(kv, "path", 4) == 0)
            memcpy(e->name, val, vlen + 1);
        else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0)
            memcpy(e->link, val, vlen + 1);
        else if (klen == 3 && (memcmp(kv, "uid", 3) == 0 || memcmp(kv, "gid", 3) == 0))
            assert_int_equal(sw_str_to_u64(val, kv[0] == 'u' ? &id_u : &id_g), 0);
        else
            fail_msg("unexpected PAX key %.*s", (int)klen, kv);
        off += n;
    }
    e->uid = (unsigned)id_u;
    e->gid = (unsigned)id_g;
}

static void check_header(const unsigned char *h)
{
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    assert_int_equal(octal(h + 148, 8), sum);
    assert_memory_equal(h + 257,
                        "ustar\0"
                        "00",
                        8);
    assert_int_equal(h[155], ' ');
    assert_memory_equal(h + 329,
                        "0000000\0"
                        "0000000\0",
                        16);
}

/* Reads every entry of a tar produced by sw_tar_write; returns how many. */
static size_t read_tar(const unsigned char *p, size_t len, rd_entry *out, size_t max)
{
    size_t off = 0, n = 0;
    rd_entry pax;
    bool have_pax = false;
    assert_int_equal(len % 512, 0);
    for (;;) {
        assert_true(off + 512 <= len);
        const unsigned char *h = p + off;
        static const unsigned char zero[512];
        if (memcmp(h, zero, 512) == 0) {
            assert_int_equal(off + 1024, len);
            assert_memory_equal(h + 512, zero, 512);
            return n;
        }
        check_header(h);
        rd_entry e;
        memset(&e, 0, sizeof(e));
        memcpy(e.name, h, 100);
        memcpy(e.link, h + 157, 100);
        memcpy(e.uname, h + 265, 32);
        memcpy(e.gname, h + 297, 32);
        e.type = (char)h[156];
        e.mode = (unsigned)octal(h + 100, 8);
        e.uid = (unsigned)octal(h + 108, 8);
        e.gid = (unsigned)octal(h + 116, 8);
        e.size = octal(h + 124, 12);
        e.mtime = octal(h + 136, 12);
        e.data_off = off + 512;
        off += 512 + (size_t)((e.size + 511) / 512 * 512);
        if (e.type == 'x') {
            assert_false(have_pax);
            assert_memory_equal(e.name, "PaxHeaders.0/", 13);
            memset(&pax, 0, sizeof(pax));
            apply_pax(&pax, (const char *)p + e.data_off, (size_t)e.size);
            have_pax = true;
            continue;
        }
        if (have_pax) {
            if (pax.name[0])
                memcpy(e.name, pax.name, sizeof(e.name));
            if (pax.link[0])
                memcpy(e.link, pax.link, sizeof(e.link));
            if (pax.uid)
                e.uid = pax.uid;
            if (pax.gid)
                e.gid = pax.gid;
            have_pax = false;
        }
        assert_true(n < max);
        out[n++] = e;
    }
}

static char g_dir[] = "/tmp/sw-tar-test-XXXXXX";

static int setup(void **state)
{
    memcpy(g_dir + strlen(g_dir) - 6, "XXXXXX", 6);
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    return sw_path_remove_tree(g_dir);
}

static void put_file(const char *name, const char *content, time_t mtime)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static const char *src(const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", g_dir, name);
    return path[k];
}

static char *write_tar(sw_tar *t, int64_t mtime, size_t *len)
{
    sw_buf b = SW_BUF_INIT(64 << 20);
    assert_int_equal(sw_tar_write(t, mtime, collect, &b), 0);
    return sw_buf_detach(&b, len);
}

/* ---- tests ---- */

/* The entries of one small tree, added in the order given by perm. */
static char *tree_tar(const int *perm, size_t *len)
{
    sw_tar_entry e[] = {
        {.path = "app", .type = SW_TAR_DIR, .mode = 0755},
        {.path = "app/a.txt", .type = SW_TAR_REG, .mode = 0644, .src_path = src("a.txt")},
        {.path = "app/b.bin", .type = SW_TAR_REG, .mode = 0600, .src_path = src("b.bin")},
        {.path = "app/link", .type = SW_TAR_SYMLINK, .mode = 0777, .link = "a.txt"},
        {.path = "etc/conf", .type = SW_TAR_REG, .mode = 0640, .data = "k=v\n", .data_len = 4},
        {.path = "app-x", .type = SW_TAR_DIR, .mode = 0700},
    };
    sw_tar *t = NULL;
    assert_int_equal(sw_tar_new(&t), 0);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(sw_tar_add(t, &e[perm[i]]), 0);
    char *out = write_tar(t, 0, len);
    sw_tar_free(t);
    return out;
}

static void test_tar_deterministic_order_and_mtimes(void **state)
{
    static const int p1[] = {0, 1, 2, 3, 4, 5}, p2[] = {5, 4, 3, 2, 1, 0},
                     p3[] = {2, 0, 4, 1, 5, 3};
    size_t l1, l2, l3;
    put_file("a.txt", "hello\n", 1000);
    put_file("b.bin", "\x01\x02\x03", 2000);
    char *t1 = tree_tar(p1, &l1);
    char *t2 = tree_tar(p2, &l2);
    put_file("a.txt", "hello\n", 1700000000); /* touched: same contents, new mtime */
    put_file("b.bin", "\x01\x02\x03", 5);
    char *t3 = tree_tar(p3, &l3);
    assert_int_equal(l1, l2);
    assert_int_equal(l1, l3);
    assert_memory_equal(t1, t2, l1);
    assert_memory_equal(t1, t3, l1);
    char d1[SW_SHA256_DIGEST_BUF], d3[SW_SHA256_DIGEST_BUF];
    sw_sha256_digest(t1, l1, d1);
    sw_sha256_digest(t3, l3, d3);
    assert_string_equal(d1, d3);

    rd_entry e[8];
    size_t n = read_tar((unsigned char *)t1, l1, e, 8);
    assert_int_equal(n, 6);
    /* path-byte order: '-' (0x2d) sorts before '/' (0x2f); parents precede children */
    assert_string_equal(e[0].name, "app/");
    assert_string_equal(e[1].name, "app-x/");
    assert_string_equal(e[2].name, "app/a.txt");
    assert_string_equal(e[3].name, "app/b.bin");
    assert_string_equal(e[4].name, "app/link");
    assert_string_equal(e[5].name, "etc/conf");
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(e[i].mtime, 0);
        assert_int_equal(e[i].uid, 0);
        assert_int_equal(e[i].gid, 0);
        assert_string_equal(e[i].uname, "");
        assert_string_equal(e[i].gname, "");
    }
    assert_int_equal(e[0].type, '5');
    assert_int_equal(e[0].mode, 0755);
    assert_int_equal(e[2].type, '0');
    assert_int_equal(e[2].size, 6);
    assert_memory_equal(t1 + e[2].data_off, "hello\n", 6);
    assert_int_equal(e[3].mode, 0600);
    assert_int_equal(e[4].type, '2');
    assert_string_equal(e[4].link, "a.txt");
    assert_int_equal(e[4].size, 0);
    assert_memory_equal(t1 + e[5].data_off, "k=v\n", 4);
    sw_free(t1);
    sw_free(t2);
    sw_free(t3);
}

static void test_tar_epoch_and_ids(void **state)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry a = {
        .path = "/srv/data", .type = SW_TAR_DIR, .mode = 02775, .uid = 1001, .gid = 1002};
    sw_tar_entry b = {.path = "./srv/data/x",
                      .type = SW_TAR_REG,
                      .mode = 04755,
                      .uid = 1001,
                      .gid = 1002,
                      .data = "#!",
                      .data_len = 2};
    sw_tar_entry c = {
        .path = "srv/big-ids", .type = SW_TAR_REG, .mode = 0644, .uid = 3000000, .gid = 4000000};
    assert_int_equal(sw_tar_add(t, &a), 0);
    assert_int_equal(sw_tar_add(t, &b), 0);
    assert_int_equal(sw_tar_add(t, &c), 0);
    assert_int_equal(sw_tar_count(t), 3);
    size_t len;
    char *out = write_tar(t, 1700000000, &len);
    rd_entry e[4];
    assert_int_equal(read_tar((unsigned char *)out, len, e, 4), 3);
    assert_string_equal(e[0].name, "srv/big-ids");
    assert_int_equal(e[0].uid, 3000000); /* above 07777777: PAX uid/gid */
    assert_int_equal(e[0].gid, 4000000);
    assert_int_equal(e[0].size, 0);
    assert_string_equal(e[1].name, "srv/data/");
    assert_int_equal(e[1].mode, 02775);
    assert_int_equal(e[1].uid, 1001);
    assert_int_equal(e[1].gid, 1002);
    assert_int_equal(e[1].mtime, 1700000000);
    assert_string_equal(e[2].name, "srv/data/x");
    assert_int_equal(e[2].mode, 04755);
    sw_free(out);
    sw_tar_free(t);
}

static void test_tar_long_paths_use_pax(void **state)
{
    char longp[400], longl[300], exact[101];
    memset(longp, 0, sizeof(longp));
    for (size_t i = 0; i < 3; i++) {
        memset(longp + i * 121, 'd' + (int)i, 120);
        longp[i * 121 + 120] = '/';
    }
    memcpy(longp + 363, "file.txt", 9); /* 371 bytes */
    memset(longl, 'L', 250);
    longl[250] = '\0';
    memset(exact, 'e', 100); /* exactly 100 bytes fits ustar */
    exact[100] = '\0';
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry a = {.path = longp, .type = SW_TAR_REG, .mode = 0644, .data = "x", .data_len = 1};
    sw_tar_entry b = {.path = "s", .type = SW_TAR_SYMLINK, .mode = 0777, .link = longl};
    sw_tar_entry c = {.path = exact, .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_tar_add(t, &a), 0);
    assert_int_equal(sw_tar_add(t, &b), 0);
    assert_int_equal(sw_tar_add(t, &c), 0);
    size_t len;
    char *out = write_tar(t, 0, &len);
    rd_entry e[4];
    assert_int_equal(read_tar((unsigned char *)out, len, e, 4), 3);
    assert_string_equal(e[0].name, longp);
    assert_memory_equal(out + e[0].data_off, "x", 1);
    assert_string_equal(e[1].name, exact);
    assert_string_equal(e[2].name, "s");
    assert_string_equal(e[2].link, longl);
    /* exactly two 'x' headers: one for the long path, one for the long link */
    size_t xs = 0;
    for (size_t off = 0; off + 512 <= len; off += 512)
        if (memcmp(out + off, "PaxHeaders.0/", 13) == 0 && out[off + 156] == 'x')
            xs++;
    assert_int_equal(xs, 2);
    sw_free(out);
    sw_tar_free(t);
}

static void test_tar_hardlink_groups(void **state)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    /* the regular target sorts last: "a-link" must carry the data, the others link to it */
    sw_tar_entry reg = {.path = "z/target",
                        .type = SW_TAR_REG,
                        .mode = 0750,
                        .uid = 7,
                        .data = "DATA",
                        .data_len = 4};
    sw_tar_entry l1 = {
        .path = "a-link", .type = SW_TAR_HARDLINK, .mode = 0644, .link = "/z/target"};
    sw_tar_entry l2 = {.path = "m-link", .type = SW_TAR_HARDLINK, .link = "z/target"};
    assert_int_equal(sw_tar_add(t, &l2), 0);
    assert_int_equal(sw_tar_add(t, &reg), 0);
    assert_int_equal(sw_tar_add(t, &l1), 0);
    size_t len;
    char *out = write_tar(t, 0, &len);
    rd_entry e[4];
    assert_int_equal(read_tar((unsigned char *)out, len, e, 4), 3);
    assert_string_equal(e[0].name, "a-link");
    assert_int_equal(e[0].type, '0');
    assert_int_equal(e[0].size, 4);
    assert_int_equal(e[0].mode, 0750);
    assert_int_equal(e[0].uid, 7);
    assert_memory_equal(out + e[0].data_off, "DATA", 4);
    assert_string_equal(e[1].name, "m-link");
    assert_int_equal(e[1].type, '1');
    assert_string_equal(e[1].link, "a-link");
    assert_string_equal(e[2].name, "z/target");
    assert_int_equal(e[2].type, '1');
    assert_string_equal(e[2].link, "a-link");
    sw_free(out);
    sw_tar_free(t);
}

static void test_tar_large_file_streams(void **state)
{
    /* 3 MiB + 100 bytes: crosses the write buffer several times and needs padding */
    char path[512];
    snprintf(path, sizeof(path), "%s/big", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = 3 * 1024 * 1024 + 100;
    for (size_t i = 0; i < n; i++)
        fputc((int)((i * 131) >> 3 & 0xff), f);
    fclose(f);
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry a = {.path = "big", .type = SW_TAR_REG, .mode = 0644, .src_path = path};
    assert_int_equal(sw_tar_add(t, &a), 0);
    size_t len;
    char *out = write_tar(t, 0, &len);
    rd_entry e[2];
    assert_int_equal(read_tar((unsigned char *)out, len, e, 2), 1);
    assert_int_equal(e[0].size, n);
    for (size_t i = 0; i < n; i += 4099)
        assert_int_equal((unsigned char)out[e[0].data_off + i], (i * 131) >> 3 & 0xff);
    sw_free(out);
    sw_tar_free(t);
}

static void test_tar_clean_path(void **state)
{
    char out[64];
    assert_int_equal(sw_tar_clean_path("/a/b/", out, sizeof(out)), 0);
    assert_string_equal(out, "a/b");
    assert_int_equal(sw_tar_clean_path("././x", out, sizeof(out)), 0);
    assert_string_equal(out, "x");
    assert_int_equal(sw_tar_clean_path("a/.b/..c", out, sizeof(out)), 0);
    assert_string_equal(out, "a/.b/..c");
    assert_int_equal(sw_tar_clean_path("a//b", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("a/../b", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("a/./b", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("..", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("/", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path(".", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("", out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path(NULL, out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_tar_clean_path("abcdefgh", out, 4), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "too long"));
}

static void test_tar_refusals(void **state)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry bad_mode = {.path = "m", .type = SW_TAR_REG, .mode = 010000};
    sw_tar_entry no_link = {.path = "l", .type = SW_TAR_SYMLINK, .mode = 0777};
    sw_tar_entry bad_data = {.path = "d", .type = SW_TAR_REG, .data_len = 3};
    sw_tar_entry bad_type = {.path = "t", .type = (sw_tar_type)99};
    sw_tar_entry dotdot = {.path = "../etc/passwd", .type = SW_TAR_REG};
    sw_tar_entry bad_hl = {.path = "h", .type = SW_TAR_HARDLINK, .link = "../x"};
    assert_int_equal(sw_tar_add(t, &bad_mode), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "07777"));
    assert_int_equal(sw_tar_add(t, &no_link), SW_EINVALID);
    assert_int_equal(sw_tar_add(t, &bad_data), SW_EINVALID);
    assert_int_equal(sw_tar_add(t, &bad_type), SW_EINVALID);
    assert_int_equal(sw_tar_add(t, &dotdot), SW_EINVALID);
    assert_int_equal(sw_tar_add(t, &bad_hl), SW_EINVALID);
    assert_int_equal(sw_tar_count(t), 0);

    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_tar_entry x = {.path = "x", .type = SW_TAR_REG};
    sw_tar_entry x2 = {.path = "/x/", .type = SW_TAR_DIR};
    assert_int_equal(sw_tar_add(t, &x), 0);
    assert_int_equal(sw_tar_write(t, -1, collect, &b), SW_EINVALID);
    assert_int_equal(sw_tar_write(t, SW_TAR_MAX_MTIME + 1, collect, &b), SW_EINVALID);
    assert_int_equal(sw_tar_add(t, &x2), 0);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "duplicate path x"));
    sw_tar_free(t);

    /* hard link to a missing or non-regular entry */
    sw_tar_new(&t);
    sw_tar_entry d = {.path = "dir", .type = SW_TAR_DIR};
    sw_tar_entry h = {.path = "h", .type = SW_TAR_HARDLINK, .link = "dir"};
    assert_int_equal(sw_tar_add(t, &d), 0);
    assert_int_equal(sw_tar_add(t, &h), 0);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "not a regular entry"));
    sw_tar_free(t);
    sw_buf_dispose(&b);
}

static void test_tar_source_errors(void **state)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry m = {.path = "m", .type = SW_TAR_REG, .src_path = src("missing")};
    assert_int_equal(sw_tar_add(t, &m), 0);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), SW_ENOTFOUND);
    sw_tar_free(t);

    /* a directory as a source, and a symlink as a source (never followed) */
    char lpath[512];
    snprintf(lpath, sizeof(lpath), "%s/sym", g_dir);
    assert_int_equal(symlink("/etc/passwd", lpath), 0);
    sw_tar_new(&t);
    sw_tar_entry d = {.path = "d", .type = SW_TAR_REG, .src_path = g_dir};
    assert_int_equal(sw_tar_add(t, &d), 0);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), SW_EINVALID);
    sw_tar_free(t);
    sw_tar_new(&t);
    sw_tar_entry s = {.path = "s", .type = SW_TAR_REG, .src_path = lpath};
    assert_int_equal(sw_tar_add(t, &s), 0);
    assert_int_equal(sw_tar_write(t, 0, collect, &b), SW_EINVALID);
    sw_tar_free(t);
    sw_buf_dispose(&b);
}

static int failing_sink(void *payload, const void *data, size_t len)
{
    int *calls = payload;
    (*calls)++;
    return SW_EUNAVAILABLE;
}

static void test_tar_sink_error_stops(void **state)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry a = {.path = "a", .type = SW_TAR_REG, .data = "a", .data_len = 1};
    assert_int_equal(sw_tar_add(t, &a), 0);
    int calls = 0;
    assert_int_equal(sw_tar_write(t, 0, failing_sink, &calls), SW_EUNAVAILABLE);
    assert_int_equal(calls, 1);
    sw_tar_free(t);
}

static void test_tar_empty_archive(void **state)
{
    sw_tar *t = NULL;
    sw_tar_new(&t);
    size_t len;
    char *out = write_tar(t, 0, &len);
    assert_int_equal(len, 1024);
    rd_entry e[1];
    assert_int_equal(read_tar((unsigned char *)out, len, e, 1), 0);
    sw_free(out);
    sw_tar_free(t);
    sw_tar_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tar_deterministic_order_and_mtimes),
        cmocka_unit_test(test_tar_epoch_and_ids),
        cmocka_unit_test(test_tar_long_paths_use_pax),
        cmocka_unit_test(test_tar_hardlink_groups),
        cmocka_unit_test(test_tar_large_file_streams),
        cmocka_unit_test(test_tar_clean_path),
        cmocka_unit_test(test_tar_refusals),
        cmocka_unit_test(test_tar_source_errors),
        cmocka_unit_test(test_tar_sink_error_stops),
        cmocka_unit_test(test_tar_empty_archive),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
