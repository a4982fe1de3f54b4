/* Build controller tests: the runPolicy decision (Serial, Parallel, SerialLatestOnly, cancelled
 * and active builds), build numbers, logSnippet (last 5 lines, long lines elided in the
 * middle), and the process strategy with a shell script as the builder: its arguments and
 * private files, output through the pipe, exit codes, SIGTERM then SIGKILL of a builder that
 * ignores SIGTERM, and the private directory removed by forget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controllers/build.h"
#include "controllers/build_process.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *build(const char *name, int number, const char *phase, bool cancelled)
{
    char num[16];
    snprintf(num, sizeof(num), "%d", number);
    return json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s, s:b}}", "metadata", "name", name, "namespace",
                     "ns", "annotations", "openshift.io/build.number", num, "status", "phase",
                     phase, "cancelled", cancelled);
}

/* "name name ..." of a list of builds. */
static void names(const json_t *list, char *out, size_t n)
{
    size_t i;
    json_t *b;
    out[0] = '\0';
    json_array_foreach(list, i, b)
    {
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "",
                 json_string_value(json_object_get(json_object_get(b, "metadata"), "name")));
    }
}

static void decide(const json_t *builds, const char *policy, const char *want_start,
                   const char *want_cancel)
{
    json_t *start = NULL, *cancel = NULL;
    char got[256];
    sw_build_runnable(builds, policy, &start, &cancel);
    names(start, got, sizeof(got));
    assert_string_equal(got, want_start);
    names(cancel, got, sizeof(got));
    assert_string_equal(got, want_cancel);
    json_decref(start);
    json_decref(cancel);
}

static void test_runnable(void **state)
{
    json_t *b = json_array();
    json_array_append_new(b, build("x-10", 10, "New", false));
    json_array_append_new(b, build("x-2", 2, "New", false));
    json_array_append_new(b, build("x-1", 1, "Complete", false));
    json_array_append_new(b, build("x-3", 3, "New", true)); /* cancelled: never started */
    decide(b, "Serial", "x-2", "");
    decide(b, "Parallel", "x-2 x-10", "");
    decide(b, "SerialLatestOnly", "x-10", "x-2");
    decide(b, NULL, "x-2", "");
    json_array_append_new(b, build("x-4", 4, "Running", false));
    decide(b, "Serial", "", "");
    decide(b, "Parallel", "x-2 x-10", "");
    decide(b, "SerialLatestOnly", "", "x-2");
    json_decref(b);
    b = json_array();
    json_array_append_new(b, build("y-1", 1, "Pending", false));
    decide(b, "Serial", "", "");
    decide(b, "SerialLatestOnly", "", "");
    json_decref(b);
}

static void test_number(void **state)
{
    json_t *b = build("x-7", 7, "New", false);
    assert_int_equal(sw_build_number(b), 7);
    json_decref(b);
    b = json_pack("{s:{s:s}}", "metadata", "name", "lone");
    assert_int_equal(sw_build_number(b), -1);
    json_decref(b);
}

static void snippet_is(const char *text, const char *want)
{
    char *s = sw_build_log_snippet(text, strlen(text));
    assert_string_equal(s, want);
    sw_free(s);
}

static void test_snippet(void **state)
{
    snippet_is("", "");
    snippet_is("\n\n", "");
    snippet_is("one", "one");
    snippet_is("one\r\ntwo\n", "one\ntwo");
    snippet_is("1\n2\n3\n4\n5\n6\n7\n", "3\n4\n5\n6\n7");
    snippet_is("1\n2\n3\n4\n5\n6\n7", "3\n4\n5\n6\n7");
    char line[301], want[200];
    for (int i = 0; i < 300; i++)
        line[i] = (char)('a' + i % 26);
    line[300] = '\0';
    snprintf(want, sizeof(want), "%.58s...%s", line, line + 300 - 59);
    assert_int_equal(strlen(want), 120);
    snippet_is(line, want);
    line[120] = '\0';
    snippet_is(line, line); /* exactly 120: kept */
}

/* ---- the process strategy ---- */

typedef struct fixture {
    char dir[256];
    char script[300];
    sw_build_strategy *s;
} fixture;

static const char *const registries[] = {"reg.local:5000", NULL};

static void write_script(fixture *f, const char *body)
{
    snprintf(f->script, sizeof(f->script), "%s/builder.sh", f->dir);
    FILE *fp = fopen(f->script, "w");
    assert_non_null(fp);
    fprintf(fp, "#!/bin/sh\n%s\n", body);
    fclose(fp);
    chmod(f->script, 0700);
    sw_build_process_opts o = {.builder_bin = f->script, .tmp_dir = f->dir};
    assert_int_equal(sw_build_process_strategy_new(&f->s, &o), 0);
}

static int setup(void **state)
{
    fixture *f = sw_calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "%s/sw-build-test-XXXXXX", getenv("TMPDIR") ?: "/tmp");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[400];
    if (f->s)
        f->s->free(f->s->self);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    sw_free(f);
    return 0;
}

