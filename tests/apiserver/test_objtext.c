/* Unit tests for objtext: resourceVersion and computed-status splicing into stored JSON, checked
 * against what decoding and re-encoding would give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "apiserver/objtext.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <string.h>

static char *render(const char *in, int64_t rev, const char *key, const char *value)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    int error = sw_objtext_render(in, strlen(in), rev, key, value, &b);
    if (error < 0) {
        sw_buf_dispose(&b);
        return NULL;
    }
    return sw_buf_detach(&b, NULL);
}

/* The rendered text must parse and equal the expected JSON. */
static void expect_json(const char *got, const char *want)
{
    json_t *a = NULL, *b = NULL;
    assert_non_null(got);
    assert_int_equal(sw_json_parse(got, strlen(got), 64, SW_JSON_STRICT_DUPLICATES, &a), 0);
    assert_int_equal(sw_json_parse(want, strlen(want), 64, 0, &b), 0);
    if (!json_equal(a, b))
        fail_msg("got %s want %s", got, want);
    json_decref(a);
    json_decref(b);
}

static void test_resource_version(void **state)
{
    char *s = render("{\"kind\":\"X\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"metadata\":1}}", 42,
                     NULL, NULL);
    expect_json(s, "{\"kind\":\"X\",\"metadata\":{\"resourceVersion\":\"42\",\"name\":\"a\"},"
                   "\"spec\":{\"metadata\":1}}");
    sw_free(s);
    s = render("{\"metadata\":{}}", 7, NULL, NULL);
    expect_json(s, "{\"metadata\":{\"resourceVersion\":\"7\"}}");
    sw_free(s);
    /* Strings that look like keys, escapes and nesting do not confuse the scanner. */
    s = render(
        "{\"a\":\"\\\"metadata\\\":{\",\"b\":[{\"metadata\":{}}],\"metadata\":{\"x\":\"}\"}}", 1,
        NULL, NULL);
    expect_json(s, "{\"a\":\"\\\"metadata\\\":{\",\"b\":[{\"metadata\":{}}],\"metadata\":{"
                   "\"resourceVersion\":\"1\",\"x\":\"}\"}}");
    sw_free(s);
}

static void test_status_insert_and_replace(void **state)
{
    char *s = render("{\"metadata\":{\"name\":\"a\"}}", 3, "repo", "r/ns/a");
    expect_json(s, "{\"metadata\":{\"resourceVersion\":\"3\",\"name\":\"a\"},"
                   "\"status\":{\"repo\":\"r/ns/a\"}}");
    sw_free(s);
    s = render("{\"metadata\":{},\"status\":{\"tags\":[]}}", 3, "repo", "x");
    expect_json(s, "{\"metadata\":{\"resourceVersion\":\"3\"},\"status\":{\"repo\":\"x\","
                   "\"tags\":[]}}");
    sw_free(s);
    s = render("{\"metadata\":{},\"status\":{\"repo\":\"old\",\"tags\":[1]}}", 3, "repo", "new");
    expect_json(s, "{\"metadata\":{\"resourceVersion\":\"3\"},\"status\":{\"repo\":\"new\","
                   "\"tags\":[1]}}");
    sw_free(s);
    s = render("{\"metadata\":{},\"status\":{\"repo\":\"old\"}}", 3, "repo", "q\"uote");
    expect_json(s,
                "{\"metadata\":{\"resourceVersion\":\"3\"},\"status\":{\"repo\":\"q\\\"uote\"}}");
    sw_free(s);
    s = render("{\"metadata\":{},\"status\":{}}", 3, "repo", "v");
    expect_json(s, "{\"metadata\":{\"resourceVersion\":\"3\"},\"status\":{\"repo\":\"v\"}}");
    sw_free(s);
    /* A client's key order is kept when stored: status may come before metadata. */
    s = render("{\"status\":{\"repo\":\"old\",\"t\":1},\"metadata\":{\"name\":\"a\"}}", 4, "repo",
               "new");
    expect_json(s, "{\"status\":{\"repo\":\"new\",\"t\":1},\"metadata\":{\"resourceVersion\":"
                   "\"4\",\"name\":\"a\"}}");
    sw_free(s);
    s = render("{\"status\":{},\"metadata\":{}}", 5, "repo", "v");
    expect_json(s, "{\"status\":{\"repo\":\"v\"},\"metadata\":{\"resourceVersion\":\"5\"}}");
    sw_free(s);
}

static void test_rejects_non_objects(void **state)
{
    assert_null(render("[1,2]", 1, NULL, NULL));
    assert_null(render("{\"metadata\":\"x\"}", 1, NULL, NULL));
    assert_null(render("{\"metadata\":{", 1, NULL, NULL));
    assert_null(render("{\"a\":\"unterminated}", 1, NULL, NULL));
    assert_null(render("", 1, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_version),
        cmocka_unit_test(test_status_insert_and_replace),
        cmocka_unit_test(test_rejects_non_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
