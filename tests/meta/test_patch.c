/* Unit tests for src/meta/patch.c and smp.c: RFC 7386 merge patch, RFC 6902 JSON patch,
 * Kubernetes strategic merge patch with the core schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/patch.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <stdio.h>
#include <string.h>

enum { ALGO_MERGE, ALGO_JSON, ALGO_SMP, ALGO_SMP_NOSCHEMA };

/* Parses test JSON (any top-level value); fails the test on bad JSON. */
static json_t *parse(const char *s)
{
    json_error_t jerr;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON: %s: %s", jerr.text, s);
    return j;
}

static int run_algo(int algo, const json_t *doc, const json_t *patch, json_t **out)
{
    switch (algo) {
    case ALGO_MERGE:
        return sw_patch_merge(doc, patch, out);
    case ALGO_JSON:
        return sw_patch_json(doc, patch, out);
    case ALGO_SMP:
        return sw_patch_strategic(doc, patch, sw_smp_schema_core(), out);
    default:
        return sw_patch_strategic(doc, patch, NULL, out);
    }
}

/* Applies patch to doc and checks the result equals want; also checks doc was not modified. */
static void expect(int algo, const char *doc_s, const char *patch_s, const char *want_s)
{
    json_t *doc = parse(doc_s), *patch = parse(patch_s), *want = parse(want_s), *out = NULL;
    json_t *before = json_deep_copy(doc);
    int rc = run_algo(algo, doc, patch, &out);
    if (rc != 0)
        fail_msg("patch %s failed: %d %s", patch_s, rc, sw_error_msg());
    if (!json_equal(out, want)) {
        char *got = sw_json_dumps(out, NULL);
        print_error("got:  %s\nwant: %s\n", got, want_s);
        sw_free(got);
        fail_msg("patch %s gave the wrong result", patch_s);
    }
    assert_true(json_equal(doc, before));
    json_decref(doc);
    json_decref(patch);
    json_decref(want);
    json_decref(out);
    json_decref(before);
}

/* Applies patch to doc and checks it fails with SW_EINVALID and a message containing msg. */
static void expect_fail(int algo, const char *doc_s, const char *patch_s, const char *msg)
{
    json_t *doc = parse(doc_s), *patch = parse(patch_s), *out = NULL;
    sw_error_clear();
    int rc = run_algo(algo, doc, patch, &out);
    if (rc != SW_EINVALID)
        fail_msg("patch %s: want SW_EINVALID, got %d", patch_s, rc);
    assert_null(out);
    if (!strstr(sw_error_msg(), msg))
        fail_msg("message \"%s\" lacks \"%s\"", sw_error_msg(), msg);
    assert_null(strchr(sw_error_msg(), '\n'));
    json_decref(doc);
    json_decref(patch);
}

/* ---- RFC 7386 ---- */

