/* Unit tests for src/builder/report: the builds/<n>/details body (OpenShift's stage shape with
 * steps, empty step lists left out), the first failure winning, messages cut at a UTF-8
 * boundary or with invalid bytes replaced, and the output digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/report.h"
#include "util/alloc.h"
#include "util/json.h"

#include <string.h>

#define T0 1700000000000LL /* 2023-11-14T22:13:20Z */

static char *body_text(const sw_report *r)
{
    json_t *b = sw_report_body(r, "team", "app-3");
    assert_non_null(b);
    char *s = sw_json_dumps(b, NULL);
    json_decref(b);
    return s;
}

static void test_stages(void **state)
{
    (void)state;
    sw_report *r = NULL;
    sw_report_new(&r);
    sw_report_step(r, "Ignored", T0, T0 + 1); /* no stage open */
    sw_report_stage_begin(r, SW_STAGE_FETCH_INPUTS, T0);
    sw_report_step(r, SW_STEP_FETCH_GIT, T0 + 10, T0 + 250);
    sw_report_stage_begin(r, SW_STAGE_PULL_IMAGES, T0 + 300); /* ends FetchInputs */
    sw_report_stage_begin(r, SW_STAGE_BUILD, T0 + 1300);
    sw_report_stage_end(r, T0 + 4300);
    sw_report_stage_end(r, T0 + 9999); /* nothing open: no effect */
    sw_report_set_output(r, "127.0.0.1:5000/team/app:latest", "sha256:abc");
    char *s = body_text(r);
    assert_string_equal(
        s, "{\"kind\":\"Build\",\"apiVersion\":\"build.openshift.io/v1\",\"metadata\":{\"name\":"
           "\"app-3\",\"namespace\":\"team\"},\"status\":{\"stages\":[{\"name\":\"FetchInputs\","
           "\"startTime\":\"2023-11-14T22:13:20Z\",\"durationMilliseconds\":300,\"steps\":[{"
           "\"name\":\"FetchGitSource\",\"startTime\":\"2023-11-14T22:13:20Z\","
           "\"durationMilliseconds\":240}]},{\"name\":\"PullImages\",\"startTime\":"
           "\"2023-11-14T22:13:20Z\",\"durationMilliseconds\":1000},{\"name\":\"Build\","
           "\"startTime\":\"2023-11-14T22:13:21Z\",\"durationMilliseconds\":3000}],\"output\":{"
           "\"to\":{\"imageDigest\":\"sha256:abc\"}},\"outputDockerImageReference\":"
           "\"127.0.0.1:5000/team/app:latest\"}}");
    sw_free(s);
    sw_report_free(r);
}

static void test_failure(void **state)
{
    (void)state;
    sw_report *r = NULL;
    sw_report_new(&r);
    assert_null(sw_report_reason(r));
    sw_report_fail(r, SW_REASON_BUILD, "Dockerfile:3: RUN is not supported");
    sw_report_fail(r, SW_REASON_PUSH, "later failure");
    assert_string_equal(sw_report_reason(r), "DockerBuildFailed");
    json_t *b = sw_report_body(r, "ns", "b-1");
    assert_string_equal(sw_json_str_at(b, "status.reason"), "DockerBuildFailed");
    assert_string_equal(sw_json_str_at(b, "status.message"), "Dockerfile:3: RUN is not supported");
    assert_null(sw_json_at(b, "status.output"));
    assert_int_equal(json_array_size(sw_json_at(b, "status.stages")), 0);
    json_decref(b);
    sw_report_free(r);
}

static void test_messages(void **state)
{
    (void)state;
    char big[SW_REPORT_MESSAGE_MAX + 8];
    sw_report *r = NULL;
    sw_report_new(&r);
    /* "é" (2 bytes) straddling the cut */
    memset(big, 'a', sizeof(big));
    big[SW_REPORT_MESSAGE_MAX - 1] = (char)0xC3;
    big[SW_REPORT_MESSAGE_MAX] = (char)0xA9;
    big[sizeof(big) - 1] = '\0';
    sw_report_fail(r, NULL, big);
    json_t *b = sw_report_body(r, "ns", "b-1");
    assert_string_equal(sw_json_str_at(b, "status.reason"), "GenericBuildFailed");
    assert_int_equal(strlen(sw_json_str_at(b, "status.message")), SW_REPORT_MESSAGE_MAX - 1);
    json_decref(b);
    sw_report_free(r);

    sw_report_new(&r);
    sw_report_fail(r, SW_REASON_FETCH_SOURCE, "bad name \"\xff\xfe\" in archive");
    b = sw_report_body(r, "ns", "b-1");
    assert_string_equal(sw_json_str_at(b, "status.message"), "bad name \"??\" in archive");
    json_decref(b);
    sw_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stages),
        cmocka_unit_test(test_failure),
        cmocka_unit_test(test_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