static void *start(fixture *f, const char *push_auth)
{
    json_t *b = json_pack("{s:{s:s, s:s}}", "metadata", "name", "app-1", "namespace", "ns");
    sw_build_env env = {.server = "https://127.0.0.1:6443",
                        .ca_pem = "PEM",
                        .ca_len = 3,
                        .push_auth = push_auth,
                        .insecure_registries = registries};
    void *run = NULL;
    assert_int_equal(f->s->start(f->s->self, b, "tok-123", &env, &run), 0);
    json_decref(b);
    return run;
}

/* Reads output until the builder exited and its output ended (or 10 s passed). */
static sw_build_state wait_end(fixture *f, void *run, sw_buf *out, int *value)
{
    char buf[4096];
    sw_build_state st = SW_BUILD_RUNNING;
    bool eof = false;
    int64_t until = sw_time_mono_ms() + 10000;
    while (sw_time_mono_ms() < until && !(eof && st != SW_BUILD_RUNNING)) {
        size_t got = 0;
        assert_int_equal(f->s->read_output(f->s->self, run, buf, sizeof(buf), 50, &got, &eof), 0);
        sw_buf_put(out, buf, got);
        assert_int_equal(f->s->poll(f->s->self, run, &st, value), 0);
    }
    return st;
}

static void test_process_exit(void **state)
{
    fixture *f = *state;
    write_script(f, "echo \"$@\"\n"
                    "for a in \"$@\"; do case $a in /*) printf '%s %s\\n' "
                    "\"$(stat -c %a \"$a\")\" \"$(cat \"$a\" 2>/dev/null)\";; esac; done\n"
                    "echo err >&2\nexit 3");
    void *run = start(f, "{\"auths\":{}}");
    sw_buf out = SW_BUF_INIT(1 << 20);
    int value = -1;
    assert_int_equal(wait_end(f, run, &out, &value), SW_BUILD_EXITED);
    assert_int_equal(value, 3);
    const char *o = sw_buf_cstr(&out);
    assert_non_null(strstr(o, "builder --server https://127.0.0.1:6443 --ca "));
    assert_non_null(strstr(o, " --namespace ns --build app-1 --insecure-registry reg.local:5000 "
                              "--push-auth "));
    assert_non_null(strstr(o, "600 tok-123\n"));
    assert_non_null(strstr(o, "600 PEM\n"));
    assert_non_null(strstr(o, "600 {\"auths\":{}}\n"));
    assert_non_null(strstr(o, "700 \n")); /* the work directory */
    assert_non_null(strstr(o, "err\n"));
    f->s->forget(f->s->self, run);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -d '%s'/slipway-build-* 2>/dev/null)\"", f->dir);
    assert_int_equal(system(cmd), 0); /* private directory removed */
    sw_buf_dispose(&out);
}

static void test_process_cancel(void **state)
{
    fixture *f = *state;
    write_script(f, "echo started\nexec sleep 30");
    void *run = start(f, NULL);
    sw_build_state st;
    int value;
    char buf[64];
    size_t got = 0;
    bool eof = false;
    int64_t until = sw_time_mono_ms() + 5000;
    while (!got && sw_time_mono_ms() < until)
        f->s->read_output(f->s->self, run, buf, sizeof(buf), 50, &got, &eof);
    assert_true(got > 0);
    assert_int_equal(f->s->poll(f->s->self, run, &st, &value), 0);
    assert_int_equal(st, SW_BUILD_RUNNING);
    assert_int_equal(f->s->cancel(f->s->self, run, false), 0);
    sw_buf out = SW_BUF_INIT(4096);
    assert_int_equal(wait_end(f, run, &out, &value), SW_BUILD_SIGNALLED);
    assert_int_equal(value, SIGTERM);
    f->s->forget(f->s->self, run);
    sw_buf_dispose(&out);
}

static void test_process_kill(void **state)
{
    fixture *f = *state;
    write_script(f, "trap '' TERM\necho ready\nwhile :; do sleep 0.05; done");
    void *run = start(f, NULL);
    char buf[64];
    size_t got = 0;
    bool eof = false;
    int value;
    int64_t until = sw_time_mono_ms() + 5000;
    while (!got && sw_time_mono_ms() < until)
        f->s->read_output(f->s->self, run, buf, sizeof(buf), 50, &got, &eof);
    assert_int_equal(f->s->cancel(f->s->self, run, false), 0);
    usleep(300 * 1000);
    sw_build_state st;
    assert_int_equal(f->s->poll(f->s->self, run, &st, &value), 0);
    assert_int_equal(st, SW_BUILD_RUNNING); /* SIGTERM ignored */
    assert_int_equal(f->s->cancel(f->s->self, run, true), 0);
    sw_buf out = SW_BUF_INIT(4096);
    assert_int_equal(wait_end(f, run, &out, &value), SW_BUILD_SIGNALLED);
    assert_int_equal(value, SIGKILL);
    f->s->forget(f->s->self, run);
    sw_buf_dispose(&out);
}

static void test_process_missing_builder(void **state)
{
    sw_build_strategy *s = NULL;
    sw_build_process_opts o = {.builder_bin = "/nonexistent/slipway"};
    assert_int_equal(sw_build_process_strategy_new(&s, &o), SW_EINVALID);
    assert_null(s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runnable),
        cmocka_unit_test(test_number),
        cmocka_unit_test(test_snippet),
        cmocka_unit_test_setup_teardown(test_process_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_process_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_process_kill, setup, teardown),
        cmocka_unit_test(test_process_missing_builder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
