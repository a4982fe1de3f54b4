/* Unit tests for src/builder/source: the context tree (implied parents, duplicates, hard links),
 * resolution inside the context (".." and symlinks that leave it are refused, symlinks inside are
 * followed, loops stop), contextDir narrowing, wildcards, reading, uploaded archives (a tar
 * written by src/image/tar, a non-archive, a truncated one), and the limits on hostile input:
 * path depth, entries (implied directories included), path bytes, git bombs (a repository made
 * here with libgit2) and .dockerignore patterns that were exponential or overflowed the stack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/source.h"
#include "image/tar.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <fcntl.h>
#include <git2.h>
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

/* A path of depth components: "d/d/.../f". */
static char *deep_path(size_t depth)
{
    char *p = sw_malloc(depth * 2 + 1), *c = p;
    for (size_t i = 1; i < depth; i++, c += 2)
        memcpy(c, "d/", 2);
    memcpy(c, "f", 2);
    return p;
}

static void test_depth_cap(void **state)
{
    fx *f = *state;
    char *ok = deep_path(SW_SOURCE_MAX_DEPTH), *deep = deep_path(SW_SOURCE_MAX_DEPTH + 1);
    add_file(f->s, ok, "x", 0644); /* 256 components: allowed */
    assert_int_equal(sw_source_count(f->s), SW_SOURCE_MAX_DEPTH);
    sw_tar_entry e = {.path = deep, .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &e), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "source entry \"d/d/d/"));
    assert_non_null(strstr(sw_error_msg(), "is nested more than 256 directories deep"));
    assert_int_equal(sw_source_count(f->s), SW_SOURCE_MAX_DEPTH); /* nothing added */
    sw_free(ok);
    sw_free(deep);
}

