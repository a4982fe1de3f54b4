/* store/etcdscan: the Range reply read without jansson, and every shape it must decline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/etcdscan.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

/* A reply as etcd 3.4's gateway writes it, for keys /registry/cm/<i>. */
static char *reply_of(int n, bool more)
{
    size_t cap = 4096 + (size_t)n * 256, len = 0;
    char *b = sw_malloc(cap);
    len += (size_t)snprintf(b + len, cap - len,
                            "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":"
                            "\"10276657743932975437\",\"revision\":\"%d\",\"raft_term\":\"2\"}",
                            100 + n);
    if (n) {
        len += (size_t)snprintf(b + len, cap - len, ",\"kvs\":[");
        for (int i = 0; i < n; i++) {
            char key[64], val[64];
            snprintf(key, sizeof(key), "/registry/cm/%d", i);
            snprintf(val, sizeof(val), "{\"v\":%d}", i);
            char *k = sw_base64_encode(key, strlen(key)), *v = sw_base64_encode(val, strlen(val));
            len += (size_t)snprintf(b + len, cap - len,
                                    "%s{\"key\":\"%s\",\"create_revision\":\"%d\",\"mod_"
                                    "revision\":\"%d\",\"version\":\"1\",\"value\":\"%s\"}",
                                    i ? "," : "", k, 10 + i, 50 + i, v);
            sw_free(k);
            sw_free(v);
        }
        len += (size_t)snprintf(b + len, cap - len, "]");
    }
    snprintf(b + len, cap - len, "%s,\"count\":\"%d\"}\n", more ? ",\"more\":true" : "", n);
    return b;
}

static int scan(const char *text, sw_kv_list *l, int64_t *rev, bool *more)
{
    return sw_etcdscan_range(text, strlen(text), "/registry", 9, l, rev, more);
}

static void test_reads_a_page(void **state)
{
    (void)state;
    char *t = reply_of(700, true);
    sw_kv_list l = {0};
    int64_t rev = 0;
    bool more = false;
    assert_int_equal(scan(t, &l, &rev, &more), 0);
    assert_int_equal(l.count, 700);
    assert_int_equal(rev, 800);
    assert_true(more);
    assert_string_equal(l.items[699].key, "/cm/699");
    assert_string_equal(l.items[699].value, "{\"v\":699}");
    assert_int_equal(l.items[699].value_len, strlen("{\"v\":699}"));
    assert_int_equal(l.items[699].create_rev, 709);
    assert_int_equal(l.items[699].mod_rev, 749);
    /* a second page appends */
    sw_free(t);
    t = reply_of(3, false);
    assert_int_equal(scan(t, &l, &rev, &more), 0);
    assert_int_equal(l.count, 703);
    assert_false(more);
    assert_string_equal(l.items[702].key, "/cm/2");
    sw_kv_list_dispose(&l);
    sw_free(t);
    /* no kvs at all (an empty range), and an empty value */
    assert_int_equal(scan("{\"header\":{\"revision\":\"7\"}}", &l, &rev, &more), 0);
    assert_int_equal(l.count, 0);
    assert_int_equal(rev, 7);
    assert_int_equal(scan("{\"header\":{\"revision\":\"8\"},\"kvs\":[{\"key\":\"L3JlZ2lzdHJ5L2E=\","
                          "\"mod_revision\":\"3\"}]}",
                          &l, &rev, &more),
                     0);
    assert_string_equal(l.items[0].key, "/a");
    assert_string_equal(l.items[0].value, "");
    sw_kv_list_dispose(&l);
}

/* Two replies captured from Debian's etcd 3.4.23 (a value with "+" in its base64; an empty
 * value, which the gateway leaves out; "more" only when true). */
static void test_etcd_3_4_replies(void **state)
{
    (void)state;
    static const char page[] =
        "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":"
        "\"10276657743932975437\",\"revision\":\"3\",\"raft_term\":\"2\"},\"kvs\":[{\"key\":"
        "\"L3JlZ2lzdHJ5L2NvbmZpZ21hcHMvZGVmYXVsdC9h\",\"create_revision\":\"2\",\"mod_revision\":"
        "\"2\",\"version\":\"1\",\"value\":\"eyJraW5kIjoiQ29uZmlnTWFwIiwiZGF0YSI6eyJ4IjoiPCY+"
        "In19\"}"
        "],\"more\":true,\"count\":\"2\"}\n";
    static const char all[] =
        "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":"
        "\"10276657743932975437\",\"revision\":\"3\",\"raft_term\":\"2\"},\"kvs\":[{\"key\":"
        "\"L3JlZ2lzdHJ5L2NvbmZpZ21hcHMvZGVmYXVsdC9h\",\"create_revision\":\"2\",\"mod_revision\":"
        "\"2\",\"version\":\"1\",\"value\":\"eyJraW5kIjoiQ29uZmlnTWFwIiwiZGF0YSI6eyJ4IjoiPCY+"
        "In19\"}"
        ",{\"key\":\"L3JlZ2lzdHJ5L2NvbmZpZ21hcHMvZGVmYXVsdC9i\",\"create_revision\":\"3\","
        "\"mod_revision\":\"3\",\"version\":\"1\"}],\"count\":\"2\"}\n";
    sw_kv_list l = {0};
    int64_t rev = 0;
    bool more = false;
    assert_int_equal(scan(page, &l, &rev, &more), 0);
    assert_int_equal(rev, 3);
    assert_true(more);
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].key, "/configmaps/default/a");
    assert_string_equal(l.items[0].value, "{\"kind\":\"ConfigMap\",\"data\":{\"x\":\"<&>\"}}");
    sw_kv_list_dispose(&l);
    assert_int_equal(scan(all, &l, &rev, &more), 0);
    assert_false(more);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.items[1].key, "/configmaps/default/b");
    assert_int_equal(l.items[1].value_len, 0);
    assert_int_equal(l.items[1].create_rev, 3);
    sw_kv_list_dispose(&l);
}

static void test_declines(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",
        "{",
        "[]",
        "{\"header\":{}}",                           /* no revision */
        "{\"header\":{\"revision\":7}}",             /* a number, not a string */
        "{\"header\":{\"revision\":\"7\"},\"x\":1}", /* a field it does not know */
        "{\"header\":{\"revision\":\"7\"}} x",       /* trailing bytes */
        "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"L2E\\u003d\"}]}", /* an escape */
        "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"L2E=\"}]}",   /* outside the prefix */
        "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"!!!!\"}]}",   /* not base64 */
        "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"value\":\"YQ==\"}]}", /* no key */
        "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"L3JlZ2lzdHJ5L2E=\"},]}",
        "{\"header\":{\"revision\":\"99999999999999999999\"}}",
        "{\"header\":{\"revision\":\"7\"},\"more\":yes}",
    };
    sw_kv_list l = {0};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t rev = -1;
        bool more = false;
        if (scan(bad[i], &l, &rev, &more) != SW_EINVALID)
            fail_msg("accepted: %s", bad[i]);
        assert_int_equal(l.count, 0);
        assert_int_equal(rev, -1);
    }
    /* a page that fails halfway leaves the list as it was */
    char *t = reply_of(5, false);
    char *cut = strstr(t, "\"count\"");
    memcpy(cut, "\"zzzzz\"", 7);
    assert_int_equal(scan(t, &l, &(int64_t){0}, &(bool){false}), SW_EINVALID);
    assert_int_equal(l.count, 0);
    sw_free(t);
    sw_kv_list_dispose(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_a_page),
        cmocka_unit_test(test_etcd_3_4_replies),
        cmocka_unit_test(test_declines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