static void test_patch__merge_rfc7386_appendix(void **state)
{
    static const char *cases[][3] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
        {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
        {"{\"a\":\"foo\"}", "null", "null"},
        {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect(ALGO_MERGE, cases[i][0], cases[i][1], cases[i][2]);
}

static void test_patch__merge_rfc7386_section3(void **state)
{
    expect(ALGO_MERGE,
           "{\"title\":\"Goodbye!\",\"author\":{\"givenName\":\"John\",\"familyName\":\"Doe\"},"
           "\"tags\":[\"example\",\"sample\"],\"content\":\"This will be unchanged\"}",
           "{\"title\":\"Hello!\",\"phoneNumber\":\"+01-123-456-7890\","
           "\"author\":{\"familyName\":null},\"tags\":[\"example\"]}",
           "{\"title\":\"Hello!\",\"author\":{\"givenName\":\"John\"},\"tags\":[\"example\"],"
           "\"content\":\"This will be unchanged\",\"phoneNumber\":\"+01-123-456-7890\"}");
}

/* ---- RFC 6902 ---- */

static void test_patch__json_rfc6902_appendix(void **state)
{
    static const char *cases[][3] = {
        /* A.1 - A.8, A.10, A.11, A.14, A.16 */
        {"{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
         "{\"baz\":\"qux\",\"foo\":\"bar\"}"},
        {"{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
         "{\"foo\":[\"bar\",\"qux\",\"baz\"]}"},
        {"{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
         "{\"foo\":\"bar\"}"},
        {"{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
         "{\"foo\":[\"bar\",\"baz\"]}"},
        {"{\"baz\":\"qux\",\"foo\":\"bar\"}",
         "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
         "{\"baz\":\"boo\",\"foo\":\"bar\"}"},
        {"{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
         "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
         "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}"},
        {"{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
         "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
         "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}"},
        {"{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
         "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
         "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
         "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}"},
        {"{\"foo\":\"bar\"}",
         "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
         "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}"},
        {"{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
         "{\"foo\":\"bar\",\"baz\":\"qux\"}"},
        {"{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
         "{\"/\":9,\"~1\":10}"},
        {"{\"foo\":[\"bar\"]}",
         "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
         "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect(ALGO_JSON, cases[i][0], cases[i][1], cases[i][2]);
    /* A.9, A.12, A.15 */
    expect_fail(ALGO_JSON, "{\"baz\":\"qux\"}",
                "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
                "json patch op 0: path \"/baz\" failed the test");
    expect_fail(ALGO_JSON, "{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
                "json patch op 0: path \"/baz/bat\" not found");
    expect_fail(ALGO_JSON, "{\"/\":9,\"~1\":10}",
                "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]", "failed the test");
}

static void test_patch__json_escapes_copy_and_root(void **state)
{
    expect(ALGO_JSON, "{\"a/b\":1,\"m~n\":2}",
           "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3},"
           "{\"op\":\"remove\",\"path\":\"/m~0n\"},"
           "{\"op\":\"add\",\"path\":\"/x~0~1y\",\"value\":4}]",
           "{\"a/b\":3,\"x~/y\":4}");
    expect(ALGO_JSON, "{\"a\":{\"b\":[1,2]}}",
           "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/c\"},"
           "{\"op\":\"add\",\"path\":\"/a/b/0\",\"value\":0}]",
           "{\"a\":{\"b\":[0,1,2],\"c\":{\"b\":[1,2]}}}");
    expect(ALGO_JSON, "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]");
    expect(ALGO_JSON, "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":{\"b\":2}}]",
           "{\"b\":2}");
    expect(ALGO_JSON, "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]",
           "{\"a\":1}");
    expect(ALGO_JSON, "{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a/b\",\"path\":\"/c\"}]",
           "{\"a\":{},\"c\":1}");
    expect(ALGO_JSON, "{\"a\":1}", "[]", "{\"a\":1}");
    expect(ALGO_JSON, "{\"a\":[1,{\"b\":2.0}]}",
           "[{\"op\":\"test\",\"path\":\"/a\",\"value\":[1.0,{\"b\":2}]}]",
           "{\"a\":[1,{\"b\":2.0}]}");
    expect(ALGO_JSON, "{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":3}]",
           "{\"a\":[1,2,3]}");
}

static void test_patch__json_errors(void **state)
{
    const char *doc = "{\"a\":{\"b\":1},\"l\":[1,2],\"spec\":{}}";
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/c\"}]",
                "json patch op 0: cannot move \"/a\" into its own child");
    expect_fail(ALGO_JSON, doc,
                "[{\"op\":\"test\",\"path\":\"/l/0\",\"value\":1},"
                "{\"op\":\"remove\",\"path\":\"/l/1\"},"
                "{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}]",
                "json patch op 2: path \"/spec/x\" not found");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/l/3\",\"value\":0}]", "out of range");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"remove\",\"path\":\"/l/2\"}]", "not found");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"remove\",\"path\":\"/l/-\"}]", "not found");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/l/01\",\"value\":0}]",
                "invalid array index");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/l/x\",\"value\":0}]",
                "invalid array index");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"a\",\"value\":0}]",
                "is not a JSON pointer");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":0}]",
                "is not a JSON pointer");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/a\"}]", "missing \"value\"");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"move\",\"path\":\"/a\"}]", "missing \"from\"");
    expect_fail(ALGO_JSON, doc, "[{\"path\":\"/a\"}]", "missing \"op\"");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"frob\",\"path\":\"/a\"}]", "unknown op \"frob\"");
    expect_fail(ALGO_JSON, doc, "[1]", "op 0: not a JSON object");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"remove\",\"path\":\"\"}]", "whole document");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"copy\",\"from\":\"/zz\",\"path\":\"/b\"}]",
                "path \"/zz\" not found");
    expect_fail(ALGO_JSON, doc, "[{\"op\":\"add\",\"path\":\"/a/b/c\",\"value\":0}]", "not found");
    expect_fail(ALGO_JSON, doc, "{\"op\":\"add\"}", "must be a JSON array");
}

