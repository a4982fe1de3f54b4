/* Unit tests for the build backends' pure parts: the choice between native and buildah
 * (src/builder/backend.c), the backend lists, the stages a full-grammar Dockerfile has
 * (sw_dockerfile_stages: global ARGs and build args in FROM, stage names, byte ranges), the last
 * FROMs written again (sw_buildah_rewrite_froms: normalised images, dockerStrategy.from, flags
 * kept, line numbers kept), and a context written out to a
 * directory (sw_source_write_dir: modes, symlinks kept verbatim, ignored entries left out). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/backend.h"
#include "builder/buildah.h"
#include "builder/dockerfile.h"
#include "builder/source.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char RUN_REFUSED[] = "Dockerfile:3: RUN is not supported: ...";

static void test_choose(void **state)
{
    (void)state;
    const sw_backend *b = NULL;
    const sw_backend *native = sw_backend_find("native"), *buildah = sw_backend_find("buildah");
    assert_non_null(native);
    assert_non_null(buildah);
    assert_null(sw_backend_find("docker"));
    /* the default: native when it can, else buildah */
    assert_int_equal(sw_backend_choose(NULL, NULL, 0, NULL, NULL, &b), 0);
    assert_ptr_equal(b, native);
    assert_int_equal(sw_backend_choose("", NULL, SW_EUNSUPPORTED, RUN_REFUSED, NULL, &b), 0);
    assert_ptr_equal(b, buildah);
    /* a bad Dockerfile is bad for every backend */
    assert_int_equal(sw_backend_choose(NULL, NULL, SW_EINVALID, "Dockerfile:1: bad", NULL, &b),
                     SW_EINVALID);
    assert_string_equal(sw_error_msg(), "Dockerfile:1: bad");
    /* buildah missing or not allowed: the native refusal and what would build it */
    assert_int_equal(
        sw_backend_choose(NULL, NULL, SW_EUNSUPPORTED, RUN_REFUSED, "buildah is not installed", &b),
        SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), RUN_REFUSED));
    assert_non_null(strstr(sw_error_msg(), "buildah is not installed"));
    assert_int_equal(sw_backend_choose(NULL, "native", SW_EUNSUPPORTED, RUN_REFUSED, NULL, &b),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), "not allowed by this server"));
    /* native not allowed: buildah builds even what native could */
    assert_int_equal(sw_backend_choose(NULL, "buildah", 0, NULL, NULL, &b), 0);
    assert_ptr_equal(b, buildah);
    assert_int_equal(sw_backend_choose(NULL, "buildah", 0, NULL, "not root", &b), SW_EUNSUPPORTED);
    /* forced */
    assert_int_equal(sw_backend_choose("buildah", NULL, 0, NULL, NULL, &b), 0);
    assert_ptr_equal(b, buildah);
    assert_int_equal(sw_backend_choose("native", NULL, SW_EUNSUPPORTED, RUN_REFUSED, NULL, &b),
                     SW_EUNSUPPORTED);
    assert_string_equal(sw_error_msg(), RUN_REFUSED);
    assert_int_equal(sw_backend_choose("buildah", NULL, SW_EINVALID, "odd", NULL, &b), 0);
    assert_int_equal(sw_backend_choose("docker", NULL, 0, NULL, NULL, &b), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "unknown backend \"docker\""));
    assert_int_equal(sw_backend_choose("buildah", "native", 0, NULL, NULL, &b), SW_EINVALID);
    assert_int_equal(sw_backend_choose("buildah", NULL, 0, NULL, "not root", &b), SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), "not root"));
}

static void test_lists(void **state)
{
    (void)state;
    assert_int_equal(sw_backend_list_check("native,buildah"), 0);
    assert_int_equal(sw_backend_list_check("buildah"), 0);
    assert_int_equal(sw_backend_list_check(""), SW_EINVALID);
    assert_int_equal(sw_backend_list_check("native,native"), SW_EINVALID);
    assert_int_equal(sw_backend_list_check("native,kaniko"), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "\"kaniko\""));
    assert_int_equal(sw_backend_list_check("native,"), SW_EINVALID);
    assert_true(sw_backend_allowed(NULL, "buildah"));
    assert_true(sw_backend_allowed("native,buildah", "native"));
    assert_false(sw_backend_allowed("native", "buildah"));
    assert_false(sw_backend_allowed("nativeX", "native"));
}

