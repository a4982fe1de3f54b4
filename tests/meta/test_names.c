/* Unit tests for src/meta/names: each name checker at its length boundary and with
 * invalid characters, metadata labels/annotations, and generateName. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/names.h"
#include "util/error.h"
#include "util/str.h"

#include <stdlib.h>
#include <string.h>

static char *repeat(char *buf, char c, size_t n)
{
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

static void test_subdomain(void **state)
{
    char buf[300];
    assert_int_equal(sw_names_check_subdomain("example.com"), 0);
    assert_int_equal(sw_names_check_subdomain("a"), 0);
    assert_int_equal(sw_names_check_subdomain("my-name.v1.x9"), 0);
    assert_int_equal(sw_names_check_subdomain(repeat(buf, 'a', 253)), 0);
    assert_int_equal(sw_names_check_subdomain(repeat(buf, 'a', 254)), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "must be no more than 253 characters");
    const char *bad[] = {"",   "A",    "a_b",  "-a",   "a-",  ".a",
                         "a.", "a..b", "a.-b", "a-.b", "a b", "a/b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_names_check_subdomain(bad[i]), SW_EINVALID);
        assert_string_equal(
            sw_error_msg(),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    }
    assert_int_equal(sw_names_check_subdomain(NULL), SW_EINVALID);
}

static void test_dns_label(void **state)
{
    char buf[100];
    assert_int_equal(sw_names_check_label("default"), 0);
    assert_int_equal(sw_names_check_label("kube-system"), 0);
    assert_int_equal(sw_names_check_label("0a"), 0);
    assert_int_equal(sw_names_check_label(repeat(buf, 'z', 63)), 0);
    assert_int_equal(sw_names_check_label(repeat(buf, 'z', 64)), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "must be no more than 63 characters");
    assert_int_equal(sw_names_check_label("a.b"), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "must not contain dots");
    const char *bad[] = {"", "Default", "-a", "a-", "a_b", "a b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_names_check_label(bad[i]), SW_EINVALID);
        assert_non_null(strstr(sw_error_msg(), "a lowercase RFC 1123 label must consist of"));
        assert_non_null(strstr(sw_error_msg(), "(e.g. 'my-name',  or '123-abc', regex used"));
    }
}

static void test_path_segment(void **state)
{
    char buf[300];
    assert_int_equal(sw_names_check_path_segment("ruby"), 0);
    assert_int_equal(sw_names_check_path_segment("Ruby_2.7:latest"), 0);
    assert_int_equal(sw_names_check_path_segment("..."), 0);
    assert_int_equal(sw_names_check_path_segment(repeat(buf, 'x', 253)), 0);
    assert_int_equal(sw_names_check_path_segment(repeat(buf, 'x', 254)), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "must be no more than 253 characters");
    assert_int_equal(sw_names_check_path_segment("."), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "may not be '.'");
    assert_int_equal(sw_names_check_path_segment(".."), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "may not be '..'");
    assert_int_equal(sw_names_check_path_segment("a/b"), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "may not contain '/'");
    assert_int_equal(sw_names_check_path_segment("a%2f"), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "may not contain '%'");
    assert_int_equal(sw_names_check_path_segment(""), SW_EINVALID);
}

static void test_label_key(void **state)
{
    char buf[400];
    const char *good[] = {"app", "App_1", "a.b-c_d", "example.com/MyName", "app.kubernetes.io/name",
                          "9"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(sw_names_check_label_key(good[i]), 0);
    assert_int_equal(sw_names_check_label_key(repeat(buf, 'k', 63)), 0);
    assert_int_equal(sw_names_check_label_key(repeat(buf, 'k', 64)), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "name part must be no more than 63 characters");
    /* prefix of exactly 253 is fine, 254 is not */
    repeat(buf, 'p', 253);
    sw_strlcat(buf, "/n", sizeof(buf));
    assert_int_equal(sw_names_check_label_key(buf), 0);
    repeat(buf, 'p', 254);
    sw_strlcat(buf, "/n", sizeof(buf));
    assert_int_equal(sw_names_check_label_key(buf), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "prefix part must be no more than 253 characters");

    assert_int_equal(sw_names_check_label_key(""), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "name part must be non-empty");
    assert_int_equal(sw_names_check_label_key("a b"), SW_EINVALID);
    assert_string_equal(
        sw_error_msg(),
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
    assert_int_equal(sw_names_check_label_key("_a"), SW_EINVALID);
    assert_int_equal(sw_names_check_label_key("a-"), SW_EINVALID);
    assert_int_equal(sw_names_check_label_key("/a"), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "prefix part must be non-empty");
    assert_int_equal(sw_names_check_label_key("Example.com/a"), SW_EINVALID);
    assert_true(strncmp(sw_error_msg(), "prefix part a lowercase RFC 1123 subdomain", 42) == 0);
    assert_int_equal(sw_names_check_label_key("a.com/"), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "name part must be non-empty");
    assert_int_equal(sw_names_check_label_key("a/b/c"), SW_EINVALID);
    assert_true(strncmp(sw_error_msg(), "a qualified name must consist of", 31) == 0);
    assert_non_null(strstr(sw_error_msg(), "with an optional DNS subdomain prefix and '/'"));
    /* annotation keys: the prefix is checked case-insensitively */
    assert_int_equal(sw_names_check_annotation_key("Example.COM/Thing"), 0);
    assert_int_equal(sw_names_check_annotation_key("a b"), SW_EINVALID);
}

