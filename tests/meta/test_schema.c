/* Unit tests for src/meta/schema: schema text validation, unknown fields with full paths,
 * type mismatches, "any"/"map", built-in ObjectMeta, null values, and the OpenAPI output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/schema.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

static const char is_schema[] =
    "{\"spec\":{\"lookupPolicy\":{\"local\":\"boolean\"},\"replicas\":\"integer\","
    "\"ratio\":\"number\",\"extra\":\"any\",\"selector\":\"map\","
    "\"tags\":[{\"name\":\"string\",\"from\":{\"kind\":\"string\",\"name\":\"string\"},"
    "\"ports\":[\"integer\"]}]},"
    "\"status\":{\"dockerImageRepository\":\"string\"}}";

static sw_schema *schema;

static int setup(void **state)
{
    return sw_schema_parse(is_schema, &schema) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    sw_schema_free(schema);
    return 0;
}

/* Checks the JSON text against the schema; returns the code. */
static int check(const char *text)
{
    json_t *obj = NULL;
    if (sw_json_parse(text, strlen(text), 64, 0, &obj) < 0)
        fail_msg("bad test JSON: %s", text);
    int error = sw_schema_check(schema, obj);
    json_decref(obj);
    return error;
}

static void test_accepts_valid(void **state)
{
    assert_int_equal(check("{\"apiVersion\":\"image.openshift.io/v1\",\"kind\":\"ImageStream\","
                           "\"metadata\":{\"name\":\"ruby\",\"namespace\":\"default\","
                           "\"labels\":{\"app\":\"ruby\"},\"annotations\":{\"a/b\":\"c\"},"
                           "\"generation\":1,\"uid\":\"u\",\"resourceVersion\":\"5\","
                           "\"creationTimestamp\":\"2024-01-01T00:00:00Z\","
                           "\"deletionTimestamp\":null,\"deletionGracePeriodSeconds\":0,"
                           "\"generateName\":\"r-\",\"selfLink\":\"\",\"finalizers\":[\"x\"],"
                           "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"K\","
                           "\"name\":\"o\",\"uid\":\"u\",\"controller\":true,"
                           "\"blockOwnerDeletion\":false}],"
                           "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{}}]},"
                           "\"spec\":{\"lookupPolicy\":{\"local\":true},\"replicas\":2,"
                           "\"ratio\":1,\"tags\":[{\"name\":\"latest\",\"from\":{\"kind\":"
                           "\"DockerImage\",\"name\":\"ruby:3\"},\"ports\":[1,2]}]},"
                           "\"status\":{}}"),
                     0);
    assert_int_equal(check("{}"), 0);
    assert_int_equal(check("{\"spec\":{\"ratio\":0.5}}"), 0);
}

static void test_nulls_accepted(void **state)
{
    assert_int_equal(check("{\"spec\":null,\"status\":null,\"metadata\":{\"labels\":null}}"), 0);
    assert_int_equal(check("{\"spec\":{\"tags\":[null,{\"from\":null,\"ports\":[null]}],"
                           "\"replicas\":null,\"selector\":{\"a\":null}}}"),
                     0);
}