static void test_entry_cap_counts_implied(void **state)
{
    fx *f = *state;
    char path[64];
    sw_source_set_limits(f->s, &(sw_source_limits){.max_entries = 10});
    for (int i = 0; i < 5; i++) { /* two nodes each: an implied directory and the file */
        snprintf(path, sizeof(path), "d%d/f", i);
        add_file(f->s, path, "x", 0644);
    }
    assert_int_equal(sw_source_count(f->s), 10);
    sw_tar_entry e = {.path = "d9/f", .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &e), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 10 entries"));
    e.path = "d0/g"; /* the file alone would be the 11th */
    assert_int_equal(sw_source_add(f->s, &e), SW_ELIMIT);
    /* an archive of 3 entries that imply 9 more directories */
    sw_source *s2 = NULL;
    char tar[128];
    const sw_tar_entry te[] = {
        {.path = "a/b/c/d/1", .type = SW_TAR_DIR, .mode = 0755},
        {.path = "e/f/g/h/2", .type = SW_TAR_DIR, .mode = 0755},
        {.path = "i/j/k/l/3", .type = SW_TAR_DIR, .mode = 0755},
    };
    snprintf(tar, sizeof(tar), "%s/deep.tar", f->dir);
    write_tar(tar, te, 3);
    assert_int_equal(sw_source_new(&s2, f->dir), 0);
    sw_source_set_limits(s2, &(sw_source_limits){.max_entries = 10});
    assert_int_equal(sw_source_add_archive(s2, tar, NULL), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 10 entries"));
    sw_source_free(s2);
}

static void test_path_bytes_cap(void **state)
{
    fx *f = *state;
    /* d, d/d, ..., d/d/d/d/d/f: 2+4+6+8+10+12 bytes with their NULs */
    sw_source_set_limits(f->s, &(sw_source_limits){.max_path_bytes = 42});
    add_file(f->s, "d/d/d/d/d/f", "x", 0644);
    sw_tar_entry e = {.path = "d/d/d/d/d/g", .type = SW_TAR_REG, .mode = 0644};
    assert_int_equal(sw_source_add(f->s, &e), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 42 bytes"));
    e.path = "g"; /* 2 more bytes: still over */
    assert_int_equal(sw_source_add(f->s, &e), SW_ELIMIT);
    assert_int_equal(sw_source_count(f->s), 6);
}

/* ---- git ---- */

/* LeakSanitizer's built-in suppressions (read only in sanitizer builds): libgit2 1.5 (Debian)
 * leaks pcre2 match data once per anonymous remote, as tests/e2e/test_builder.sh notes. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpcre2-8.so\n";
}

/* A tree of fanout entries: blobs named f<i> (level 0) or copies of sub named d<i>. */
static void git_level(git_repository *repo, const git_oid *sub, bool blobs, int fanout,
                      git_oid *out)
{
    git_treebuilder *tb = NULL;
    char name[16];
    assert_int_equal(git_treebuilder_new(&tb, repo, NULL), 0);
    for (int i = 0; i < fanout; i++) {
        snprintf(name, sizeof(name), "%c%d", blobs ? 'f' : 'd', i);
        assert_int_equal(git_treebuilder_insert(NULL, tb, name, sub,
                                                blobs ? GIT_FILEMODE_BLOB : GIT_FILEMODE_TREE),
                         0);
    }
    assert_int_equal(git_treebuilder_write(out, tb), 0);
    git_treebuilder_free(tb);
}

/* A bare repository at path whose one commit (HEAD) is a "git bomb": every level of `levels`
 * holds fanout references to one tree, the last fanout references to one blob of size bytes. */
static void git_bomb(const char *path, int levels, int fanout, size_t size)
{
    git_repository *repo = NULL;
    git_signature *sig = NULL;
    git_tree *tree = NULL;
    git_oid blob, id, commit;
    char *data = sw_malloc(size);
    memset(data, 'x', size);
    assert_int_equal(git_repository_init(&repo, path, 1), 0);
    assert_int_equal(git_blob_create_from_buffer(&blob, repo, data, size), 0);
    git_level(repo, &blob, true, fanout, &id);
    for (int i = 0; i < levels; i++)
        git_level(repo, &id, false, fanout, &id);
    assert_int_equal(git_tree_lookup(&tree, repo, &id), 0);
    assert_int_equal(git_signature_new(&sig, "t", "t@example.com", 1700000000, 0), 0);
    assert_int_equal(
        git_commit_create(&commit, repo, "HEAD", sig, sig, NULL, "bomb", tree, 0, NULL), 0);
    git_signature_free(sig);
    git_tree_free(tree);
    git_repository_free(repo);
    sw_free(data);
}

static int git_add(fx *f, int levels, int fanout, size_t size, sw_source_git_info *info)
{
    char repo[128], clone[128];
    snprintf(repo, sizeof(repo), "%s/repo", f->dir);
    snprintf(clone, sizeof(clone), "%s/clone", f->dir);
    git_libgit2_init();
    git_bomb(repo, levels, fanout, size);
    int error = sw_source_add_git(f->s, repo, NULL, clone, NULL, info);
    git_libgit2_shutdown();
    return error;
}

static void test_git_blob_spooled_once(void **state)
{
    fx *f = *state;
    sw_source_git_info info;
    struct stat st;
    char blobs[128];
    /* 10 + 100 directories, 1000 files sharing one 4 KiB blob */
    assert_int_equal(git_add(f, 2, 10, 4096, &info), 0);
    assert_int_equal(info.entries, 1110);
    snprintf(blobs, sizeof(blobs), "%s/blobs", f->dir);
    assert_int_equal(stat(blobs, &st), 0);
    assert_int_equal(st.st_size, 4096); /* was 1000 copies */
    const sw_src_node *a = resolve_ok(f->s, "d3/d5/f7", true);
    const sw_src_node *b = resolve_ok(f->s, "d9/d0/f1", true);
    uint64_t off_a, size_a, off_b, size_b;
    assert_true(sw_src_node_range(a, &off_a, &size_a));
    assert_true(sw_src_node_range(b, &off_b, &size_b));
    assert_int_equal(off_a, off_b);
    assert_int_equal(size_b, 4096);
    char *text = read_node(b);
    assert_int_equal(strlen(text), 4096);
    assert_int_equal(text[4095], 'x');
    sw_free(text);
}

static void test_git_bomb_entries(void **state)
{
    fx *f = *state;
    /* 10^4 files and 1110 directories; with the default cap this shape at 6 levels is 1.1M */
    sw_source_set_limits(f->s, &(sw_source_limits){.max_entries = 5000});
    assert_int_equal(git_add(f, 3, 10, 1, NULL), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "the git source has more than 5000 entries"));
}

static void test_git_bomb_bytes(void **state)
{
    fx *f = *state;
    /* 1000 references to one 4 KiB blob: 4 MB of contents although it is spooled once */
    sw_source_set_limits(f->s, &(sw_source_limits){.max_bytes = 1 << 20});
    assert_int_equal(git_add(f, 2, 10, 4096, NULL), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "the git source has more than 1048576 bytes"));
}

