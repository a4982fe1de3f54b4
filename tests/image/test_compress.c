/* Unit tests for src/image/compress: parallel gzip gives the same bytes for 1, 2 and 8
 * threads and for any write slicing, is a valid multi-member gzip stream (zlib inflates each
 * member, checking CRC and ISIZE) with fixed headers; incompressible runs are stored;
 * chunk-boundary cases (empty, exact multiples); zstd
 * round trip and thread independence; pass-through; sink errors; option checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/compress.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define MIB (1024 * 1024)

static int collect(void *payload, const void *data, size_t len)
{
    return sw_buf_put(payload, data, len);
}

/* Deterministic test data: runs of text-like bytes and runs of pseudo-random bytes. */
static unsigned char *make_input(size_t n)
{
    static const char words[] = "layer tar gzip zstd digest manifest config history ";
    unsigned char *p = sw_malloc(n ? n : 1);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = ((i / 100000) % 2) ? (unsigned char)(x >> 56)
                                  : (unsigned char)words[(i + (x >> 60)) % (sizeof(words) - 1)];
    }
    return p;
}

/* Compresses in[0..n) fed in pieces of `step` bytes (0: one write). */
static char *compress_with(sw_compress_kind kind, int threads, size_t chunk,
                           const unsigned char *in, size_t n, size_t step, size_t *out_len)
{
    sw_buf b = SW_BUF_INIT(64 * MIB);
    sw_compress_opts o = SW_COMPRESS_OPTS_INIT;
    o.kind = kind;
    o.threads = threads;
    o.chunk_size = chunk;
    sw_compress *c = NULL;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), 0);
    size_t off = 0;
    while (off < n) {
        size_t k = step && step < n - off ? step : n - off;
        assert_int_equal(sw_compress_write(c, in + off, k), 0);
        off += k;
    }
    assert_int_equal(sw_compress_finish(c), 0);
    sw_compress_free(c);
    return sw_buf_detach(&b, out_len);
}

/* Inflates a multi-member gzip stream with zlib, member by member (zlib checks each member's
 * CRC-32 and ISIZE), and checks every member header is the fixed one (mtime 0, no name, OS
 * "unknown"). Returns the number of members. */
static size_t assert_gunzips_to(const char *gz, size_t gz_len, const unsigned char *want,
                                size_t want_len)
{
    unsigned char *out = sw_malloc(want_len + 1);
    z_stream s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
    s.next_in = (unsigned char *)gz;
    s.avail_in = (uInt)gz_len;
    s.next_out = out;
    s.avail_out = (uInt)want_len + 1;
    size_t members = 0;
    do {
        static const unsigned char hdr[4] = {0x1f, 0x8b, 8, 0};
        assert_true(s.avail_in >= 10);
        assert_memory_equal(s.next_in, hdr, 4);
        assert_memory_equal(s.next_in + 4, "\0\0\0\0", 4); /* mtime */
        assert_int_equal(s.next_in[9], 0xff);
        assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
        members++;
        if (s.avail_in)
            assert_int_equal(inflateReset(&s), Z_OK);
    } while (s.avail_in);
    assert_int_equal((size_t)(s.next_out - out), want_len); /* total_out restarts per member */
    assert_memory_equal(out, want, want_len);
    inflateEnd(&s);
    sw_free(out);
    return members;
}

/* Random data is stored, not searched: the layer grows by member overhead only; text shrinks. */
static void test_gzip_stores_incompressible_runs(void **state)
{
    size_t n = 3 * MIB, lr, lt;
    unsigned char *rnd = sw_malloc(n), *txt = make_input(n);
    uint64_t x = 42;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        rnd[i] = (unsigned char)(x >> 56);
        txt[i] = ((i / 100000) % 2) ? (unsigned char)("abcdefgh"[x >> 61]) : txt[i];
    }
    char *r = compress_with(SW_COMPRESS_GZIP, 2, 0, rnd, n, 0, &lr);
    char *t = compress_with(SW_COMPRESS_GZIP, 2, 0, txt, n, 0, &lt);
    assert_true(lr > n && lr < n + n / 500);
    assert_int_equal(r[8], 4); /* XFL: a stored member says "fastest" */
    assert_true(lt < n / 2);
    assert_int_equal(assert_gunzips_to(r, lr, rnd, n), 3); /* one stored member per chunk */
    assert_gunzips_to(t, lt, txt, n);
    sw_free(r);
    sw_free(t);
    sw_free(rnd);
    sw_free(txt);
}

