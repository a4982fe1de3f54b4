/* Unit tests for the image trigger annotation (etcd-triggers.md §6.1): the grammar OpenShift
 * parses, the problems slipway reports, and the digest rule of sw_trigger_apply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controllers/trigger.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <stdio.h>
#include <string.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static json_t *deployment(const char *triggers, const char *image)
{
    json_t *obj = json_pack(
        "{s:s, s:{s:s, s:s, s:{}}, s:{s:{s:{s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s, s:s}]}}}}", "kind",
        "Deployment", "metadata", "name", "web", "namespace", "team", "annotations", "spec",
        "template", "spec", "containers", "name", "app", "image", image, "name", "side", "image",
        "busybox", "initContainers", "name", "init", "image", "busybox");
    if (triggers)
        json_object_set_new(sw_json_at(obj, "metadata.annotations"), SW_TRIGGERS_ANNOTATION,
                            json_string(triggers));
    return obj;
}

static int parse(const char *triggers, sw_trigger **ts, size_t *n)
{
    json_t *obj = deployment(triggers, "redis:7");
    int error = sw_triggers_parse(obj, ts, n);
    json_decref(obj);
    return error;
}

#define T(from, fp, extra)                                                                         \
    "[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"" from "\"" extra "},\"fieldPath\":\"" fp  \
    "\"}]"

static void grammar(void **state)
{
    sw_trigger *ts = NULL;
    size_t n = 0;
    assert_int_equal(
        parse(T("redis:latest", "spec.template.spec.containers[?(@.name==\\\"app\\\")].image", ""),
              &ts, &n),
        0);
    assert_int_equal(n, 1);
    assert_string_equal(ts[0].stream, "redis");
    assert_string_equal(ts[0].tag, "latest");
    assert_string_equal(ts[0].ns, "team");
    assert_string_equal(ts[0].container, "app");
    assert_int_equal(ts[0].index, -1);
    assert_false(ts[0].init);
    sw_free(ts);
    assert_int_equal(parse(T("redis:7", "spec.template.spec.initContainers[0].image",
                             ",\"namespace\":\"shared\""),
                           &ts, &n),
                     0);
    assert_int_equal(n, 1);
    assert_true(ts[0].init);
    assert_int_equal(ts[0].index, 0);
    assert_string_equal(ts[0].ns, "shared");
    sw_free(ts);
    /* another pod spec's path is skipped silently (a CronJob's path on a Deployment) */
    assert_int_equal(
        parse(T("redis:7", "spec.jobTemplate.spec.template.spec.containers[0].image", ""), &ts, &n),
        0);
    assert_int_equal(n, 0);
    assert_null(ts);
    /* no annotation at all */
    assert_int_equal(parse(NULL, &ts, &n), 0);
    assert_int_equal(n, 0);
}

static void expect_bad(const char *triggers, const char *needle)
{
    sw_trigger *ts = NULL;
    size_t n = 0;
    assert_int_equal(parse(triggers, &ts, &n), SW_EINVALID);
    if (!strstr(sw_error_msg(), needle))
        fail_msg("[%s] lacks [%s]", sw_error_msg(), needle);
    assert_null(ts);
}

static void problems(void **state)
{
    expect_bad("not json", "must be a JSON array");
    expect_bad("{}", "must be a JSON array");
    expect_bad("[1]", "trigger 0 is not an object");
    expect_bad(T("redis", "spec.template.spec.containers[0].image", ""),
               "from.name must be <stream>:<tag>");
    expect_bad("[{\"from\":{\"kind\":\"DockerImage\",\"name\":\"r:1\"},\"fieldPath\":\"spec."
               "template.spec.containers[0].image\"}]",
               "from.kind must be ImageStreamTag");
    expect_bad(T("redis:1", "spec.template.spec.containers[0].image", ",\"apiVersion\":\"v1\""),
               "from.apiVersion must be empty");
    expect_bad("[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"r:1\"},\"fieldPath\":\"spec."
               "template.spec.containers[0].image\",\"paused\":\"true\"}]",
               "paused must be a boolean");
    expect_bad(T("redis:1", "spec.template.spec.containers[0].name", ""),
               "field path is not valid");
    expect_bad(T("redis:1", "spec.template.spec.containers[x].image", ""),
               "field path is not valid");
    expect_bad(T("redis:1", "spec.template.spec.volumes[0].image", ""), "field path is not valid");
    expect_bad("[{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"r:1\"},\"fieldPath\":\"spec."
               "template.spec.containers[0].image\"},"
               "{\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"r:2\"},\"fieldPath\":\"spec."
               "template.spec.containers[0].image\"}]",
               "duplicate triggers are not allowed");
}

static void digest_rule(void **state)
{
    sw_trigger *ts = NULL;
    size_t n = 0;
    json_t *obj = deployment(
        T("redis:latest", "spec.template.spec.containers[?(@.name==\\\"app\\\")].image", ""),
        "redis:7");
    assert_int_equal(sw_triggers_parse(obj, &ts, &n), 0);
    /* a tag name: changed to the digest form (the old image reported) */
    char was[64];
    assert_int_equal(sw_trigger_apply(obj, &ts[0], "reg:5000/team/redis@" D1, was, sizeof(was)), 1);
    assert_string_equal(was, "redis:7");
    assert_string_equal(
        sw_json_str_at(json_array_get(sw_json_at(obj, "spec.template.spec.containers"), 0),
                       "image"),
        "reg:5000/team/redis@" D1);
    /* the same digest under another repository name: nothing */
    assert_int_equal(sw_trigger_apply(obj, &ts[0], "mirror.example/redis@" D1, NULL, 0), 0);
    assert_string_equal(
        sw_json_str_at(json_array_get(sw_json_at(obj, "spec.template.spec.containers"), 0),
                       "image"),
        "reg:5000/team/redis@" D1);
    /* a new digest: changed */
    assert_int_equal(sw_trigger_apply(obj, &ts[0], "reg:5000/team/redis@" D2, NULL, 0), 1);
    sw_free(ts);
    json_decref(obj);
    /* a missing container fails the update */
    obj = deployment(T("redis:latest", "spec.template.spec.containers[5].image", ""), "redis:7");
    assert_int_equal(sw_triggers_parse(obj, &ts, &n), 0);
    assert_int_equal(sw_trigger_apply(obj, &ts[0], "reg/redis@" D1, NULL, 0), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "no such container"));
    sw_free(ts);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grammar),
        cmocka_unit_test(problems),
        cmocka_unit_test(digest_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
