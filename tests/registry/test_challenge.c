/* Unit tests for src/registry/challenge: real registry headers, several challenges in one
 * header, quoted escapes, token68, missing realm, garbage and over-long input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/challenge.h"
#include "util/alloc.h"
#include "util/error.h"

#include <string.h>

static void test_challenge__docker_hub(void **state)
{
    sw_challenge v[4];
    size_t n = 99;
    assert_int_equal(sw_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
                                        "service=\"registry.docker.io\","
                                        "scope=\"repository:library/ruby:pull\"",
                                        v, 4, &n),
                     0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].scheme, "bearer");
    assert_string_equal(v[0].realm, "https://auth.docker.io/token");
    assert_string_equal(v[0].service, "registry.docker.io");
    assert_string_equal(v[0].scope, "repository:library/ruby:pull");
    assert_ptr_equal(sw_challenge_select(v, n), &v[0]);
}

static void test_challenge__basic(void **state)
{
    sw_challenge v[2];
    size_t n;
    assert_int_equal(sw_challenge_parse("Basic realm=\"Registry Realm\"", v, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].scheme, "basic");
    assert_string_equal(v[0].realm, "Registry Realm");
    assert_string_equal(v[0].service, "");
    assert_ptr_equal(sw_challenge_select(v, n), &v[0]);
    assert_int_equal(sw_challenge_parse("BASIC", v, 2, &n), 0);
    assert_string_equal(v[0].scheme, "basic");
    assert_string_equal(v[0].realm, "");
}

static void test_challenge__several(void **state)
{
    sw_challenge v[4];
    size_t n;
    const char *h = "Basic realm=\"simple\", Newauth realm=\"apps\", type=1, "
                    "title=\"Login to \\\"apps\\\"\",  Bearer realm=tok.example, "
                    "SERVICE=svc , scope=\"a b\"";
    assert_int_equal(sw_challenge_parse(h, v, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].scheme, "basic");
    assert_string_equal(v[1].scheme, "newauth");
    assert_string_equal(v[1].realm, "apps");
    assert_string_equal(v[2].scheme, "bearer");
    assert_string_equal(v[2].realm, "tok.example");
    assert_string_equal(v[2].service, "svc");
    assert_string_equal(v[2].scope, "a b");
    /* Bearer with a realm is preferred over Basic. */
    assert_ptr_equal(sw_challenge_select(v, n), &v[2]);
    /* Only the first max are stored, the rest still checked. */
    assert_int_equal(sw_challenge_parse(h, v, 1, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sw_challenge_parse("Basic, Bearer realm=x, Bad realm=\"", v, 1, &n),
                     SW_EINVALID);
    /* Empty list elements are allowed. */
    assert_int_equal(sw_challenge_parse(" , Basic realm=a,, ,Bearer realm=b ,", v, 4, &n), 0);
    assert_int_equal(n, 2);
}

static void test_challenge__escapes_and_token68(void **state)
{
    sw_challenge v[3];
    size_t n;
    assert_int_equal(sw_challenge_parse("Bearer realm=\"a\\\\b\\\"c\\d\"", v, 3, &n), 0);
    assert_string_equal(v[0].realm, "a\\b\"cd");
    assert_int_equal(sw_challenge_parse("Negotiate abc/+def==, Bearer realm=\"r\"", v, 3, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].scheme, "negotiate");
    assert_string_equal(v[1].realm, "r");
    assert_int_equal(sw_challenge_parse("Negotiate token68", v, 3, &n), 0);
    assert_int_equal(n, 1);
    /* Whitespace around '=' (BWS) is allowed. */
    assert_int_equal(sw_challenge_parse("Bearer realm = \"x\" ,scope\t=\ty", v, 3, &n), 0);
    assert_string_equal(v[0].realm, "x");
    assert_string_equal(v[0].scope, "y");
}

static void test_challenge__missing_realm(void **state)
{
    sw_challenge v[2];
    size_t n;
    assert_int_equal(sw_challenge_parse("Bearer service=\"x\"", v, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].realm, "");
    assert_null(sw_challenge_select(v, n)); /* a Bearer challenge is unusable without realm */
    assert_int_equal(sw_challenge_parse("Digest realm=\"x\", nonce=\"y\"", v, 2, &n), 0);
    assert_null(sw_challenge_select(v, n));
}

static void check_bad(const char *h)
{
    sw_challenge v[2];
    size_t n = 7;
    int rc = sw_challenge_parse(h, v, 2, &n);
    if (rc != SW_EINVALID)
        fail_msg("header \"%s\" accepted", h);
    assert_int_equal(n, 0);
    assert_non_null(strstr(sw_error_msg(), "WWW-Authenticate"));
}

static void test_challenge__garbage(void **state)
{
    check_bad("");
    check_bad("   ");
    check_bad(",,,");
    check_bad("=");
    check_bad("Bearer realm=\"unterminated");
    check_bad("Bearer realm=\"trailing backslash\\");
    check_bad("Bearer realm=\"x\" service=\"y\"");
    check_bad("Bearer realm=\"x\",realm=\"y\"");
    check_bad("Bearer \"quoted\"");
    check_bad("Bearer realm=\"a\x01\"");
    check_bad("Bearerrealm=\"x\"x");
    check_bad("Negotiate abc==, realm=x");
    check_bad("Verylongschemename1234 realm=x");
    check_bad("Bearer realm=(x)");
    sw_challenge v[1];
    size_t n;
    assert_int_equal(sw_challenge_parse(NULL, v, 1, &n), SW_EINVALID);
}

static void test_challenge__long(void **state)
{
    sw_challenge v[2];
    size_t n;
    /* A realm longer than its field is refused, not truncated. */
    char *h = sw_malloc(3000);
    memcpy(h, "Bearer realm=\"", 14);
    memset(h + 14, 'r', 1100);
    memcpy(h + 1114, "\"", 2);
    assert_int_equal(sw_challenge_parse(h, v, 2, &n), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "too long"));
    /* ... but an unknown parameter of that length is fine. */
    memcpy(h, "Bearer xxxxx=\"", 14);
    assert_int_equal(sw_challenge_parse(h, v, 2, &n), 0);
    sw_free(h);
    /* Over SW_CHALLENGE_HEADER_MAX bytes is refused outright. */
    size_t big = SW_CHALLENGE_HEADER_MAX + 10;
    h = sw_malloc(big + 1);
    memset(h, 'a', big);
    h[big] = '\0';
    assert_int_equal(sw_challenge_parse(h, v, 2, &n), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "longer than"));
    /* Many challenges: all parsed, two stored. */
    size_t end = 0;
    while (end + 7 <= SW_CHALLENGE_HEADER_MAX) {
        memcpy(h + end, "Basic, ", 7);
        end += 7;
    }
    h[end] = '\0';
    assert_int_equal(sw_challenge_parse(h, v, 2, &n), 0);
    assert_int_equal(n, 2);
    sw_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_challenge__docker_hub),
        cmocka_unit_test(test_challenge__basic),
        cmocka_unit_test(test_challenge__several),
        cmocka_unit_test(test_challenge__escapes_and_token68),
        cmocka_unit_test(test_challenge__missing_realm),
        cmocka_unit_test(test_challenge__garbage),
        cmocka_unit_test(test_challenge__long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
