/* Unit tests for src/builder/source: the context tree (implied parents, duplicates, hard links),
 * resolution inside the context (".." and symlinks that leave it are refused, symlinks inside are
 * followed, loops stop), contextDir narrowing, wildcards, reading, and uploaded archives (a tar
 * written by src/image/tar, a non-archive, a truncated one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/source.h"
#include "image/tar.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/error.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fx {
    char dir[64];
    sw_source *s;
} fx;

static int setup(void **state)
{
    fx *f = sw_calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/sw-test-source-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(sw_source_new(&f->s, f->dir), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    sw_source_free(f->s);
    sw_path_remove_tree(f->dir);
    sw_free(f);
    return 0;
}

static void add_file(sw_source *s, const char *path, const char *data, uint32_t mode)
{
    sw_tar_entry e = {
        .path = path, .type = SW_TAR_REG, .mode = mode, .data = data, .data_len = strlen(data)};
    assert_int_equal(sw_source_add(s, &e), 0);
}

static void add_dir(sw_source *s, const char *path, uint32_t mode)
{
    sw_tar_entry e = {.path = path, .type = SW_TAR_DIR, .mode = mode};
    assert_int_equal(sw_source_add(s, &e), 0);
}

static void add_link(sw_source *s, const char *path, const char *target)
{
    sw_tar_entry e = {.path = path, .type = SW_TAR_SYMLINK, .mode = 0777, .link = target};
    assert_int_equal(sw_source_add(s, &e), 0);
}

static const sw_src_node *resolve_ok(sw_source *s, const char *path, bool follow)
{
    const sw_src_node *n = NULL;
    int error = sw_source_resolve(s, path, follow, &n);
    if (error < 0)
        fail_msg("resolve %s: %s", path, sw_error_msg());
    return n;
}

static void resolve_fails(sw_source *s, const char *path, int code, const char *needle)
{
    const sw_src_node *n = NULL;
    int error = sw_source_resolve(s, path, true, &n);
    if (error != code || !strstr(sw_error_msg(), needle))
        fail_msg("resolve %s: expected %d with \"%s\", got %d: %s", path, code, needle, error,
                 sw_error_msg());
}

static char *read_node(const sw_src_node *n)
{
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(sw_source_read(n, 1 << 20, &out, &len), 0);
    assert_int_equal(strlen(out), len);
    return out;
}

static void test_tree_parents_and_modes(void **state)
{
    fx *f = *state;
    add_file(f->s, "a/b/c.txt", "hello", 0640);
    const sw_src_node *b = resolve_ok(f->s, "a/b", true);
    assert_int_equal(sw_src_node_type(b), SW_SRC_DIR);
    assert_int_equal(sw_src_node_mode(b), 0755); /* implied */
    add_dir(f->s, "a/b/", 0700);                 /* the archive's own entry, later */
    assert_int_equal(sw_src_node_mode(resolve_ok(f->s, "a/b", true)), 0700);
    const sw_src_node *c = resolve_ok(f->s, "/a/./b//c.txt", true);
    assert_int_equal(sw_src_node_mode(c), 0640);
    assert_string_equal(sw_src_node_name(c), "c.txt");
    char *text = read_node(c);
    assert_string_equal(text, "hello");
    sw_free(text);
    assert_int_equal(sw_source_count(f->s), 3);
    assert_int_equal(sw_src_node_count(sw_source_root(f->s)), 1);
}

static void test_tree_refusals(void **state)
{
    fx *f = *state;
    add_file(f->s, "f", "x", 0644);
    sw_tar_entry dup = {.path = "./f", .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &dup), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "twice"));
    sw_tar_entry under = {.path = "f/g", .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &under), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "not a directory"));
    sw_tar_entry up = {.path = "a/../../etc", .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &up), SW_EINVALID);
    sw_tar_entry hl = {.path = "h", .type = SW_TAR_HARDLINK, .mode = 0644, .link = "missing"};
    assert_int_equal(sw_source_add(f->s, &hl), SW_EINVALID);
    hl.link = "f";
    assert_int_equal(sw_source_add(f->s, &hl), 0);
    char *text = read_node(resolve_ok(f->s, "h", true));
    assert_string_equal(text, "x");
    sw_free(text);
    assert_int_equal(sw_source_add_file(f->s, "../x", "/dev/null"), SW_EINVALID);
}