static void test_unknown_nested_in_list(void **state)
{
    assert_int_equal(check("{\"spec\":{\"tags\":[{\"name\":\"a\"},{\"name\":\"b\","
                           "\"from\":{\"kind\":\"x\",\"nmae\":\"y\"}}]}}"),
                     SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(),
                        "strict decoding error: unknown field \"spec.tags[1].from.nmae\"");
    assert_int_equal(check("{\"spec\":{\"tags\":[{\"fromm\":{}}]}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(),
                        "strict decoding error: unknown field \"spec.tags[0].fromm\"");
}

static void test_multiple_unknowns(void **state)
{
    assert_int_equal(check("{\"foo\":1,\"spec\":{\"bar\":{\"deep\":1},\"replicas\":1},"
                           "\"metadata\":{\"nam\":\"x\"}}"),
                     SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "strict decoding error: unknown field \"foo\", unknown "
                                        "field \"spec.bar\", unknown field \"metadata.nam\"");
    /* at most 10 are listed */
    char text[512] = "{";
    for (int i = 0; i < 12; i++) {
        char item[16];
        snprintf(item, sizeof(item), "%s\"u%d\":1", i ? "," : "", i);
        sw_strlcat(text, item, sizeof(text));
    }
    sw_strlcat(text, "}", sizeof(text));
    assert_int_equal(check(text), SW_EBADREQUEST);
    assert_non_null(strstr(sw_error_msg(), "unknown field \"u9\""));
    assert_null(strstr(sw_error_msg(), "unknown field \"u10\""));
}

static void test_type_mismatch(void **state)
{
    assert_int_equal(check("{\"spec\":{\"replicas\":\"2\"}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.replicas: expected integer, got string");
    assert_int_equal(check("{\"spec\":{\"replicas\":1.5}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.replicas: expected integer, got number");
    assert_int_equal(check("{\"spec\":{\"tags\":{}}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.tags: expected array, got object");
    assert_int_equal(check("{\"spec\":{\"tags\":[{\"ports\":[1,\"x\"]}]}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.tags[0].ports[1]: expected integer, got string");
    assert_int_equal(check("{\"spec\":{\"lookupPolicy\":{\"local\":\"yes\"}}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.lookupPolicy.local: expected boolean, got string");
    assert_int_equal(check("{\"spec\":[]}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec: expected object, got array");
    assert_int_equal(check("{\"kind\":5}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "kind: expected string, got integer");
    /* a type error wins over unknown fields */
    assert_int_equal(check("{\"zzz\":1,\"spec\":{\"replicas\":true}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.replicas: expected integer, got boolean");
    json_t *arr = json_array();
    assert_int_equal(sw_schema_check(schema, arr), SW_EBADREQUEST);
    json_decref(arr);
    assert_int_equal(sw_schema_check(NULL, NULL), 0);
}

static void test_any_and_map(void **state)
{
    assert_int_equal(check("{\"spec\":{\"extra\":{\"anything\":[1,{\"x\":null}]}}}"), 0);
    assert_int_equal(check("{\"spec\":{\"extra\":\"s\"}}"), 0);
    assert_int_equal(check("{\"spec\":{\"selector\":{\"any-key\":\"v\",\"k2\":\"\"}}}"), 0);
    assert_int_equal(check("{\"spec\":{\"selector\":{\"k\":1}}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.selector[k]: expected string, got integer");
    assert_int_equal(check("{\"spec\":{\"selector\":[\"k\"]}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "spec.selector: expected object, got array");
    assert_int_equal(check("{\"metadata\":{\"labels\":{\"app\":true}}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "metadata.labels[app]: expected string, got boolean");
}

static void test_metadata(void **state)
{
    assert_int_equal(check("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u\",\"ctrl\":true}]}}"),
                     SW_EBADREQUEST);
    assert_string_equal(
        sw_error_msg(),
        "strict decoding error: unknown field \"metadata.ownerReferences[0].ctrl\"");
    assert_int_equal(check("{\"metadata\":{\"clusterName\":\"x\"}}"), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(),
                        "strict decoding error: unknown field \"metadata.clusterName\"");
    assert_int_equal(check("{\"metadata\":{\"generation\":\"1\"}}"), SW_EBADREQUEST);
}

static void test_bad_schema_text(void **state)
{
    sw_schema *s = NULL;
    assert_int_equal(sw_schema_parse("{\"spec\":\"strin\"}", &s), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "schema: unknown type \"strin\" at spec");
    assert_int_equal(sw_schema_parse("{\"spec\":{\"a\":[\"string\",\"integer\"]}}", &s),
                     SW_EINVALID);
    assert_string_equal(sw_error_msg(), "schema: a list needs exactly one element at spec.a");
    assert_int_equal(sw_schema_parse("{\"spec\":{\"a\":[{\"b\":3}]}}", &s), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "at spec.a[].b"));
    assert_int_equal(sw_schema_parse("{\"metadata\":{}}", &s), SW_EINVALID);
    assert_int_equal(sw_schema_parse("[\"string\"]", &s), SW_EINVALID);
    assert_int_equal(sw_schema_parse("{", &s), SW_EINVALID);
    assert_int_equal(sw_schema_parse(NULL, &s), SW_EINVALID);
    assert_null(s);
    assert_int_equal(sw_schema_parse("{}", &s), 0);
    json_t *obj = json_pack("{s:s,s:{}}", "kind", "Namespace", "spec");
    assert_int_equal(sw_schema_check(s, obj), SW_EBADREQUEST);
    assert_string_equal(sw_error_msg(), "strict decoding error: unknown field \"spec\"");
    json_decref(obj);
    sw_schema_free(s);
}

static void test_openapi(void **state)
{
    json_t *o = sw_schema_openapi(schema, "image.openshift.io", "v1", "ImageStream");
    assert_string_equal(sw_json_str_at(o, "type"), "object");
    json_t *gvk = json_object_get(o, "x-kubernetes-group-version-kind");
    assert_true(json_is_array(gvk));
    assert_int_equal(json_array_size(gvk), 1);
    assert_string_equal(sw_json_str_at(json_array_get(gvk, 0), "group"), "image.openshift.io");
    assert_string_equal(sw_json_str_at(json_array_get(gvk, 0), "version"), "v1");
    assert_string_equal(sw_json_str_at(json_array_get(gvk, 0), "kind"), "ImageStream");
    json_t *props = json_object_get(o, "properties");
    assert_string_equal(sw_json_str_at(props, "apiVersion.type"), "string");
    assert_non_null(sw_json_str_at(props, "kind.description"));
    assert_string_equal(sw_json_str_at(props, "metadata.properties.name.type"), "string");
    assert_string_equal(
        sw_json_str_at(props, "metadata.properties.labels.additionalProperties.type"), "string");
    json_t *spec = json_object_get(json_object_get(props, "spec"), "properties");
    assert_string_equal(sw_json_str_at(spec, "replicas.type"), "integer");
    assert_string_equal(sw_json_str_at(spec, "replicas.format"), "int64");
    assert_string_equal(sw_json_str_at(spec, "ratio.type"), "number");
    assert_true(sw_json_bool_at(spec, "extra.x-kubernetes-preserve-unknown-fields"));
    assert_string_equal(sw_json_str_at(spec, "tags.type"), "array");
    assert_string_equal(sw_json_str_at(spec, "tags.items.type"), "object");
    assert_string_equal(sw_json_str_at(spec, "tags.items.properties.from.properties.kind.type"),
                        "string");
    assert_string_equal(sw_json_str_at(spec, "tags.items.properties.ports.items.type"), "integer");
    assert_string_equal(sw_json_str_at(spec, "lookupPolicy.properties.local.type"), "boolean");
    json_decref(o);

    o = sw_schema_openapi(NULL, "", "v1", "ConfigMap");
    assert_true(sw_json_bool_at(o, "x-kubernetes-preserve-unknown-fields"));
    assert_string_equal(
        sw_json_str_at(json_array_get(json_object_get(o, "x-kubernetes-group-version-kind"), 0),
                       "group"),
        "");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_valid),
        cmocka_unit_test(test_nulls_accepted),
        cmocka_unit_test(test_unknown_nested_in_list),
        cmocka_unit_test(test_multiple_unknowns),
        cmocka_unit_test(test_type_mismatch),
        cmocka_unit_test(test_any_and_map),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_bad_schema_text),
        cmocka_unit_test(test_openapi),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