/* One blob over what is left is refused from its object header, before it is inflated into
 * memory (the message names it; a blob read first would have been counted afterwards). */
static void test_git_big_blob(void **state)
{
    fx *f = *state;
    sw_source_set_limits(f->s, &(sw_source_limits){.max_bytes = 1 << 20});
    assert_int_equal(git_add(f, 0, 1, 2 << 20, NULL), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "alone has 2097152"));
}

/* ---- .dockerignore "**" ---- */

/* Applies rules to a fresh tree and returns which of its paths are left out, "|"-separated. */
static char *ignored_of(fx *f, const char *rules)
{
    static const char *const paths[] = {"x",     "b",     "a",       "a/x", "a/b", "a/bb",  "a/c",
                                        "a/c/b", "a/c/d", "a/c/d/b", "q",   "q/a", "q/a/b", "q/x"};
    static const char *const files[] = {"x",     "b",       "a/x",   "a/b", "a/bb",
                                        "a/c/b", "a/c/d/b", "q/a/b", "q/x"};
    char buf[512] = "";
    size_t n = 0;
    sw_source_free(f->s);
    assert_int_equal(sw_source_new(&f->s, f->dir), 0);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        add_file(f->s, files[i], "", 0644);
    if (sw_source_ignore(f->s, rules, strlen(rules), &n) < 0)
        fail_msg("ignore %s: %s", rules, sw_error_msg());
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (!visible(f->s, paths[i])) {
            sw_strlcat(buf, "|", sizeof(buf));
            sw_strlcat(buf, paths[i], sizeof(buf));
        }
    return sw_strdup(buf);
}

static void expect_ignored(fx *f, const char *rules, const char *want)
{
    char *got = ignored_of(f, rules);
    if (strcmp(got, want))
        fail_msg("rules \"%s\": want \"%s\", got \"%s\"", rules, want, got);
    sw_free(got);
}

static void test_dockerignore_globstar(void **state)
{
    fx *f = *state;
    expect_ignored(f, "**/x", "|x|a/x|q/x");
    expect_ignored(f, "a/**/b", "|a/b|a/c/b|a/c/d/b");
    expect_ignored(f, "**/**/b", "|b|a/b|a/c/b|a/c/d/b|q/a/b");
    expect_ignored(f, "**/b", "|b|a/b|a/c/b|a/c/d/b|q/a/b");
    expect_ignored(f, "a/**", "|a|a/x|a/b|a/bb|a/c|a/c/b|a/c/d|a/c/d/b");
    expect_ignored(f, "**", "|x|b|a|a/x|a/b|a/bb|a/c|a/c/b|a/c/d|a/c/d/b|q|q/a|q/a/b|q/x");
    expect_ignored(f, "a/**/**", "|a|a/x|a/b|a/bb|a/c|a/c/b|a/c/d|a/c/d/b");
    expect_ignored(f, "**/c/**/b", "|a/c/b|a/c/d/b");
    expect_ignored(f, "*/*/b", "|a/c/b|q/a/b");
    expect_ignored(f, "**/a/*", "|a/x|a/b|a/bb|a/c|a/c/b|a/c/d|a/c/d/b|q/a/b");
    expect_ignored(f, "a\n!a/**/b", "|a/x|a/bb"); /* a and a/c hold what is let back in */
}