static void test_resolve_escapes(void **state)
{
    fx *f = *state;
    add_file(f->s, "app/main.c", "int main;", 0644);
    add_file(f->s, "shared/lib.c", "lib", 0644);
    add_link(f->s, "app/lib", "../shared/lib.c"); /* inside: followed */
    add_link(f->s, "app/up", "../../outside");    /* climbs out */
    add_link(f->s, "app/abs", "/etc/passwd");     /* absolute: the host's */
    add_link(f->s, "app/loop1", "loop2");
    add_link(f->s, "app/loop2", "loop1");
    add_link(f->s, "app/sharedir", "../shared");
    char *text = read_node(resolve_ok(f->s, "app/lib", true));
    assert_string_equal(text, "lib");
    sw_free(text);
    assert_int_equal(sw_src_node_type(resolve_ok(f->s, "app/lib", false)), SW_SRC_SYMLINK);
    assert_int_equal(sw_src_node_type(resolve_ok(f->s, "app/sharedir/lib.c", false)), SW_SRC_FILE);
    resolve_fails(f->s, "../x", SW_EINVALID, "leaves the build context");
    resolve_fails(f->s, "app/../../x", SW_EINVALID, "leaves the build context");
    resolve_fails(f->s, "app/up", SW_EINVALID, "symlink \"app/up\" points outside");
    resolve_fails(f->s, "app/abs", SW_EINVALID, "points outside the build context");
    resolve_fails(f->s, "app/loop1", SW_EINVALID, "too many levels");
    resolve_fails(f->s, "app/nothing", SW_ENOTFOUND, "not found in the build context");
    resolve_fails(f->s, "app/main.c/x", SW_ENOTFOUND, "not a directory");
    /* a lexical ".." inside stays inside */
    assert_int_equal(sw_src_node_type(resolve_ok(f->s, "app/../shared/lib.c", true)), SW_SRC_FILE);
}

static void test_chdir(void **state)
{
    fx *f = *state;
    add_file(f->s, "repo/web/index.html", "<html>", 0644);
    add_file(f->s, "repo/secret", "s", 0600);
    add_link(f->s, "repo/web/peek", "../secret");
    assert_int_equal(sw_source_chdir(f->s, "repo/web"), 0);
    assert_string_equal(sw_src_node_name(sw_source_root(f->s)), "web");
    assert_non_null(resolve_ok(f->s, "index.html", true));
    resolve_fails(f->s, "../secret", SW_EINVALID, "leaves the build context");
    resolve_fails(f->s, "peek", SW_EINVALID, "points outside");
    assert_int_equal(sw_source_chdir(f->s, "index.html"), SW_EINVALID);
    assert_int_equal(sw_source_chdir(f->s, "missing"), SW_ENOTFOUND);
}

