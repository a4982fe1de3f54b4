/* Unit tests for src/apiserver/selector: every label operator, whitespace, parse errors and
 * limits, matching sample labels; field selectors with allowed fields, escapes, != and
 * field_equals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "apiserver/selector.h"
#include "util/buf.h"
#include "util/error.h"

#include <string.h>

static json_t *labels;

static int setup(void **state)
{
    labels =
        json_pack("{s:s,s:s,s:s,s:s}", "app", "ruby", "tier", "web", "env", "", "replicas", "3");
    return 0;
}

static int teardown(void **state)
{
    json_decref(labels);
    return 0;
}

/* Parses s as a label selector and returns whether it matches the sample labels. */
static bool lmatch(const char *s)
{
    sw_selector *sel = NULL;
    int error = sw_selector_parse_labels(s, &sel);
    if (error < 0)
        fail_msg("parse of '%s' failed: %s", s ? s : "(null)", sw_error_msg());
    bool m = sw_selector_match_labels(sel, labels);
    sw_selector_free(sel);
    return m;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Expects s to fail; returns the message. */
static const char *lerr(const char *s)
{
    sw_selector *sel = NULL;
    int error = sw_selector_parse_labels(s, &sel);
    if (error != SW_EBADREQUEST)
        fail_msg("parse of '%s' returned %d", s, error);
    assert_null(sel);
    return sw_error_msg();
}

static void test_label_operators(void **state)
{
    assert_true(lmatch(NULL));
    assert_true(lmatch(""));
    assert_true(lmatch("   "));
    assert_true(lmatch("app=ruby"));
    assert_false(lmatch("app=python"));
    assert_true(lmatch("app==ruby"));
    assert_true(lmatch("app!=python"));
    assert_false(lmatch("app!=ruby"));
    assert_true(lmatch("missing!=x")); /* != matches an absent key */
    assert_true(lmatch("app in (python,ruby)"));
    assert_false(lmatch("app in (python,go)"));
    assert_false(lmatch("missing in (a)"));
    assert_true(lmatch("app notin (python,go)"));
    assert_false(lmatch("app notin (ruby)"));
    assert_true(lmatch("missing notin (a)"));
    assert_true(lmatch("app"));
    assert_false(lmatch("missing"));
    assert_true(lmatch("!missing"));
    assert_false(lmatch("!app"));
    assert_true(lmatch("replicas>2"));
    assert_false(lmatch("replicas>3"));
    assert_true(lmatch("replicas<4"));
    assert_false(lmatch("app>1")); /* not a number */
    assert_true(lmatch("env="));   /* empty value */
    assert_true(lmatch("env in ()"));
    assert_true(lmatch("env in (a,)"));
    assert_true(lmatch("in=x") == false); /* keywords are fine as keys */
    assert_true(lmatch("!in"));
}

static void test_label_and_whitespace(void **state)
{
    assert_true(lmatch("app=ruby,tier=web"));
    assert_false(lmatch("app=ruby,tier=db"));
    assert_true(lmatch("  app = ruby ,\ttier in ( web , db ) , !missing "));
    assert_true(lmatch("app,tier,env"));
    assert_true(lmatch("app.kubernetes.io/name notin (x)"));
    assert_true(lmatch("app=ruby,app=ruby"));
}

static void test_label_errors(void **state)
{
    assert_string_equal(lerr("app in (a"),
                        "unable to parse requirement: found '', expected: ',' or ')'");
    assert_string_equal(lerr("app in a"), "unable to parse requirement: found 'a', expected: '('");
    assert_string_equal(lerr("app in (a))"), "found ')', expected: ',' or 'end of string'");
    assert_string_equal(lerr("app in ((a)"),
                        "unable to parse requirement: found '(', expected: ',', ')' or identifier");
    assert_string_equal(lerr("=x"), "found '=', expected: !, identifier, or 'end of string'");
    assert_string_equal(lerr(",app"), "found ',', expected: !, identifier, or 'end of string'");
    assert_string_equal(lerr("app,"), "found '', expected: identifier after ','");
    assert_string_equal(
        lerr("a b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    assert_string_equal(lerr("app=a=b"), "found '=', expected: ',' or 'end of string'");
    assert_string_equal(lerr("app=(x)"),
                        "unable to parse requirement: found '(', expected: identifier");
    assert_string_equal(lerr("!"), "unable to parse requirement: found '', expected: identifier");
    assert_string_equal(lerr("!app=x"), "found '=', expected: ',' or 'end of string'");
    assert_true(starts_with(lerr("a@b=c"),
                            "unable to parse requirement: key: Invalid value: \"a@b\": name part"));
    assert_true(starts_with(lerr("app=a@b"), "unable to parse requirement: values[0][app]: Invalid "
                                             "value: \"a@b\": a valid label"));
    assert_string_equal(
        lerr("app>x"),
        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer");
}

static void test_label_limits(void **state)
{
    sw_buf b = SW_BUF_INIT(8192);
    for (int i = 0; i < 64; i++)
        sw_buf_printf(&b, "%sk%d", i ? "," : "", i);
    sw_selector *sel = NULL;
    assert_int_equal(sw_selector_parse_labels(sw_buf_cstr(&b), &sel), 0);
    assert_false(sw_selector_empty(sel));
    sw_selector_free(sel);
    sw_buf_puts(&b, ",k64");
    assert_non_null(strstr(lerr(sw_buf_cstr(&b)), "too many requirements"));

    sw_buf_clear(&b);
    sw_buf_puts(&b, "k in (");
    for (int i = 0; i < 65; i++)
        sw_buf_printf(&b, "%sv%d", i ? "," : "", i);
    sw_buf_puts(&b, ")");
    assert_non_null(strstr(lerr(sw_buf_cstr(&b)), "too many values"));

    sw_buf_clear(&b);
    for (int i = 0; i < 4097; i++)
        sw_buf_putc(&b, ' ');
    assert_non_null(strstr(lerr(sw_buf_cstr(&b)), "longer than 4096 bytes"));
    sw_buf_dispose(&b);

    assert_int_equal(sw_selector_parse_labels("", &sel), 0);
    assert_true(sw_selector_empty(sel));
    sw_selector_free(sel);
    assert_true(sw_selector_empty(NULL));
    assert_true(sw_selector_match_labels(NULL, NULL));
}

static const char *const allowed[] = {"metadata.name", "metadata.namespace", "spec.replicas",
                                      "spec.paused",   "status.phase",       NULL};

static bool fmatch(const char *s, const json_t *obj)
{
    sw_selector *sel = NULL;
    int error = sw_selector_parse_fields(s, allowed, &sel);
    if (error < 0)
        fail_msg("parse of '%s' failed: %s", s ? s : "(null)", sw_error_msg());
    bool m = sw_selector_match_fields(sel, obj);
    sw_selector_free(sel);
    return m;
}

static const char *ferr(const char *s)
{
    sw_selector *sel = NULL;
    int error = sw_selector_parse_fields(s, allowed, &sel);
    if (error != SW_EBADREQUEST)
        fail_msg("parse of '%s' returned %d", s, error);
    return sw_error_msg();
}

static void test_fields(void **state)
{
    json_t *obj = json_pack("{s:{s:s,s:s},s:{s:i,s:b}}", "metadata", "name", "a,b=c\\d",
                            "namespace", "default", "spec", "replicas", 3, "paused", 1);
    assert_true(fmatch(NULL, obj));
    assert_true(fmatch("", obj));
    assert_true(fmatch("metadata.namespace=default", obj));
    assert_true(fmatch("metadata.namespace==default", obj));
    assert_false(fmatch("metadata.namespace!=default", obj));
    assert_true(fmatch("metadata.namespace!=other", obj));
    assert_true(fmatch("metadata.name=a\\,b\\=c\\\\d", obj));
    assert_true(fmatch("spec.replicas=3,spec.paused=true", obj));
    assert_false(fmatch("spec.replicas=3,spec.paused=false", obj));
    assert_true(fmatch("status.phase=", obj)); /* missing = "" */
    assert_true(fmatch("status.phase!=Running", obj));
    assert_false(fmatch("status.phase=Running", obj));
    assert_true(fmatch("metadata.namespace=default,,", obj)); /* empty terms are skipped */

    assert_string_equal(ferr("spec.foo=1"), "field label not supported: spec.foo");
    assert_string_equal(ferr(" metadata.name=x"), "field label not supported:  metadata.name");
    assert_string_equal(ferr("metadata.name"),
                        "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
    assert_string_equal(ferr("metadata.name=a\\b"),
                        "invalid field selector: invalid escape sequence: \\b");
    assert_string_equal(ferr("metadata.name=a\\"),
                        "invalid field selector: invalid escape sequence: \\");
    assert_string_equal(ferr("metadata.namespace=x!=y"),
                        "invalid field selector: unescaped character in value: '='");
    assert_string_equal(ferr("metadata.name=a=b"),
                        "invalid field selector: unescaped character in value: '='");

    sw_selector *sel = NULL;
    assert_int_equal(sw_selector_parse_fields("anything.at.all=1", NULL, &sel), 0);
    sw_selector_free(sel);
    json_decref(obj);
}

static void test_field_equals(void **state)
{
    sw_selector *sel = NULL;
    assert_int_equal(
        sw_selector_parse_fields("metadata.name!=x,metadata.namespace==ns1,metadata.name=n\\,1",
                                 allowed, &sel),
        0);
    assert_string_equal(sw_selector_field_equals(sel, "metadata.namespace"), "ns1");
    assert_string_equal(sw_selector_field_equals(sel, "metadata.name"), "n,1");
    assert_null(sw_selector_field_equals(sel, "status.phase"));
    assert_false(sw_selector_empty(sel));
    sw_selector_free(sel);
    assert_int_equal(sw_selector_parse_fields("metadata.name!=x", allowed, &sel), 0);
    assert_null(sw_selector_field_equals(sel, "metadata.name"));
    sw_selector_free(sel);
    assert_null(sw_selector_field_equals(NULL, "metadata.name"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_operators), cmocka_unit_test(test_label_and_whitespace),
        cmocka_unit_test(test_label_errors),    cmocka_unit_test(test_label_limits),
        cmocka_unit_test(test_fields),          cmocka_unit_test(test_field_equals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
