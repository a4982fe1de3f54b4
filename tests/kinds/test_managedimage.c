/* Unit tests for the ManagedImage kind and controller's pure parts: defaults, validation with
 * its 422 messages, the BuildConfig spec it implies, the spec hash (what makes a rebuild) and
 * the failure backoff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controllers/managedimage.h"
#include "kinds/managedimage.h"
#include "util/error.h"
#include "util/json.h"

#include <string.h>

static const sw_kind_ctx ctx = {.image_registry = "registry.local:5000"};

static json_t *load(const char *text)
{
    json_t *j = NULL;
    assert_int_equal(sw_json_parse(text, strlen(text), 64, 0, &j), 0);
    return j;
}

#define MI(spec)                                                                                   \
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"team\",\"generation\":1},\"spec\":" spec "}"
#define GOOD                                                                                       \
    "{\"source\":{\"type\":\"Dockerfile\",\"dockerfile\":\"FROM scratch\"},\"strategy\":{"         \
    "\"dockerStrategy\":{}},\"output\":{\"to\":{\"name\":\"web\"}}}"

static json_t *created(const char *text)
{
    json_t *mi = load(text);
    assert_int_equal(sw_kind_managedimage.prepare_create(&ctx, mi), 0);
    return mi;
}

static void defaults(void **state)
{
    json_t *mi = created(MI(GOOD));
    assert_string_equal(sw_json_str_at(mi, "spec.output.to.name"), "web:latest");
    assert_string_equal(sw_json_str_at(mi, "spec.output.to.kind"), "ImageStreamTag");
    assert_string_equal(sw_json_str_at(mi, "spec.strategy.type"), "Docker");
    assert_true(sw_json_bool_at(mi, "spec.policy.rebuildOnBaseImageChange"));
    assert_int_equal(sw_mi_verify_interval(mi), 600);
    assert_int_equal(sw_kind_managedimage.validate(&ctx, mi, NULL), 0);
    char stream[64], tag[64];
    assert_true(sw_mi_output(mi, stream, sizeof(stream), tag, sizeof(tag)));
    assert_string_equal(stream, "web");
    assert_string_equal(tag, "latest");
    json_decref(mi);
}

static void expect_invalid(const char *text, const char *needle)
{
    json_t *mi = created(text);
    assert_int_equal(sw_kind_managedimage.validate(&ctx, mi, NULL), SW_EINVALID);
    if (!strstr(sw_error_msg(), needle))
        fail_msg("[%s] lacks [%s]", sw_error_msg(), needle);
    json_decref(mi);
}

static void validation(void **state)
{
    expect_invalid(
        MI("{\"strategy\":{\"type\":\"Docker\",\"dockerStrategy\":{}},\"output\":{\"to\":"
           "{\"name\":\"x:y\",\"namespace\":\"other\"}}}"),
        "spec.output.to.namespace: Invalid value: \"other\"");
    expect_invalid(
        MI("{\"strategy\":{\"type\":\"Source\"},\"output\":{\"to\":{\"name\":\"x:y\"}}}"),
        "spec.strategy.type: Unsupported value: \"Source\"");
    expect_invalid(
        MI("{\"strategy\":{\"dockerStrategy\":{}},\"output\":{\"to\":{\"name\":\"x:-y\"}}}"),
        "must be a registry tag");
    expect_invalid(MI("{\"strategy\":{\"dockerStrategy\":{}},\"output\":{\"to\":{\"kind\":"
                      "\"DockerImage\",\"name\":\"r/x:y\"}}}"),
                   "spec.output.to.kind: Unsupported value: \"DockerImage\"");
    expect_invalid(MI("{\"strategy\":{\"dockerStrategy\":{}}}"), "spec.output.to: Required value");
    expect_invalid(MI("{\"output\":{\"to\":{\"name\":\"x:y\"}}}"), "spec.strategy: Required value");
    expect_invalid(MI("{\"source\":{\"type\":\"Binary\"},\"strategy\":{\"dockerStrategy\":{}},"
                      "\"output\":{\"to\":{\"name\":\"x:y\"}}}"),
                   "spec.source.type: Unsupported value: \"Binary\"");
    expect_invalid(
        MI("{\"strategy\":{\"dockerStrategy\":{}},\"output\":{\"to\":{\"name\":\"x:y\"}},"
           "\"policy\":{\"verifyIntervalSeconds\":-1}}"),
        "spec.policy.verifyIntervalSeconds: Invalid value: -1");
    expect_invalid(
        MI("{\"strategy\":{\"dockerStrategy\":{}},\"output\":{\"to\":{\"name\":\"UP:y\"}}}"),
        "spec.output.to.name");
}

static void bc_spec(void **state)
{
    json_t *mi = created(MI("{\"source\":{\"type\":\"Dockerfile\",\"dockerfile\":\"FROM scratch\"},"
                            "\"strategy\":{\"dockerStrategy\":{}},\"output\":{\"to\":{\"name\":"
                            "\"web:v1\",\"namespace\":\"team\"}},\"policy\":{"
                            "\"failedBuildsHistoryLimit\":2}}"));
    json_t *spec = sw_mi_bc_spec(mi);
    assert_null(json_object_get(spec, "policy"));
    assert_string_equal(sw_json_str_at(spec, "runPolicy"), "Serial");
    assert_int_equal(json_array_size(json_object_get(spec, "triggers")), 0);
    assert_non_null(json_object_get(spec, "triggers"));
    int64_t v = 0;
    assert_true(sw_json_int_at(spec, "failedBuildsHistoryLimit", &v));
    assert_int_equal(v, 2);
    assert_null(sw_json_at(spec, "output.to.namespace"));
    assert_string_equal(sw_json_str_at(spec, "output.to.name"), "web:v1");
    json_decref(spec);
    json_decref(mi);
}

static void spec_hash(void **state)
{
    char a[80], b[80], c[80];
    json_t *m1 = created(MI(GOOD));
    json_t *m2 = created(MI(GOOD));
    sw_mi_spec_hash(m1, a, sizeof(a));
    /* the policy is not an input: changing it never rebuilds */
    sw_json_set_path(m2, "spec.policy.verifyIntervalSeconds", json_integer(5));
    sw_mi_spec_hash(m2, b, sizeof(b));
    assert_string_equal(a, b);
    sw_json_set_path(m2, "spec.source.dockerfile", json_string("FROM scratch\nENV A=B"));
    sw_mi_spec_hash(m2, c, sizeof(c));
    assert_string_not_equal(a, c);
    assert_true(strncmp(a, "sha256:", 7) == 0 && strlen(a) == 71);
    json_decref(m1);
    json_decref(m2);
}

static void backoff(void **state)
{
    assert_int_equal(sw_mi_backoff_ms(0, false, 10000, 300000), 0);
    assert_int_equal(sw_mi_backoff_ms(1, false, 10000, 300000), 10000);
    assert_int_equal(sw_mi_backoff_ms(2, false, 10000, 300000), 20000);
    assert_int_equal(sw_mi_backoff_ms(4, false, 10000, 300000), 80000);
    assert_int_equal(sw_mi_backoff_ms(9, false, 10000, 300000), 300000);
    assert_int_equal(sw_mi_backoff_ms(60, false, 10000, 300000), 300000);
    /* a lost builder is retried at once, once */
    assert_int_equal(sw_mi_backoff_ms(1, true, 10000, 300000), 0);
    assert_int_equal(sw_mi_backoff_ms(2, true, 10000, 300000), 20000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),  cmocka_unit_test(validation), cmocka_unit_test(bc_spec),
        cmocka_unit_test(spec_hash), cmocka_unit_test(backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