static void test_gzip_thread_count_independent(void **state)
{
    size_t n = 5 * MIB + 12345, l1, l2, l8, ls;
    unsigned char *in = make_input(n);
    char *g1 = compress_with(SW_COMPRESS_GZIP, 1, 0, in, n, 0, &l1);
    char *g2 = compress_with(SW_COMPRESS_GZIP, 2, 0, in, n, 0, &l2);
    char *g8 = compress_with(SW_COMPRESS_GZIP, 8, 0, in, n, 0, &l8);
    char *gs = compress_with(SW_COMPRESS_GZIP, 3, 0, in, n, 99991, &ls); /* odd slices */
    assert_int_equal(l1, l2);
    assert_int_equal(l1, l8);
    assert_int_equal(l1, ls);
    assert_memory_equal(g1, g2, l1);
    assert_memory_equal(g1, g8, l1);
    assert_memory_equal(g1, gs, l1);
    assert_true(l1 < n); /* the text half compresses */
    /* the text and random runs alternate every 100000 bytes: members follow them */
    assert_true(assert_gunzips_to(g1, l1, in, n) > 6);
    sw_free(g1);
    sw_free(g2);
    sw_free(g8);
    sw_free(gs);
    sw_free(in);
}

static void test_gzip_chunk_boundaries(void **state)
{
    size_t chunk = 64 * 1024;
    static const size_t sizes[] = {
        0, 1, 511, 64 * 1024, 2 * 64 * 1024, 3 * 64 * 1024 + 7, 40000 + 32768};
    unsigned char *in = make_input(400000);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t la, lb;
        char *a = compress_with(SW_COMPRESS_GZIP, 1, chunk, in, sizes[i], 0, &la);
        char *b = compress_with(SW_COMPRESS_GZIP, 4, chunk, in, sizes[i], 1000, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        assert_gunzips_to(a, la, in, sizes[i]);
        sw_free(a);
        sw_free(b);
    }
    /* the chunk size is part of the format: another size gives other (valid) bytes */
    size_t la, lb;
    char *a = compress_with(SW_COMPRESS_GZIP, 2, 64 * 1024, in, 400000, 0, &la);
    char *b = compress_with(SW_COMPRESS_GZIP, 2, 128 * 1024, in, 400000, 0, &lb);
    assert_false(la == lb && memcmp(a, b, la) == 0);
    assert_gunzips_to(b, lb, in, 400000);
    sw_free(a);
    sw_free(b);
    sw_free(in);
}

static void test_zstd_round_trip_and_threads(void **state)
{
    size_t n = 9 * MIB + 777, l1, l2, l8, ls;
    unsigned char *in = make_input(n);
    char *z1 = compress_with(SW_COMPRESS_ZSTD, 1, 0, in, n, 0, &l1);
    char *z2 = compress_with(SW_COMPRESS_ZSTD, 2, 0, in, n, 0, &l2);
    char *z8 = compress_with(SW_COMPRESS_ZSTD, 8, 0, in, n, 0, &l8);
    char *zs = compress_with(SW_COMPRESS_ZSTD, 2, 0, in, n, 65537, &ls);
    assert_int_equal(l1, l2);
    assert_int_equal(l1, l8);
    assert_int_equal(l1, ls);
    assert_memory_equal(z1, z2, l1);
    assert_memory_equal(z1, z8, l1);
    assert_memory_equal(z1, zs, l1);
    unsigned char *back = sw_malloc(n);
    size_t r = ZSTD_decompress(back, n, z1, l1);
    assert_false(ZSTD_isError(r));
    assert_int_equal(r, n);
    assert_memory_equal(back, in, n);
    sw_free(back);
    sw_free(z1);
    sw_free(z2);
    sw_free(z8);
    sw_free(zs);
    sw_free(in);
}