static void test_label_value(void **state)
{
    char buf[100];
    assert_int_equal(sw_names_check_label_value(""), 0);
    assert_int_equal(sw_names_check_label_value(NULL), 0);
    assert_int_equal(sw_names_check_label_value("MyValue"), 0);
    assert_int_equal(sw_names_check_label_value("my_value.1-2"), 0);
    assert_int_equal(sw_names_check_label_value(repeat(buf, 'v', 63)), 0);
    assert_int_equal(sw_names_check_label_value(repeat(buf, 'v', 64)), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "must be no more than 63 characters");
    const char *bad[] = {"a b", "-a", "a.", "a/b", "é"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_names_check_label_value(bad[i]), SW_EINVALID);
        assert_true(
            strncmp(sw_error_msg(), "a valid label must be an empty string or consist", 48) == 0);
    }
}

static void test_meta(void **state)
{
    json_t *m = json_pack("{s:{s:s,s:s},s:{s:s}}", "labels", "app", "ruby", "tier", "",
                          "annotations", "Example.com/X", "anything goes: \n");
    assert_int_equal(sw_names_check_meta(m), 0);
    assert_int_equal(sw_names_check_meta(NULL), 0);

    json_object_set_new(json_object_get(m, "labels"), "a b", json_string("x"));
    assert_int_equal(sw_names_check_meta(m), SW_EINVALID);
    assert_true(strncmp(sw_error_msg(),
                        "metadata.labels: Invalid value: \"a b\": name part must consist of",
                        63) == 0);
    json_object_del(json_object_get(m, "labels"), "a b");

    json_object_set_new(json_object_get(m, "labels"), "ok", json_string("a \"b\""));
    assert_int_equal(sw_names_check_meta(m), SW_EINVALID);
    assert_true(strncmp(sw_error_msg(),
                        "metadata.labels: Invalid value: \"a \\\"b\\\"\": a valid label must be",
                        57) == 0);
    json_object_set_new(json_object_get(m, "labels"), "ok", json_integer(3));
    assert_int_equal(sw_names_check_meta(m), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "must be a string"));
    json_object_del(json_object_get(m, "labels"), "ok");

    json_object_set_new(json_object_get(m, "annotations"), "bad key!", json_string("v"));
    assert_int_equal(sw_names_check_meta(m), SW_EINVALID);
    assert_true(strncmp(sw_error_msg(), "metadata.annotations: Invalid value: \"bad key!\"", 47) ==
                0);
    json_object_del(json_object_get(m, "annotations"), "bad key!");

    /* total annotation size: 256 KiB is fine, one more byte is not */
    size_t n = 256 * 1024 - strlen("Example.com/X") - strlen("anything goes: \n") - 1;
    char *big = malloc(n + 2);
    memset(big, 'x', n + 1);
    big[n] = '\0';
    json_object_set_new(json_object_get(m, "annotations"), "k", json_string(big));
    assert_int_equal(sw_names_check_meta(m), 0);
    big[n] = 'x';
    big[n + 1] = '\0';
    json_object_set_new(json_object_get(m, "annotations"), "k", json_string(big));
    assert_int_equal(sw_names_check_meta(m), SW_EINVALID);
    assert_string_equal(sw_error_msg(),
                        "metadata.annotations: Too long: must have at most 262144 bytes");
    free(big);
    json_decref(m);
}

static void test_generate(void **state)
{
    const char *alphabet = "bcdfghjklmnpqrstvwxz2456789";
    char out[64];
    for (int round = 0; round < 50; round++) {
        sw_names_generate("gen-", out, sizeof(out));
        assert_int_equal(strlen(out), 9);
        assert_memory_equal(out, "gen-", 4);
        for (size_t i = 4; i < 9; i++)
            assert_non_null(strchr(alphabet, out[i]));
    }
    char base[100];
    repeat(base, 'b', 80);
    sw_names_generate(base, out, sizeof(out));
    assert_int_equal(strlen(out), 63);
    assert_int_equal(sw_names_check_label(out), 0);
    sw_names_generate(NULL, out, sizeof(out));
    assert_int_equal(strlen(out), 5);
    char small[4];
    sw_names_generate("abc-", small, sizeof(small));
    assert_string_equal(small, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subdomain),    cmocka_unit_test(test_dns_label),
        cmocka_unit_test(test_path_segment), cmocka_unit_test(test_label_key),
        cmocka_unit_test(test_label_value),  cmocka_unit_test(test_meta),
        cmocka_unit_test(test_generate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