/* A long, multi-byte, control-character path is cut to a short, valid UTF-8, one-line message. */
static void test_patch__json_message_is_short_utf8(void **state)
{
    char path[700];
    size_t n = 0;
    path[n++] = '/';
    while (n + 3 < sizeof(path)) {
        memcpy(path + n, "\xc3\xa9\n", 3);
        n += 3;
    }
    path[n] = '\0';
    json_t *doc = json_object(), *out = NULL;
    json_t *patch = json_pack("[{s:s,s:s}]", "op", "remove", "path", path);
    assert_int_equal(sw_patch_json(doc, patch, &out), SW_EINVALID);
    const char *msg = sw_error_msg();
    assert_true(strlen(msg) < 200);
    assert_null(strchr(msg, '\n'));
    json_t *as_json = json_string(msg); /* NULL if the message is not valid UTF-8 */
    assert_non_null(as_json);
    json_decref(as_json);
    json_decref(doc);
    json_decref(patch);
}

/* Copy ops that double the document every time stop at the copy budget. */
static void test_patch__json_copy_bomb(void **state)
{
    json_t *doc = json_pack("{s:s}", "a", "0123456789012345678901234567890123456789");
    json_t *patch = json_array(), *out = NULL;
    char path[16];
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof(path), "/b%d", i);
        json_array_append_new(patch,
                              json_pack("{s:s,s:s,s:s}", "op", "copy", "from", "", "path", path));
    }
    assert_int_equal(sw_patch_json(doc, patch, &out), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "copies exceed"));
    assert_null(out);
    json_decref(doc);
    json_decref(patch);
}

/* ---- strategic merge patch ---- */

static void test_patch__smp_configmap(void **state)
{
    expect(ALGO_SMP,
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cfg\"},"
           "\"data\":{\"a\":\"1\",\"b\":\"1\"}}",
           "{\"data\":{\"a\":null,\"b\":\"2\"},"
           "\"metadata\":{\"annotations\":{\"k\":\"{}\\n\"}}}",
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
           "\"metadata\":{\"name\":\"cfg\",\"annotations\":{\"k\":\"{}\\n\"}},"
           "\"data\":{\"b\":\"2\"}}");
}