static void test_stages(void **state)
{
    (void)state;
    const char *text = "# syntax comment\n"
                       "ARG BASE=busybox\n"
                       "ARG TAG\n"
                       "FROM --platform=linux/amd64 ${BASE}:${TAG:-1} AS Build\n"
                       "RUN make\n"
                       "FROM build AS test\n"
                       "FROM \\\n"
                       "  registry.local/app:$TAG\n"
                       "COPY --from=build /out /\n";
    const char *const args[] = {"TAG=2", NULL};
    sw_df_stage *st = NULL;
    size_t n = 0;
    assert_int_equal(sw_dockerfile_stages(text, strlen(text), args, &st, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(st[0].image, "busybox:2");
    assert_string_equal(st[0].name, "build");
    assert_false(st[0].from_stage);
    assert_int_equal(st[0].line, 4);
    assert_string_equal(st[1].image, "build");
    assert_true(st[1].from_stage);
    assert_string_equal(st[2].image, "registry.local/app:2");
    assert_null(st[2].name);
    assert_int_equal(st[2].line, 7);
    assert_memory_equal(text + st[2].off, "FROM \\\n  registry.local/app:$TAG\n", st[2].len);

    assert_string_equal(st[0].flags, "--platform=linux/amd64");
    assert_null(st[2].flags);
    char *out = NULL;
    size_t len = 0;
    sw_free(st[2].image);
    st[2].image = sw_strdup("reg/base@sha256:ab");
    sw_free(st[0].image);
    st[0].image = sw_strdup("docker.io/library/busybox:2");
    assert_int_equal(sw_buildah_rewrite_froms(text, strlen(text), st, n, &out, &len), 0);
    assert_int_equal(len, strlen(out));
    assert_string_equal(out, "# syntax comment\n"
                             "ARG BASE=busybox\n"
                             "ARG TAG\n"
                             "FROM --platform=linux/amd64 docker.io/library/busybox:2 AS build\n"
                             "RUN make\n"
                             "FROM build AS test\n"
                             "FROM reg/base@sha256:ab\n"
                             "\n" /* the continuation line: later line numbers stay */
                             "COPY --from=build /out /\n");
    sw_free(out);
    sw_df_stages_free(st, n);

    const char *named = "FROM a AS x\nRUN y";
    assert_int_equal(sw_dockerfile_stages(named, strlen(named), NULL, &st, &n), 0);
    sw_free(st[0].image);
    st[0].image = sw_strdup("b");
    assert_int_equal(sw_buildah_rewrite_froms(named, strlen(named), st, n, &out, &len), 0);
    assert_string_equal(out, "FROM b AS x\nRUN y");
    sw_free(out);
    sw_df_stages_free(st, n);

    /* refusals name the line */
    const char *bad[][2] = {
        {"RUN x\nFROM a\n", "Dockerfile:1: the first instruction must be FROM (or ARG), not RUN"},
        {"ARG A\n", "Dockerfile: no FROM instruction"},
        {"FROM\n", "Dockerfile:1: FROM requires either one or three arguments"},
        {"FROM $EMPTY\n", "Dockerfile:1: FROM: invalid base image name"},
        {"FROM a b\n", "Dockerfile:1: FROM requires either one or three arguments"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        st = NULL;
        assert_int_equal(sw_dockerfile_stages(bad[i][0], strlen(bad[i][0]), NULL, &st, &n),
                         SW_EINVALID);
        assert_null(st);
        if (strncmp(sw_error_msg(), bad[i][1], strlen(bad[i][1])))
            fail_msg("for %s: got \"%s\"", bad[i][0], sw_error_msg());
    }
}

static void add(sw_source *s, const char *path, sw_tar_type type, uint32_t mode, const char *data,
                const char *link)
{
    sw_tar_entry e = {.path = path, .type = type, .mode = mode, .link = link};
    if (data) {
        e.data = data;
        e.data_len = strlen(data);
    }
    assert_int_equal(sw_source_add(s, &e), 0);
}

/* A temporary directory with a spool for a new source and the path "ctx" to write it to. */
typedef struct scratch {
    char dir[32], spool[PATH_MAX], out[PATH_MAX];
    sw_source *s;
} scratch;

static sw_source *scratch_new(scratch *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/sw-test-backend-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->spool, sizeof(t->spool), "%s/spool", t->dir);
    snprintf(t->out, sizeof(t->out), "%s/ctx", t->dir);
    assert_int_equal(mkdir(t->spool, 0700), 0);
    t->s = NULL;
    assert_int_equal(sw_source_new(&t->s, t->spool), 0);
    return t->s;
}

static void scratch_free(scratch *t)
{
    sw_source_free(t->s);
    assert_int_equal(sw_path_remove_tree(t->dir), 0);
}

static void test_write_dir(void **state)
{
    (void)state;
    scratch t;
    sw_source *s = scratch_new(&t);
    const char *out = t.out;
    char p[PATH_MAX + 32];
    add(s, "app/run.sh", SW_TAR_REG, 0755, "#!/bin/sh\n", NULL);
    add(s, "app/secret.tmp", SW_TAR_REG, 0600, "x", NULL);
    add(s, "etc-link", SW_TAR_SYMLINK, 0777, NULL, "/etc/passwd");
    add(s, "readme", SW_TAR_REG, 0644, "hello", NULL);
    const char *ignore = "*.tmp\napp/*.tmp\n";
    assert_int_equal(sw_source_ignore(s, ignore, strlen(ignore), NULL), 0);
    assert_int_equal(sw_source_write_dir(s, out, 1000000000, NULL), 0);
    struct stat st;
    snprintf(p, sizeof(p), "%s/app/run.sh", out);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_int_equal(st.st_size, 10);
    assert_int_equal(st.st_mtime, 1000000000);
    snprintf(p, sizeof(p), "%s/app/secret.tmp", out);
    assert_int_not_equal(lstat(p, &st), 0);
    snprintf(p, sizeof(p), "%s/etc-link", out);
    char target[64] = "";
    assert_int_equal(readlink(p, target, sizeof(target) - 1), 11);
    assert_string_equal(target, "/etc/passwd");
    snprintf(p, sizeof(p), "%s/readme", out);
    char *body = NULL;
    assert_int_equal(sw_path_read(p, 100, true, &body, NULL), 0);
    assert_string_equal(body, "hello");
    sw_free(body);
    /* the directory must be new */
    assert_int_equal(sw_source_write_dir(s, out, 0, NULL), SW_ERROR);
    scratch_free(&t);
}

/* Many sibling directories under a low descriptor limit: the queue holds at most
 * WQ_MAX_QUEUED open directories, the rest are filled depth-first by the thread that found
 * them. */
static void test_write_dir_fds(void **state)
{
    (void)state;
    scratch t;
    sw_source *s = scratch_new(&t);
    const char *out = t.out;
    char p[PATH_MAX + 64];
    for (int i = 0; i < 300; i++) {
        snprintf(p, sizeof(p), "pkg%03d/sub/file", i);
        add(s, p, SW_TAR_REG, 0644, "x", NULL);
    }
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 128;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int error = sw_source_write_dir(s, out, 0, NULL);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    if (error < 0)
        fail_msg("sw_source_write_dir under 128 descriptors: %s", sw_error_msg());
    snprintf(p, sizeof(p), "%s/pkg299/sub/file", out);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    scratch_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choose),        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_stages),        cmocka_unit_test(test_write_dir),
        cmocka_unit_test(test_write_dir_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