static void test_dockerignore_not_exponential(void **state)
{
    fx *f = *state;
    char path[128] = "";
    size_t n = 99;
    for (int i = 0; i < 41; i++) /* 41 nested directories */
        sw_strlcat(path, "d/", sizeof(path));
    sw_strlcat(path, "f", sizeof(path));
    add_file(f->s, path, "", 0644);
    alarm(20); /* the old matcher took minutes here; SIGALRM fails the test */
    const char *rules = "**/**/**/**/**/**/**/**/zz\n**/*/**/*/**/*/**/*/**/zz\n";
    assert_int_equal(sw_source_ignore(f->s, rules, strlen(rules), &n), 0);
    alarm(0);
    assert_int_equal(n, 0);
    const char *hit = "**/*/**/*/**/*/**/*/**/f\n";
    assert_int_equal(sw_source_ignore(f->s, hit, strlen(hit), &n), 0);
    assert_int_equal(n, 1);
}

/* Each pattern and path is bounded, but patterns x paths x segments is not: a small upload with
 * deep paths and a long .dockerignore took minutes. The whole pass has a work budget, and the
 * number of patterns a cap. */
static void test_dockerignore_work_cap(void **state)
{
    fx *f = *state;
    char path[256] = "";
    size_t n = 0;
    for (int i = 0; i < 60; i++)
        sw_strlcat(path, "d/", sizeof(path));
    for (int i = 0; i < 30; i++) {
        char leaf[300];
        snprintf(leaf, sizeof(leaf), "%sf%d", path, i);
        add_file(f->s, leaf, "", 0644);
    }
    sw_buf b = SW_BUF_INIT(SIZE_MAX);
    for (int i = 0; i < 50; i++)
        sw_buf_puts(&b, "**/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/nomatch\n");
    sw_source_set_limits(f->s, &(sw_source_limits){.max_ignore_work = 100000});
    assert_int_equal(sw_source_ignore(f->s, sw_buf_cstr(&b), b.len, &n), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "matching its 50 patterns against this context"));
    sw_source_set_limits(f->s, &(sw_source_limits){0}); /* the default budget: fine here */
    assert_int_equal(sw_source_ignore(f->s, sw_buf_cstr(&b), b.len, &n), 0);
    sw_buf_clear(&b);
    for (int i = 0; i <= SW_SOURCE_MAX_IGNORE_RULES; i++)
        sw_buf_puts(&b, "x\n");
    assert_int_equal(sw_source_ignore(f->s, sw_buf_cstr(&b), b.len, &n), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "more than 10000 patterns"));
    sw_buf_dispose(&b);
}

static void test_dockerignore_segment_cap(void **state)
{
    fx *f = *state;
    sw_buf b = SW_BUF_INIT(SIZE_MAX);
    size_t n = 0;
    add_file(f->s, "a/b", "", 0644);
    sw_buf_puts(&b, "# 256 segments are fine\n");
    for (int i = 0; i < SW_SOURCE_MAX_PATTERN_SEGMENTS; i++)
        sw_buf_puts(&b, i ? "/a" : "a");
    sw_buf_puts(&b, "\n");
    assert_int_equal(sw_source_ignore(f->s, sw_buf_cstr(&b), b.len, &n), 0);
    sw_buf_puts(&b, "**"); /* the old matcher overflowed the stack on this line (line 3) */
    for (int i = 1; i < 1365; i++)
        sw_buf_puts(&b, "/**");
    sw_buf_puts(&b, "\n");
    assert_int_equal(sw_source_ignore(f->s, sw_buf_cstr(&b), b.len, &n), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "line 3: the pattern \"**/**/"));
    assert_non_null(strstr(sw_error_msg(), "has more than 256 path segments"));
    sw_buf_dispose(&b);
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
        cmocka_unit_test_setup_teardown(test_depth_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_cap_counts_implied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_bytes_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_blob_spooled_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_bomb_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_bomb_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_big_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockerignore_work_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockerignore_globstar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockerignore_not_exponential, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockerignore_segment_cap, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
