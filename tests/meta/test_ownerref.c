/* Unit tests for src/meta/ownerref: ownerReferences validation in apimachinery's words (each
 * required field, the banned v1 Event owner, two controllers), and the finalizer rules a
 * deletion applies (both GC finalizers, no new finalizers once deleting, the set a propagation
 * policy leaves). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/ownerref.h"
#include "util/error.h"
#include "util/json.h"

#include <string.h>

static json_t *parse(const char *s)
{
    json_t *j = NULL;
    assert_int_equal(sw_json_parse(s, strlen(s), 32, 0, &j), 0);
    return j;
}

static void expect_refs(const char *refs, int code, const char *msg)
{
    json_t *j = parse(refs);
    assert_int_equal(sw_ownerref_validate(j), code);
    if (msg)
        assert_string_equal(sw_error_msg(), msg);
    json_decref(j);
}

static void test_validate(void **state)
{
    expect_refs("[]", 0, NULL);
    assert_int_equal(sw_ownerref_validate(NULL), 0);
    expect_refs("[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"1\"}]", 0,
                NULL);
    expect_refs("[{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"name\":\"a\","
                "\"uid\":\"1\",\"controller\":true,\"blockOwnerDeletion\":true}]",
                0, NULL);
    expect_refs("[{\"apiVersion\":\"apps/\",\"kind\":\"K\",\"name\":\"a\",\"uid\":\"1\"}]",
                SW_EINVALID,
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must "
                "not be empty");
    expect_refs("[{\"kind\":\"K\",\"name\":\"a\",\"uid\":\"1\"}]", SW_EINVALID,
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be "
                "empty");
    expect_refs("[{\"apiVersion\":\"v1\",\"name\":\"a\",\"uid\":\"1\"}]", SW_EINVALID,
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty");
    expect_refs("[{\"apiVersion\":\"v1\",\"kind\":\"K\",\"uid\":\"1\"}]", SW_EINVALID,
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty");
    expect_refs("[{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"a\"}]", SW_EINVALID,
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty");
    expect_refs("[{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"a\",\"uid\":\"\"}]", SW_EINVALID,
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty");
    expect_refs("[{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"1\"}]",
                SW_EINVALID,
                "metadata.ownerReferences: Invalid value: \"e\": /v1, Kind=Event is disallowed "
                "from being an owner");
    /* events.k8s.io Events may own */
    expect_refs("[{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"name\":\"e\","
                "\"uid\":\"1\"}]",
                0, NULL);
    expect_refs("[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"a\",\"uid\":\"1\","
                "\"controller\":true},{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                "\"name\":\"b\",\"uid\":\"2\",\"controller\":false},{\"apiVersion\":\"apps/v1\","
                "\"kind\":\"Deployment\",\"name\":\"c\",\"uid\":\"3\",\"controller\":true}]",
                SW_EINVALID,
                "metadata.ownerReferences: Invalid value: \"Deployment/c\": Only one reference "
                "can have Controller set to true. Found \"true\" in references for ReplicaSet/a "
                "and Deployment/c");
    expect_refs("{}", SW_EINVALID, "metadata.ownerReferences: Invalid value: must be a list");
    expect_refs("[3]", SW_EINVALID,
                "metadata.ownerReferences[0]: Invalid value: must be an "
                "object");
}

static void test_split(void **state)
{
    char g[16], v[8];
    assert_int_equal(sw_ownerref_split_api_version("apps/v1", g, sizeof(g), v, sizeof(v)), 0);
    assert_string_equal(g, "apps");
    assert_string_equal(v, "v1");
    assert_int_equal(sw_ownerref_split_api_version("v1", g, sizeof(g), v, sizeof(v)), 0);
    assert_string_equal(g, "");
    assert_string_equal(v, "v1");
    assert_int_equal(sw_ownerref_split_api_version("", g, sizeof(g), v, sizeof(v)), SW_EINVALID);
    assert_int_equal(sw_ownerref_split_api_version(NULL, g, sizeof(g), v, sizeof(v)), SW_EINVALID);
    assert_int_equal(sw_ownerref_split_api_version("a/b/c", g, sizeof(g), v, sizeof(v)),
                     SW_EINVALID);
    assert_int_equal(sw_ownerref_split_api_version("a-very-long-group.example.com/v1", g, sizeof(g),
                                                   v, sizeof(v)),
                     SW_EINVALID);
}

static void test_finalizers(void **state)
{
    json_t *both = parse("[\"a/b\",\"orphan\",\"foregroundDeletion\"]");
    assert_int_equal(sw_finalizers_check_gc(both), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "metadata.finalizers: Invalid value: \"orphan\": "
                                        "finalizer orphan and foregroundDeletion cannot be both "
                                        "set");
    json_t *old = parse("[\"a\",\"c\"]"), *same = parse("[\"c\",\"a\",\"a\"]");
    json_t *fewer = parse("[\"c\"]"), *more = parse("[\"z\",\"a\",\"b\",\"b\"]");
    assert_int_equal(sw_finalizers_check_no_new(same, old), 0);
    assert_int_equal(sw_finalizers_check_no_new(fewer, old), 0);
    assert_int_equal(sw_finalizers_check_no_new(NULL, old), 0);
    assert_int_equal(sw_finalizers_check_no_new(more, old), SW_EINVALID);
    assert_string_equal(sw_error_msg(),
                        "metadata.finalizers: Forbidden: no new finalizers can be added if the "
                        "object is being deleted, found new finalizers []string{\"b\", \"z\"}");
    assert_true(sw_finalizers_same_set(old, same));
    assert_false(sw_finalizers_same_set(old, fewer));
    assert_true(sw_finalizers_same_set(NULL, NULL));

    /* the set a DELETE leaves: GC finalizers replaced as the policy asks, others kept */
    json_t *f = sw_finalizers_for_delete(both, false, false);
    json_t *want = parse("[\"a/b\"]");
    assert_true(json_equal(f, want));
    json_decref(f);
    json_decref(want);
    f = sw_finalizers_for_delete(old, true, false);
    want = parse("[\"a\",\"c\",\"orphan\"]");
    assert_true(json_equal(f, want));
    json_decref(f);
    json_decref(want);
    f = sw_finalizers_for_delete(NULL, false, true);
    want = parse("[\"foregroundDeletion\"]");
    assert_true(json_equal(f, want));
    json_decref(f);
    json_decref(want);
    assert_int_equal(sw_propagation_parse("Foreground"), SW_PROPAGATE_FOREGROUND);
    assert_int_equal(sw_propagation_parse("background"), SW_PROPAGATE_UNSET);
    assert_string_equal(sw_propagation_name(SW_PROPAGATE_ORPHAN), "Orphan");
    json_decref(both);
    json_decref(old);
    json_decref(same);
    json_decref(fewer);
    json_decref(more);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_finalizers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