static void test_glob(void **state)
{
    fx *f = *state;
    const sw_src_node **nodes = NULL;
    const char **names = NULL;
    size_t n = 0;
    add_file(f->s, "src/b.txt", "b", 0644);
    add_file(f->s, "src/a.txt", "a", 0644);
    add_file(f->s, "src/.hidden.txt", "h", 0644);
    add_file(f->s, "src/c.md", "c", 0644);
    add_link(f->s, "src/l.txt", "c.md");
    assert_int_equal(sw_source_glob(f->s, "src/*.txt", &nodes, &names, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(names[0], ".hidden.txt");
    assert_string_equal(names[1], "a.txt");
    assert_string_equal(names[2], "b.txt");
    assert_string_equal(names[3], "l.txt");
    assert_string_equal(sw_src_node_name(nodes[3]), "c.md"); /* followed */
    sw_free(nodes);
    sw_free(names);
    assert_int_equal(sw_source_glob(f->s, "src/?.md", &nodes, &names, &n), 0);
    assert_int_equal(n, 1);
    sw_free(nodes);
    sw_free(names);
    assert_int_equal(sw_source_glob(f->s, "src/l.txt", &nodes, &names, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "l.txt"); /* named as written */
    sw_free(nodes);
    sw_free(names);
    assert_int_equal(sw_source_glob(f->s, ".", &nodes, &names, &n), 0);
    assert_ptr_equal(nodes[0], sw_source_root(f->s));
    sw_free(nodes);
    sw_free(names);
    assert_int_equal(sw_source_glob(f->s, "src/*.go", &nodes, &names, &n), SW_ENOTFOUND);
    assert_non_null(strstr(sw_error_msg(), "no source files were specified"));
    assert_int_equal(sw_source_glob(f->s, "s*/a.txt", &nodes, &names, &n), SW_EINVALID);
    assert_int_equal(sw_source_glob(f->s, "../*", &nodes, &names, &n), SW_EINVALID);
}

/* Writes a tar of entries e[0..n) to path with src/image/tar. */
static int tar_fd_write(void *payload, const void *data, size_t len)
{
    return fwrite(data, 1, len, payload) == len ? 0 : SW_ERROR;
}

static void write_tar(const char *path, const sw_tar_entry *e, size_t n)
{
    sw_tar *t = NULL;
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    sw_tar_new(&t);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sw_tar_add(t, &e[i]), 0);
    assert_int_equal(sw_tar_write(t, 0, tar_fd_write, fp), 0);
    sw_tar_free(t);
    fclose(fp);
}

static void test_archive(void **state)
{
    fx *f = *state;
    char path[128];
    size_t entries = 0;
    const sw_tar_entry e[] = {
        {.path = "Dockerfile",
         .type = SW_TAR_REG,
         .mode = 0644,
         .data = "FROM scratch\n",
         .data_len = 13},
        {.path = "bin", .type = SW_TAR_DIR, .mode = 0750},
        {.path = "bin/run",
         .type = SW_TAR_REG,
         .mode = 0755,
         .data = "#!/bin/sh\n",
         .data_len = 10},
        {.path = "bin/again", .type = SW_TAR_HARDLINK, .mode = 0755, .link = "bin/run"},
        {.path = "cur", .type = SW_TAR_SYMLINK, .mode = 0777, .link = "bin"},
    };
    snprintf(path, sizeof(path), "%s/ctx.tar", f->dir);
    write_tar(path, e, sizeof(e) / sizeof(e[0]));
    assert_int_equal(sw_source_add_archive(f->s, path, &entries), 0);
    assert_int_equal(entries, 5);
    assert_int_equal(sw_src_node_mode(resolve_ok(f->s, "bin", true)), 0750);
    char *text = read_node(resolve_ok(f->s, "cur/again", true));
    assert_string_equal(text, "#!/bin/sh\n");
    sw_free(text);
    assert_int_equal(sw_src_node_mode(resolve_ok(f->s, "bin/again", true)), 0755);
}

static void test_archive_bad(void **state)
{
    fx *f = *state;
    char path[128], buf[4096];
    snprintf(path, sizeof(path), "%s/not.tar", f->dir);
    FILE *fp = fopen(path, "wb");
    fputs("just some text, not an archive\n", fp);
    fclose(fp);
    assert_int_equal(sw_source_add_archive(f->s, path, NULL), SW_EUNSUPPORTED);
    /* a valid tar cut in the middle of a file's contents */
    const sw_tar_entry e[] = {
        {.path = "big", .type = SW_TAR_REG, .mode = 0644, .data = buf, .data_len = sizeof(buf)}};
    memset(buf, 'x', sizeof(buf));
    snprintf(path, sizeof(path), "%s/cut.tar", f->dir);
    write_tar(path, e, 1);
    assert_int_equal(truncate(path, 1024), 0);
    assert_int_equal(sw_source_add_archive(f->s, path, NULL), SW_EINVALID);
}

static bool visible(sw_source *s, const char *path)
{
    const sw_src_node *n = NULL;
    return sw_source_resolve(s, path, false, &n) == 0;
}

static void test_dockerignore(void **state)
{
    fx *f = *state;
    size_t ignored = 0;
    add_file(f->s, "ctx/Dockerfile", "FROM scratch", 0644);
    add_file(f->s, "ctx/.git/config", "x", 0644);
    add_file(f->s, "ctx/README.md", "r", 0644);
    add_file(f->s, "ctx/docs/guide.md", "g", 0644);
    add_file(f->s, "ctx/src/a.c", "a", 0644);
    add_file(f->s, "ctx/src/a.log", "l", 0644);
    add_file(f->s, "ctx/src/deep/b.log", "l", 0644);
    add_file(f->s, "ctx/node_modules/x/index.js", "x", 0644);
    add_file(f->s, "ctx/node_modules/keep/index.js", "k", 0644);
    add_file(f->s, "outside.md", "o", 0644);
    assert_int_equal(sw_source_chdir(f->s, "ctx"), 0);
    const char *rules = "# comment\n\n.git\n*.md\n**/*.log\n/node_modules \n"
                        "!node_modules/keep\n!README.md\n../outside.md\n";
    assert_int_equal(sw_source_ignore(f->s, rules, strlen(rules), &ignored), 0);
    assert_true(visible(f->s, "Dockerfile"));
    assert_false(visible(f->s, ".git"));
    assert_false(visible(f->s, ".git/config"));
    assert_true(visible(f->s, "README.md"));     /* let back in */
    assert_true(visible(f->s, "docs/guide.md")); /* "*.md" is one segment: the root only */
    assert_true(visible(f->s, "src/a.c"));
    assert_false(visible(f->s, "src/a.log"));
    assert_false(visible(f->s, "src/deep/b.log"));
    assert_false(visible(f->s, "node_modules/x"));
    assert_true(visible(f->s, "node_modules/keep/index.js"));
    assert_true(visible(f->s, "node_modules")); /* holds what was let back in */
    /* .git, .git/config, src/a.log, src/deep/b.log, node_modules/x, node_modules/x/index.js */
    assert_int_equal(ignored, 6);
    const sw_src_node **nodes = NULL;
    const char **names = NULL;
    size_t n = 0;
    assert_int_equal(sw_source_glob(f->s, "src/*", &nodes, &names, &n), 0);
    assert_int_equal(n, 2); /* a.c and deep */
    sw_free(nodes);
    sw_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tree_parents_and_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_escapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_glob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockerignore, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