#define DEPLOY                                                                                     \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"           \
    "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"d\"}},"                     \
    "\"strategy\":{\"type\":\"RollingUpdate\","                                                    \
    "\"rollingUpdate\":{\"maxSurge\":\"25%\",\"maxUnavailable\":\"25%\"}},"                        \
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":["           \
    "{\"name\":\"a\",\"image\":\"nginx:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"}],"            \
    "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]},"                                    \
    "{\"name\":\"b\",\"image\":\"busybox\"}]}}}}"

/* The body kubectl apply sent (k8s-api-compat.md section 4). */
static void test_patch__smp_deployment_apply(void **state)
{
    expect(
        ALGO_SMP, DEPLOY,
        "{\"spec\":{\"replicas\":2,\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\"},"
        "\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],"
        "\"containers\":[{\"env\":null,\"image\":\"nginx:2\",\"name\":\"a\"},"
        "{\"$patch\":\"delete\",\"name\":\"b\"}]}}}}",
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"d\"}},"
        "\"strategy\":{\"type\":\"Recreate\"},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"nginx:2\","
        "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]}]}}}}");
}

static void test_patch__smp_keyed_lists(void **state)
{
    /* a new container is appended; existing ones keep their fields */
    expect(
        ALGO_SMP, DEPLOY,
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
        "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"d\"}},"
        "\"strategy\":{\"type\":\"RollingUpdate\","
        "\"rollingUpdate\":{\"maxSurge\":\"25%\",\"maxUnavailable\":\"25%\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"nginx:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"}],"
        "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]},"
        "{\"name\":\"b\",\"image\":\"busybox\"},{\"name\":\"c\",\"image\":\"x\"}]}}}}");
    /* env merges by name, ports by containerPort */
    expect(ALGO_SMP,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\","
           "\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"Z\",\"value\":\"z\"}],"
           "\"ports\":[{\"containerPort\":80,\"name\":\"http\"}]}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\","
           "\"env\":[{\"name\":\"Y\",\"value\":\"2\"},{\"name\":\"X\",\"value\":\"9\"}],"
           "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"},{\"containerPort\":443}]}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\","
           "\"env\":[{\"name\":\"X\",\"value\":\"9\"},{\"name\":\"Z\",\"value\":\"z\"},"
           "{\"name\":\"Y\",\"value\":\"2\"}],"
           "\"ports\":[{\"containerPort\":80,\"name\":\"http\",\"protocol\":\"TCP\"},"
           "{\"containerPort\":443}]}]}}}}");
    /* CronJob pod template, volumes by name */
    expect(ALGO_SMP,
           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"1\"}],"
           "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}}}}}",
           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"2\"}],"
           "\"volumes\":[{\"name\":\"w\",\"emptyDir\":{}}]}}}}}}",
           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"2\"}],"
           "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}},{\"name\":\"w\",\"emptyDir\":{}}]}}}}}}");
    /* ServiceAccount secrets by name */
    expect(ALGO_SMP, "{\"kind\":\"ServiceAccount\",\"secrets\":[{\"name\":\"s1\"}]}",
           "{\"secrets\":[{\"name\":\"s2\"},{\"$patch\":\"delete\",\"name\":\"s1\"}]}",
           "{\"kind\":\"ServiceAccount\",\"secrets\":[{\"name\":\"s2\"}]}");
}

static void test_patch__smp_replace_directive(void **state)
{
    /* on a map */
    expect(
        ALGO_SMP,
        "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}}}}",
        "{\"spec\":{\"strategy\":{\"$patch\":\"replace\",\"type\":\"Recreate\"}}}",
        "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
    /* on a keyed list */
    expect(
        ALGO_SMP,
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},"
        "{\"name\":\"b\"}]}}}}",
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"$patch\":\"replace\"},"
        "{\"name\":\"z\",\"image\":\"z\"}]}}}}",
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"z\"}]}}}}");
    /* on the whole document */
    expect(ALGO_SMP, "{\"a\":1,\"b\":{\"c\":2}}", "{\"$patch\":\"replace\",\"b\":{\"d\":3}}",
           "{\"b\":{\"d\":3}}");
    /* delete on a map key, and on the document; "merge" is the default */
    expect(ALGO_SMP, "{\"a\":{\"x\":1},\"b\":2}", "{\"a\":{\"$patch\":\"delete\"}}", "{\"b\":2}");
    expect(ALGO_SMP, "{\"a\":{\"x\":1},\"b\":2}", "{\"$patch\":\"delete\"}", "{}");
    expect(ALGO_SMP, "{\"a\":{\"x\":1}}", "{\"a\":{\"$patch\":\"merge\",\"y\":2}}",
           "{\"a\":{\"x\":1,\"y\":2}}");
}

static void test_patch__smp_primitive_sets(void **state)
{
    expect(ALGO_SMP, "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
           "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\",\"zz\"]}}",
           "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
    expect(ALGO_SMP, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
           "{\"metadata\":{\"finalizers\":[\"b\",\"c\",\"c\"]}}",
           "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}");
    expect(ALGO_SMP, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
           "{\"metadata\":{\"$setElementOrder/finalizers\":[\"b\",\"a\",\"c\"],"
           "\"finalizers\":[\"c\"]}}",
           "{\"metadata\":{\"finalizers\":[\"b\",\"a\",\"c\"]}}");
    expect(ALGO_SMP, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
           "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\"],"
           "\"finalizers\":[\"d\"]}}",
           "{\"metadata\":{\"finalizers\":[\"b\",\"d\"]}}");
}

static void test_patch__smp_owner_references(void **state)
{
    expect(ALGO_SMP,
           "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u1\",\"kind\":\"A\",\"name\":\"a\"},"
           "{\"uid\":\"u2\",\"kind\":\"B\",\"name\":\"b\"}]}}",
           "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u2\",\"controller\":true},"
           "{\"uid\":\"u3\",\"kind\":\"C\",\"name\":\"c\"}]}}",
           "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u1\",\"kind\":\"A\",\"name\":\"a\"},"
           "{\"uid\":\"u2\",\"kind\":\"B\",\"name\":\"b\",\"controller\":true},"
           "{\"uid\":\"u3\",\"kind\":\"C\",\"name\":\"c\"}]}}");
}

static void test_patch__smp_element_order(void **state)
{
    const char *doc = "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"},"
                      "{\"name\":\"b\"}]}}}}";
    expect(ALGO_SMP, doc,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":"
           "[{\"name\":\"b\"},{\"name\":\"a\"}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}"
           "}}");
    expect(ALGO_SMP, doc,
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":"
           "[{\"name\":\"c\"},{\"name\":\"a\"},{\"name\":\"b\"}],"
           "\"containers\":[{\"name\":\"c\",\"image\":\"c\"}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"c\"},"
           "{\"name\":\"a\"},{\"name\":\"b\"}]}}}}");
    /* b is server-only: it is interleaved by its live position (before c, as on the server) */
    expect(ALGO_SMP,
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"},"
           "{\"name\":\"c\"}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":"
           "[{\"name\":\"c\"},{\"name\":\"a\"}]}}}}",
           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"c\"},"
           "{\"name\":\"a\"}]}}}}");
}

static void test_patch__smp_unruled_list_replaced(void **state)
{
    expect(
        ALGO_SMP,
        "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"a\"}]}},"
        "\"tags\":[{\"name\":\"x\"}]}}",
        "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"b\"}]}},"
        "\"tags\":[{\"name\":\"y\",\"$patch\":\"merge\"},{\"$patch\":\"delete\",\"name\":\"q\"}]}}",
        "{\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"b\"}]}},"
        "\"tags\":[{\"name\":\"y\"}]}}");
}

static void test_patch__smp_errors(void **state)
{
    expect_fail(ALGO_SMP, "{\"spec\":{}}", "{\"spec\":{\"$foo\":1}}",
                "strategic merge patch: unknown directive \"$foo\" in spec");
    expect_fail(ALGO_SMP_NOSCHEMA, "{}", "{\"$bar\":1}", "unknown directive \"$bar\"");
    expect_fail(ALGO_SMP, "{}", "{\"a\":{\"$patch\":\"bogus\"}}", "unknown $patch value");
    expect_fail(ALGO_SMP, "{}", "{\"a\":{\"$retainKeys\":\"x\"}}", "$retainKeys must be");
    expect_fail(ALGO_SMP, "{}", "{\"$setElementOrder/x\":{}}", "must be a list");
    expect_fail(ALGO_SMP, "{}", "{\"$setElementOrder/\":[]}", "unknown directive");
    expect_fail(ALGO_SMP, DEPLOY,
                "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}}}",
                "lacks the merge key \"name\" in spec.template.spec.containers[]");
    expect_fail(ALGO_SMP, DEPLOY,
                "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"$patch\":\"delete\"}]}}}}",
                "$patch delete element lacks the merge key");
    expect_fail(ALGO_SMP, "{}", "[1]", "must be a JSON object");
    expect_fail(ALGO_SMP, "{}", "{\"a\":[{\"b\":{\"$nope\":1}}]}", "in a[].b");
}

/* An ImageStream has no merge keys: SMP without a schema (and with the core one) is a merge
 * patch that strips the directives. */
static void test_patch__smp_no_schema_is_merge(void **state)
{
    const char *doc =
        "{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\","
        "\"metadata\":{\"name\":\"ruby\",\"labels\":{\"a\":\"1\"},\"finalizers\":[\"f\"]},"
        "\"spec\":{\"lookupPolicy\":{\"local\":false},"
        "\"tags\":[{\"name\":\"latest\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"r:1\"}}]}}";
    const char *patch =
        "{\"metadata\":{\"labels\":{\"a\":null,\"b\":\"2\"},\"finalizers\":[\"g\"]},"
        "\"spec\":{\"lookupPolicy\":{\"local\":true},\"tags\":[{\"name\":\"2.7\"}]}}";
    const char *want =
        "{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\","
        "\"metadata\":{\"name\":\"ruby\",\"labels\":{\"b\":\"2\"},\"finalizers\":[\"g\"]},"
        "\"spec\":{\"lookupPolicy\":{\"local\":true},\"tags\":[{\"name\":\"2.7\"}]}}";
    expect(ALGO_SMP_NOSCHEMA, doc, patch, want);
    expect(ALGO_MERGE, doc, patch, want);
    expect(ALGO_SMP_NOSCHEMA, doc,
           "{\"spec\":{\"$retainKeys\":[\"tags\"],\"tags\":[{\"name\":\"x\",\"$patch\":\"merge\"}],"
           "\"$setElementOrder/tags\":[{\"name\":\"x\"}]}}",
           "{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\","
           "\"metadata\":{\"name\":\"ruby\",\"labels\":{\"a\":\"1\"},\"finalizers\":[\"f\"]},"
           "\"spec\":{\"tags\":[{\"name\":\"x\"}]}}");
}

/* Nesting far past the limit is refused by every algorithm, without a crash. */
static void test_patch__deep_nesting(void **state)
{
    json_t *patch = json_null(), *doc = json_object(), *out = NULL;
    for (int i = 0; i < SW_PATCH_MAX_DEPTH + 20; i++)
        patch = json_pack("{s:o}", "a", patch);
    assert_int_equal(sw_patch_merge(doc, patch, &out), SW_EINVALID);
    assert_int_equal(sw_patch_strategic(doc, patch, sw_smp_schema_core(), &out), SW_EINVALID);
    assert_int_equal(sw_patch_strategic(doc, patch, NULL, &out), SW_EINVALID);
    assert_null(out);
    json_decref(patch);
    json_decref(doc);
}

/* Merge keys longer than the small key buffer, and paths longer than the path buffer (no rule
 * can match there, so lists are replaced). */
static void test_patch__smp_long_keys_and_paths(void **state)
{
    char big[600];
    memset(big, 'k', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    json_t *doc = json_pack("{s:[{s:s,s:i}],s:{s:{s:[s]}}}", "secrets", "name", big, "a", 1, big,
                            "metadata", "finalizers", "x");
    json_t *patch = json_pack("{s:[{s:s,s:i}],s:{s:{s:[s],s:{s:i}}}}", "secrets", "name", big, "b",
                              2, big, "metadata", "finalizers", "y", "z", "$bad", 1);
    json_t *out = NULL;
    assert_int_equal(sw_patch_strategic(doc, patch, sw_smp_schema_core(), &out), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "unknown directive \"$bad\" in ..."));
    assert_true(strlen(sw_error_msg()) < 300);
    json_object_del(json_object_get(json_object_get(patch, big), "metadata"), "z");
    assert_int_equal(sw_patch_strategic(doc, patch, sw_smp_schema_core(), &out), 0);
    json_t *want = json_pack("{s:[{s:s,s:i,s:i}],s:{s:{s:[s]}}}", "secrets", "name", big, "a", 1,
                             "b", 2, big, "metadata", "finalizers", "y");
    assert_true(json_equal(out, want));
    json_decref(want);
    json_decref(out);
    json_decref(doc);
    json_decref(patch);
}

/* Large keyed lists merge in linear time (index, not nested scans). */
static void test_patch__smp_large_list(void **state)
{
    json_t *doc = json_object(), *patch = json_object(), *out = NULL;
    json_t *orig = json_array(), *add = json_array();
    char name[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        json_array_append_new(orig, json_pack("{s:s,s:i}", "name", name, "v", i));
        snprintf(name, sizeof(name), "c%d", i * 2);
        json_array_append_new(add, json_pack("{s:s,s:s}", "name", name, "w", "x"));
    }
    json_object_set_new(doc, "secrets", orig);
    json_object_set_new(patch, "secrets", add);
    assert_int_equal(sw_patch_strategic(doc, patch, sw_smp_schema_core(), &out), 0);
    assert_int_equal(json_array_size(json_object_get(out, "secrets")), 30000);
    assert_string_equal(sw_json_str_at(json_array_get(json_object_get(out, "secrets"), 2), "w"),
                        "x");
    json_decref(doc);
    json_decref(patch);
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch__merge_rfc7386_appendix),
        cmocka_unit_test(test_patch__merge_rfc7386_section3),
        cmocka_unit_test(test_patch__json_rfc6902_appendix),
        cmocka_unit_test(test_patch__json_escapes_copy_and_root),
        cmocka_unit_test(test_patch__json_errors),
        cmocka_unit_test(test_patch__json_message_is_short_utf8),
        cmocka_unit_test(test_patch__json_copy_bomb),
        cmocka_unit_test(test_patch__smp_configmap),
        cmocka_unit_test(test_patch__smp_deployment_apply),
        cmocka_unit_test(test_patch__smp_keyed_lists),
        cmocka_unit_test(test_patch__smp_replace_directive),
        cmocka_unit_test(test_patch__smp_primitive_sets),
        cmocka_unit_test(test_patch__smp_owner_references),
        cmocka_unit_test(test_patch__smp_element_order),
        cmocka_unit_test(test_patch__smp_unruled_list_replaced),
        cmocka_unit_test(test_patch__smp_errors),
        cmocka_unit_test(test_patch__smp_no_schema_is_merge),
        cmocka_unit_test(test_patch__deep_nesting),
        cmocka_unit_test(test_patch__smp_long_keys_and_paths),
        cmocka_unit_test(test_patch__smp_large_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