static void test_zstd_small_and_empty(void **state)
{
    unsigned char *in = make_input(3000);
    size_t sizes[] = {0, 3000};
    for (size_t i = 0; i < 2; i++) {
        size_t la, lb;
        char *a = compress_with(SW_COMPRESS_ZSTD, 1, 0, in, sizes[i], 0, &la);
        char *b = compress_with(SW_COMPRESS_ZSTD, 4, 0, in, sizes[i], 100, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        unsigned char back[3001];
        size_t r = ZSTD_decompress(back, sizeof(back), a, la);
        assert_false(ZSTD_isError(r));
        assert_int_equal(r, sizes[i]);
        assert_memory_equal(back, in, sizes[i]);
        sw_free(a);
        sw_free(b);
    }
    sw_free(in);
}

static void test_none_passes_through(void **state)
{
    unsigned char *in = make_input(100000);
    size_t l;
    char *out = compress_with(SW_COMPRESS_NONE, 2, 0, in, 100000, 333, &l);
    assert_int_equal(l, 100000);
    assert_memory_equal(out, in, l);
    sw_free(out);
    sw_free(in);
}

typedef struct fail_after {
    size_t calls, limit;
} fail_after;

static int failing(void *payload, const void *data, size_t len)
{
    fail_after *f = payload;
    return ++f->calls > f->limit ? SW_EUNAVAILABLE : 0;
}

static void test_sink_error_is_sticky(void **state)
{
    static const sw_compress_kind kinds[] = {SW_COMPRESS_GZIP, SW_COMPRESS_ZSTD, SW_COMPRESS_NONE};
    unsigned char *in = make_input(3 * MIB);
    for (size_t k = 0; k < 3; k++) {
        for (int threads = 1; threads <= 2; threads++) {
            fail_after f = {0, 1};
            sw_compress_opts o = SW_COMPRESS_OPTS_INIT;
            o.kind = kinds[k];
            o.threads = threads;
            o.chunk_size = 64 * 1024;
            sw_compress *c = NULL;
            assert_int_equal(sw_compress_new(&c, &o, failing, &f), 0);
            int rc = 0;
            for (size_t off = 0; off < 3 * MIB && rc == 0; off += 256 * 1024)
                rc = sw_compress_write(c, in + off, 256 * 1024);
            if (rc == 0)
                rc = sw_compress_finish(c);
            assert_int_equal(rc, SW_EUNAVAILABLE);
            assert_int_equal(sw_compress_write(c, in, 1), SW_EUNAVAILABLE);
            assert_int_equal(sw_compress_finish(c), SW_EUNAVAILABLE);
            sw_compress_free(c); /* joins workers that may still hold queued jobs */
        }
    }
    sw_free(in);
}

static void test_bad_options_and_misuse(void **state)
{
    sw_buf b = SW_BUF_INIT(1024);
    sw_compress *c = NULL;
    sw_compress_opts o = SW_COMPRESS_OPTS_INIT;
    o.level = 10;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);
    assert_null(c);
    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.kind = SW_COMPRESS_ZSTD;
    o.level = 20;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);
    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.chunk_size = 1000;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);
    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.threads = SW_COMPRESS_MAX_THREADS + 1;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);
    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.kind = (sw_compress_kind)7;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);
    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.version = 99;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), SW_EINVALID);

    o = (sw_compress_opts)SW_COMPRESS_OPTS_INIT;
    o.threads = 2;
    assert_int_equal(sw_compress_new(&c, &o, collect, &b), 0);
    assert_int_equal(sw_compress_finish(c), 0);
    assert_int_equal(sw_compress_write(c, "x", 1), SW_EINVALID);
    assert_int_equal(sw_compress_finish(c), SW_EINVALID);
    sw_compress_free(c);
    sw_compress_free(NULL);
    sw_buf_dispose(&b);

    /* abandoning a compressor mid-stream is clean */
    unsigned char *in = make_input(2 * MIB);
    sw_buf big = SW_BUF_INIT(8 * MIB);
    assert_int_equal(sw_compress_new(&c, &o, collect, &big), 0);
    assert_int_equal(sw_compress_write(c, in, 2 * MIB), 0);
    sw_compress_free(c);
    sw_buf_dispose(&big);
    sw_free(in);
}

static void test_kind_names(void **state)
{
    sw_compress_kind k;
    assert_int_equal(sw_compress_kind_parse("zstd", &k), 0);
    assert_int_equal(k, SW_COMPRESS_ZSTD);
    assert_int_equal(sw_compress_kind_parse("", &k), 0);
    assert_int_equal(k, SW_COMPRESS_GZIP);
    assert_int_equal(sw_compress_kind_parse("none", &k), 0);
    assert_int_equal(k, SW_COMPRESS_NONE);
    assert_int_equal(sw_compress_kind_parse("bzip2", &k), SW_EINVALID);
    assert_string_equal(sw_compress_kind_name(SW_COMPRESS_GZIP), "gzip");
    assert_string_equal(sw_compress_kind_name(SW_COMPRESS_ZSTD), "zstd");
    assert_true(sw_compress_default_threads() >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gzip_thread_count_independent),
        cmocka_unit_test(test_gzip_chunk_boundaries),
        cmocka_unit_test(test_gzip_stores_incompressible_runs),
        cmocka_unit_test(test_zstd_round_trip_and_threads),
        cmocka_unit_test(test_zstd_small_and_empty),
        cmocka_unit_test(test_none_passes_through),
        cmocka_unit_test(test_sink_error_is_sticky),
        cmocka_unit_test(test_bad_options_and_misuse),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
