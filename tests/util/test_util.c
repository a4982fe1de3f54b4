/* Unit tests for src/util: buffers, cursor parsers, booleans, UTF-8, base64, time, JSON bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/path.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_buf_cap_is_sticky(void **state)
{
    sw_buf b = SW_BUF_INIT(8);
    assert_int_equal(sw_buf_puts(&b, "abcd"), 0);
    assert_int_equal(sw_buf_puts(&b, "efghij"), SW_ELIMIT);
    assert_int_equal(sw_buf_putc(&b, 'x'), SW_ELIMIT);
    assert_int_equal(sw_buf_error(&b), SW_ELIMIT);
    assert_string_equal(sw_buf_cstr(&b), "abcd");
    sw_buf_dispose(&b);
}

static void test_buf_printf(void **state)
{
    sw_buf b = SW_BUF_INIT(1024);
    assert_int_equal(sw_buf_printf(&b, "%d-%s", 42, "x"), 0);
    size_t n;
    char *s = sw_buf_detach(&b, &n);
    assert_string_equal(s, "42-x");
    assert_int_equal(n, 4);
    sw_free(s);
}

static void test_parse_numbers(void **state)
{
    const char *p = "123abc";
    uint64_t v;
    assert_int_equal(sw_parse_u64(&p, 1000, &v), 0);
    assert_int_equal(v, 123);
    assert_string_equal(p, "abc");
    p = "1001";
    assert_int_equal(sw_parse_u64(&p, 1000, &v), SW_EINVALID);
    assert_string_equal(p, "1001");
    int64_t i;
    assert_int_equal(sw_str_to_i64("-9223372036854775808", &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(sw_str_to_i64("9223372036854775808", &i), SW_EINVALID);
    assert_int_equal(sw_str_to_i64("12x", &i), SW_EINVALID);
    assert_int_equal(sw_str_to_i64("", &i), SW_EINVALID);
}

static void test_bool_like_go(void **state)
{
    bool b;
    assert_int_equal(sw_str_to_bool("True", &b), 0);
    assert_true(b);
    assert_int_equal(sw_str_to_bool("0", &b), 0);
    assert_false(b);
    assert_int_equal(sw_str_to_bool("yes", &b), SW_EINVALID);
}

static void test_utf8(void **state)
{
    (void)state;
    assert_int_equal(sw_utf8_seq("a"), 1);
    assert_int_equal(sw_utf8_seq("\xc3\xa9"), 2);         /* é */
    assert_int_equal(sw_utf8_seq("\xe2\x82\xac"), 3);     /* € */
    assert_int_equal(sw_utf8_seq("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    assert_int_equal(sw_utf8_seq("\xff"), 0);
    assert_int_equal(sw_utf8_seq("\x80"), 0);             /* a stray continuation byte */
    assert_int_equal(sw_utf8_seq("\xc0\xaf"), 0);         /* overlong '/' */
    assert_int_equal(sw_utf8_seq("\xe0\x80\xaf"), 0);     /* overlong, 3 bytes */
    assert_int_equal(sw_utf8_seq("\xed\xa0\x80"), 0);     /* a surrogate */
    assert_int_equal(sw_utf8_seq("\xf4\x90\x80\x80"), 0); /* past U+10FFFF */
    assert_int_equal(sw_utf8_seq("\xe2\x82"), 0);         /* cut short by the NUL */
    char *c = sw_utf8_clean("ok \xc3\xa9 \xff\xe2\x82 end");
    assert_string_equal(c, "ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
    sw_free(c);
    assert_null(sw_utf8_clean(NULL));
}

static void test_base64(void **state)
{
    char *e = sw_base64_encode("hello", 5);
    assert_string_equal(e, "aGVsbG8=");
    unsigned char *d;
    size_t n;
    assert_int_equal(sw_base64_decode(e, strlen(e), &d, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(d, "hello", 5);
    sw_free(d);
    sw_free(e);
    e = sw_base64url_encode("\xff\xfe", 2);
    assert_string_equal(e, "__4");
    assert_int_equal(sw_base64url_decode(e, &d, &n), 0);
    assert_int_equal(n, 2);
    sw_free(d);
    sw_free(e);
    assert_int_equal(sw_base64_decode("abc", 3, &d, &n), SW_EINVALID);
}

static void test_time(void **state)
{
    char out[64];
    sw_time_format(0, out, sizeof(out));
    assert_string_equal(out, "1970-01-01T00:00:00Z");
    int64_t t;
    assert_int_equal(sw_time_parse("2024-02-29T12:00:00Z", &t), 0);
    sw_time_format(t, out, sizeof(out));
    assert_string_equal(out, "2024-02-29T12:00:00Z");
    assert_int_equal(sw_time_parse("2024-02-29T14:00:00+02:00", &t), 0);
    sw_time_format(t, out, sizeof(out));
    assert_string_equal(out, "2024-02-29T12:00:00Z");
    assert_int_equal(sw_time_parse("2024-13-01T00:00:00Z", &t), SW_EINVALID);
    sw_time_human(45, out, sizeof(out));
    assert_string_equal(out, "45s");
    sw_time_human(312, out, sizeof(out));
    assert_string_equal(out, "5m12s");
    sw_time_human(3 * 3600 + 4 * 60, out, sizeof(out));
    assert_string_equal(out, "3h4m");
    sw_time_human(2 * 86400 + 5 * 3600, out, sizeof(out));
    assert_string_equal(out, "2d5h");
    sw_time_human(400 * 86400, out, sizeof(out));
    assert_string_equal(out, "400d");
}

static void test_json_same(void **state)
{
    json_t *a = json_pack("{s:i}", "x", 1), *b = json_pack("{s:i}", "x", 1), *n = json_null();
    assert_false(json_equal(NULL, NULL)); /* why sw_json_same exists */
    assert_true(sw_json_same(NULL, NULL));
    assert_true(sw_json_same(NULL, n));
    assert_true(sw_json_same(a, b));
    assert_false(sw_json_same(a, NULL));
    assert_false(sw_json_same(n, b));
    json_decref(a);
    json_decref(b);
    json_decref(n);
}

static void test_json_depth(void **state)
{
    char deep[300];
    memset(deep, '[', 150);
    memset(deep + 150, ']', 150);
    json_t *j = NULL;
    assert_int_equal(sw_json_parse(deep, 300, 64, 0, &j), SW_EBADREQUEST);
    assert_non_null(strstr(sw_error_msg(), "depth"));
    const char *s = "{\"a\":\"[[[[\",\"b\":{\"c\":1}}";
    assert_int_equal(sw_json_parse(s, strlen(s), 2, 0, &j), 0);
    int64_t v;
    assert_true(sw_json_int_at(j, "b.c", &v));
    assert_int_equal(v, 1);
    json_decref(j);
    assert_int_equal(sw_json_parse("{\"a\":1,\"a\":2}", 13, 8, SW_JSON_STRICT_DUPLICATES, &j),
                     SW_EBADREQUEST);
    assert_int_equal(sw_json_parse("{", 1, 8, 0, &j), SW_EBADREQUEST);

    /* sw_json_depth counts container levels like the parser's limit, and stops at limit + 1 */
    json_t *scalar = json_integer(1), *v64 = json_array(), *cur = v64;
    assert_int_equal(sw_json_depth(scalar, 64), 0);
    for (int i = 1; i < 64; i++) { /* 64 nested arrays: the most the parser takes */
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    assert_int_equal(sw_json_depth(v64, 64), 64);
    json_array_append_new(cur, json_object()); /* one more */
    assert_int_equal(sw_json_depth(v64, 64), 65);
    assert_int_equal(sw_json_depth(v64, 10), 11);
    char *text = sw_json_dumps(v64, NULL);
    assert_int_equal(sw_json_parse(text, strlen(text), 64, 0, &j), SW_EBADREQUEST);
    sw_free(text);
    json_decref(v64);
    json_decref(scalar);
}

static void test_path_clean(void **state)
{
    char out[32];
    assert_int_equal(sw_path_clean("/a//b/./c/", false, out, sizeof(out)), 0);
    assert_string_equal(out, "a/b/c");
    assert_int_equal(sw_path_clean("a/b/../c", false, out, sizeof(out)), 0);
    assert_string_equal(out, "a/c");
    assert_int_equal(sw_path_clean("a/../..", false, out, sizeof(out)), SW_EINVALID);
    assert_int_equal(sw_path_clean("/../x", true, out, sizeof(out)), 0);
    assert_string_equal(out, "x");
    assert_int_equal(sw_path_clean(".", false, out, sizeof(out)), 0);
    assert_string_equal(out, "");
    assert_int_equal(
        sw_path_clean("aaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb", false, out, sizeof(out)), SW_ELIMIT);
}

/* sw_path_write replaces a file atomically with the mode asked for and leaves no temp file;
 * sw_path_read reads it back, refuses it past max and says ENOTFOUND for a missing one. */
static void test_path_read_write(void **state)
{
    (void)state;
    char root[] = "/tmp/sw-test-rw-XXXXXX", p[256], tmp[300], *text = NULL;
    size_t len = 0;
    struct stat st;
    assert_non_null(mkdtemp(root));
    snprintf(p, sizeof(p), "%s/secret", root);
    snprintf(tmp, sizeof(tmp), "%s.tmp", p);
    assert_int_equal(sw_path_read(p, 100, false, &text, &len), SW_ENOTFOUND);
    FILE *f = fopen(p, "w"); /* an existing file, mode 0644 */
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(p, 0644), 0);
    assert_int_equal(sw_path_write(p, "first", 5, 0600), 0);
    /* a leftover temp file that is a symlink: removed, its target untouched */
    char target[300];
    snprintf(target, sizeof(target), "%s/target", root);
    f = fopen(target, "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(target, tmp), 0);
    assert_int_equal(sw_path_write(p, "second!", 7, 0600), 0);
    assert_int_equal(sw_path_read(target, 100, false, &text, &len), 0);
    assert_string_equal(text, "keep");
    sw_free(text);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(sw_path_read(p, 100, false, &text, &len), 0);
    assert_int_equal(len, 7);
    assert_string_equal(text, "second!");
    sw_free(text);
    assert_int_equal(sw_path_read(p, 6, false, &text, &len), SW_EINVALID);
    snprintf(tmp, sizeof(tmp), "%s/missing-dir/x", root);
    assert_true(sw_path_write(tmp, "x", 1, 0600) < 0);
    assert_int_equal(sw_path_remove_tree(root), 0);
}

/* sw_path_remove_tree: a nested tree goes, a symlink in it is removed without following it. */
static void test_path_remove_tree(void **state)
{
    char root[] = "/tmp/sw-test-rmtree-XXXXXX", outside[] = "/tmp/sw-test-keep-XXXXXX";
    char p[256];
    assert_non_null(mkdtemp(root));
    int fd = mkstemp(outside);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof(p), "%s/a", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/b", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/b/file", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/a/link", root);
    assert_int_equal(symlink(outside, p), 0);
    assert_int_equal(sw_path_remove_tree(root), 0);
    assert_int_equal(access(root, F_OK), -1);
    assert_int_equal(access(outside, F_OK), 0);     /* the link's target stays */
    assert_int_equal(sw_path_remove_tree(root), 0); /* already gone */
    assert_int_equal(sw_path_remove_tree(""), 0);
    unlink(outside);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_cap_is_sticky),
        cmocka_unit_test(test_buf_printf),
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_bool_like_go),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_json_same),
        cmocka_unit_test(test_json_depth),
        cmocka_unit_test(test_path_clean),
        cmocka_unit_test(test_path_remove_tree),
        cmocka_unit_test(test_path_read_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
