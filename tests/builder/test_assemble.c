/* Unit tests for src/builder/assemble: each COPY/ADD layer's entries (paths, types, modes,
 * owners, contents; read back from the written tar), destination rules (directory syntax,
 * WORKDIR-relative, renaming a file, several sources), --chown/--chmod, FROM scratch parents
 * versus a base image, WORKDIR folded into the next layer or a layer of its own, ADD unpacking
 * local archives, refusals naming the line, the config and history, byte-identical layers
 * across runs, and copying a directory nested SW_SOURCE_MAX_DEPTH deep on a small stack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/assemble.h"
#include "image/tarread.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fx {
    char dir[64];
    sw_source *s;
    sw_dockerfile *df;
    sw_oci_image *img;
    sw_assembly *a;
} fx;

static int setup(void **state)
{
    fx *f = sw_calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/sw-test-assemble-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(sw_source_new(&f->s, f->dir), 0);
    assert_int_equal(sw_oci_image_new(&f->img, NULL, NULL, 0), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    sw_assembly_free(f->a);
    sw_oci_image_free(f->img);
    sw_dockerfile_free(f->df);
    sw_source_free(f->s);
    sw_path_remove_tree(f->dir);
    sw_free(f);
    return 0;
}

static void add(fx *f, sw_tar_type type, const char *path, uint32_t mode, const char *data)
{
    sw_tar_entry e = {.path = path, .type = type, .mode = mode};
    if (type == SW_TAR_REG) {
        e.data = data;
        e.data_len = strlen(data);
    } else if (type == SW_TAR_SYMLINK) {
        e.link = data;
    }
    assert_int_equal(sw_source_add(f->s, &e), 0);
}

/* A small context: app/{main.js, lib/util.js, run.sh}, README, link -> README, data.bin. */
static void context(fx *f)
{
    add(f, SW_TAR_DIR, "app", 0750, NULL);
    add(f, SW_TAR_REG, "app/main.js", 0644, "main");
    add(f, SW_TAR_REG, "app/lib/util.js", 0600, "util");
    add(f, SW_TAR_REG, "app/run.sh", 0755, "#!/bin/sh");
    add(f, SW_TAR_REG, "README", 0644, "readme");
    add(f, SW_TAR_SYMLINK, "link", 0777, "README");
    add(f, SW_TAR_SYMLINK, "app/abs", 0777, "/usr/bin/env");
}

static int plan_opts(fx *f, const char *dockerfile, const sw_assemble_opts *o)
{
    sw_assembly_free(f->a);
    f->a = NULL;
    sw_dockerfile_free(f->df);
    f->df = NULL;
    int error = sw_dockerfile_parse(dockerfile, strlen(dockerfile), NULL, &f->df);
    if (error < 0)
        fail_msg("parse: %s", sw_error_msg());
    return sw_assemble(&f->a, f->df, f->s, f->img, o);
}

static void plan_ok(fx *f, const char *dockerfile, bool scratch)
{
    sw_assemble_opts o = SW_ASSEMBLE_OPTS_INIT;
    o.scratch = scratch;
    o.spool_dir = f->dir;
    if (plan_opts(f, dockerfile, &o) < 0)
        fail_msg("assemble: %s\n%s", sw_error_msg(), dockerfile);
}

static void plan_fails(fx *f, const char *dockerfile, int code, const char *needle)
{
    sw_assemble_opts o = SW_ASSEMBLE_OPTS_INIT;
    o.scratch = true;
    o.spool_dir = f->dir;
    int error = plan_opts(f, dockerfile, &o);
    if (error != code || !strstr(sw_error_msg(), needle))
        fail_msg("expected %d with \"%s\", got %d: %s", code, needle, error, sw_error_msg());
}

static int to_buf(void *payload, const void *data, size_t len)
{
    return sw_buf_put(payload, data, len);
}

static int list_entry(void *payload, const sw_tar_entry *e)
{
    sw_buf *b = payload;
    static const char types[] = "?fdlh";
    sw_buf_printf(b, "%c %s %04o %u:%u", types[e->type], e->path, e->mode, e->uid, e->gid);
    if (e->type == SW_TAR_REG)
        sw_buf_printf(b, " =%.*s", (int)e->data_len, e->data ? (const char *)e->data : "");
    if (e->link)
        sw_buf_printf(b, " ->%s", e->link);
    sw_buf_putc(b, '\n');
    return 0;
}

/* The entries of step i's layer, one line each, in tar order. */
static char *layer_text(fx *f, size_t i)
{
    const sw_assemble_step *st = sw_assembly_step(f->a, i);
    assert_non_null(st);
    assert_non_null(st->tar);
    sw_buf tar = SW_BUF_INIT(1 << 24), text = SW_BUF_INIT(1 << 20);
    assert_int_equal(sw_tar_write(st->tar, 0, to_buf, &tar), 0);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.on_entry = list_entry;
    o.payload = &text;
    assert_int_equal(sw_tarread_add_mem(NULL, tar.ptr, tar.len, &o, NULL), 0);
    sw_buf_dispose(&tar);
    return sw_buf_detach(&text, NULL);
}

static void expect_layer(fx *f, size_t i, const char *want)
{
    char *got = layer_text(f, i);
    if (strcmp(got, want))
        fail_msg("layer of step %zu:\n--- want ---\n%s--- got ---\n%s", i, want, got);
    sw_free(got);
}

static json_t *config(fx *f)
{
    char *text = NULL;
    size_t len = 0;
    sw_oci_desc d;
    json_t *j = NULL;
    assert_int_equal(sw_oci_image_config(f->img, SW_OCI_FORMAT_OCI, &text, &len, &d), 0);
    assert_int_equal(sw_json_parse(text, len, 64, 0, &j), 0);
    sw_free(text);
    return j;
}

static void test_copy_dir_scratch(void **state)
{
    fx *f = *state;
    context(f);
    plan_ok(f, "FROM scratch\nCOPY app /srv/app/\n", true);
    assert_int_equal(sw_assembly_count(f->a), 1);
    assert_int_equal(sw_assembly_layers(f->a), 1);
    assert_string_equal(sw_assembly_step(f->a, 0)->created_by, "COPY app /srv/app/");
    assert_int_equal(sw_assembly_step(f->a, 0)->line, 2);
    expect_layer(f, 0,
                 "d srv 0755 0:0\n"
                 "d srv/app 0755 0:0\n"
                 "l srv/app/abs 0777 0:0 ->/usr/bin/env\n"
                 "d srv/app/lib 0755 0:0\n"
                 "f srv/app/lib/util.js 0600 0:0 =util\n"
                 "f srv/app/main.js 0644 0:0 =main\n"
                 "f srv/app/run.sh 0755 0:0 =#!/bin/sh\n");
}

static void test_copy_dir_on_base(void **state)
{
    fx *f = *state;
    context(f);
    /* on a base image the destination's parents are left to the unpacker (an existing /srv or
     * /tmp keeps its mode); --chown records the destination itself with the owner */
    plan_ok(f, "FROM base\nCOPY app /srv/app/\nCOPY --chown=1000:50 --chmod=640 app/lib /opt/\n",
            false);
    expect_layer(f, 0,
                 "l srv/app/abs 0777 0:0 ->/usr/bin/env\n"
                 "d srv/app/lib 0755 0:0\n"
                 "f srv/app/lib/util.js 0600 0:0 =util\n"
                 "f srv/app/main.js 0644 0:0 =main\n"
                 "f srv/app/run.sh 0755 0:0 =#!/bin/sh\n");
    expect_layer(f, 1,
                 "d opt 0755 1000:50\n"
                 "f opt/util.js 0640 1000:50 =util\n");
    assert_string_equal(sw_assembly_step(f->a, 1)->created_by,
                        "COPY --chown=1000:50 --chmod=640 app/lib /opt/");
}

static void test_copy_files(void **state)
{
    fx *f = *state;
    context(f);
    plan_ok(f,
            "FROM scratch\n"
            "COPY README /doc/readme.txt\n" /* renamed */
            "COPY link app/*.js /doc/\n"    /* several, a symlink followed, a wildcard */
            "WORKDIR /w\n"
            "COPY README .\n" /* relative to WORKDIR, which is a directory */
            "COPY --chown=7 README sub/\n",
            true);
    assert_int_equal(sw_assembly_layers(f->a), 4);
    expect_layer(f, 0, "d doc 0755 0:0\nf doc/readme.txt 0644 0:0 =readme\n");
    expect_layer(f, 1, "f doc/link 0644 0:0 =readme\nf doc/main.js 0644 0:0 =main\n");
    assert_null(sw_assembly_step(f->a, 2)->tar); /* WORKDIR: its directory rides on the next COPY */
    expect_layer(f, 3, "d w 0755 0:0\nf w/README 0644 0:0 =readme\n");
    expect_layer(f, 4, "d w/sub 0755 7:7\nf w/sub/README 0644 7:7 =readme\n");
}

static void test_workdir_layers(void **state)
{
    fx *f = *state;
    context(f);
    plan_ok(f, "FROM scratch\nWORKDIR /a/b\nCOPY README x\nWORKDIR /c\nENV A=1\nWORKDIR /a/b\n",
            true);
    assert_int_equal(sw_assembly_count(f->a), 5);
    assert_null(sw_assembly_step(f->a, 0)->tar);
    expect_layer(f, 1, "d a 0755 0:0\nd a/b 0755 0:0\nf a/b/x 0644 0:0 =readme\n");
    expect_layer(f, 2, "d c 0755 0:0\n"); /* no COPY follows: a layer of its own */
    assert_string_equal(sw_assembly_step(f->a, 2)->created_by, "WORKDIR /c");
    assert_null(sw_assembly_step(f->a, 4)->tar); /* /a/b exists already */
    json_t *cfg = config(f);
    assert_string_equal(sw_json_str_at(cfg, "config.WorkingDir"), "/a/b");
    json_decref(cfg);
}

static void test_config_and_history(void **state)
{
    fx *f = *state;
    sw_assemble_opts o = SW_ASSEMBLE_OPTS_INIT;
    const char *env[] = {"FROM_STRATEGY=1", "A=override", NULL};
    const char *labels[] = {"io.openshift.build.commit.id=abc", NULL};
    o.scratch = true;
    o.spool_dir = f->dir;
    o.env = env;
    o.labels = labels;
    const char *df = "FROM scratch\n"
                     "ARG VERSION=1\n"
                     "ENV A=1 B=\"two words\"\n"
                     "LABEL org.opencontainers.image.version=$VERSION\n"
                     "USER 1000:1000\n"
                     "EXPOSE 8080 53/udp\n"
                     "VOLUME /data\n"
                     "CMD [\"serve\"]\n"
                     "ENTRYPOINT [\"/app\"]\n"
                     "STOPSIGNAL SIGINT\n";
    assert_int_equal(plan_opts(f, df, &o), 0);
    assert_int_equal(sw_assembly_layers(f->a), 0);
    assert_int_equal(sw_assembly_count(f->a), 11);
    assert_string_equal(sw_assembly_step(f->a, 0)->created_by, "ARG VERSION");
    assert_string_equal(sw_assembly_step(f->a, 1)->created_by, "ENV A=1 B=two words");
    assert_string_equal(sw_assembly_step(f->a, 5)->created_by, "VOLUME [\"/data\"]");
    assert_string_equal(sw_assembly_step(f->a, 9)->created_by, "ENV FROM_STRATEGY=1 A=override");
    assert_int_equal(sw_assembly_step(f->a, 9)->line, 0);
    json_t *cfg = config(f);
    json_t *c = json_object_get(cfg, "config");
    char *dump = sw_json_dumps(c, NULL);
    assert_string_equal(dump,
                        "{\"Cmd\":[\"serve\"],\"Entrypoint\":[\"/app\"],\"Env\":[\"A=override\","
                        "\"B=two words\",\"FROM_STRATEGY=1\"],\"ExposedPorts\":{\"53/udp\":{},"
                        "\"8080/tcp\":{}},\"Labels\":{\"io.openshift.build.commit.id\":\"abc\","
                        "\"org.opencontainers.image.version\":\"1\"},\"StopSignal\":\"SIGINT\","
                        "\"User\":\"1000:1000\",\"Volumes\":{\"/data\":{}}}");
    sw_free(dump);
    json_decref(cfg);
}

static void test_entrypoint_clears_inherited_cmd(void **state)
{
    fx *f = *state;
    const char *const argv[] = {"inherited"};
    assert_int_equal(sw_oci_image_set_cmd(f->img, argv, 1), 0);
    plan_ok(f, "FROM scratch\nENTRYPOINT [\"/bin/app\"]\n", true);
    json_t *cfg = config(f);
    assert_null(sw_json_at(cfg, "config.Cmd"));
    json_decref(cfg);
}

static int file_write(void *payload, const void *data, size_t len)
{
    return fwrite(data, 1, len, payload) == len ? 0 : SW_ERROR;
}

static void test_add_archive(void **state)
{
    fx *f = *state;
    char path[128];
    sw_tar *t = NULL;
    snprintf(path, sizeof(path), "%s/rootfs.tar", f->dir);
    FILE *fp = fopen(path, "wb");
    sw_tar_new(&t);
    sw_tar_entry e1 = {.path = "etc", .type = SW_TAR_DIR, .mode = 0755};
    sw_tar_entry e2 = {.path = "etc/motd",
                       .type = SW_TAR_REG,
                       .mode = 0600,
                       .uid = 5,
                       .gid = 6,
                       .data = "hi",
                       .data_len = 2};
    assert_int_equal(sw_tar_add(t, &e1), 0);
    assert_int_equal(sw_tar_add(t, &e2), 0);
    assert_int_equal(sw_tar_write(t, 0, file_write, fp), 0);
    sw_tar_free(t);
    fclose(fp);
    sw_tar_entry ctx = {.path = "rootfs.tar", .type = SW_TAR_REG, .mode = 0644, .src_path = path};
    assert_int_equal(sw_source_add(f->s, &ctx), 0);
    add(f, SW_TAR_REG, "notes.gz", 0644, "not really gzip");
    add(f, SW_TAR_REG, "empty", 0644, "");
    plan_ok(f, "FROM scratch\nADD rootfs.tar /r/\nADD notes.gz empty /n/\nCOPY rootfs.tar /c\n",
            true);
    /* the archive's own modes and owners are kept */
    expect_layer(f, 0, "d r 0755 0:0\nd r/etc 0755 0:0\nf r/etc/motd 0600 5:6 =hi\n");
    char *got = NULL;
    expect_layer(f, 1,
                 "d n 0755 0:0\nf n/empty 0644 0:0 =\nf n/notes.gz 0644 0:0 =not really "
                 "gzip\n");
    got = layer_text(f, 2); /* COPY never unpacks */
    assert_non_null(strstr(got, "f c 0644 0:0 ="));
    sw_free(got);
}

/* A file that starts with a zero block reads as an archive that ends at once: ADD copies it as
 * it is (Docker's isArchivePath needs a first header), it does not vanish. */
static void test_add_zero_block_file(void **state)
{
    fx *f = *state;
    char img[4096 + 6];
    memset(img, 0, 4096);
    memcpy(img + 4096, "data\n", 6);
    sw_tar_entry e = {
        .path = "disk.img", .type = SW_TAR_REG, .mode = 0644, .data = img, .data_len = sizeof(img)};
    assert_int_equal(sw_source_add(f->s, &e), 0);
    plan_ok(f, "FROM base\nADD disk.img /data/\n", false);
    char *got = layer_text(f, 0);
    assert_non_null(strstr(got, "f data/disk.img 0644 0:0 ="));
    sw_free(got);
}

/* Every archive ADD unpacks draws on one budget for the build (the context's limits): a small
 * archive named many times cannot expand without end. */
static void test_add_unpack_budget(void **state)
{
    fx *f = *state;
    sw_tar *t = NULL;
    sw_buf tar = SW_BUF_INIT(1 << 20);
    sw_tar_new(&t);
    sw_tar_entry e1 = {.path = "etc", .type = SW_TAR_DIR, .mode = 0755};
    sw_tar_entry e2 = {
        .path = "etc/motd", .type = SW_TAR_REG, .mode = 0600, .data = "hi", .data_len = 2};
    assert_int_equal(sw_tar_add(t, &e1), 0);
    assert_int_equal(sw_tar_add(t, &e2), 0);
    assert_int_equal(sw_tar_write(t, 0, to_buf, &tar), 0);
    sw_tar_free(t);
    sw_tar_entry ctx = {
        .path = "r.tar", .type = SW_TAR_REG, .mode = 0644, .data = tar.ptr, .data_len = tar.len};
    assert_int_equal(sw_source_add(f->s, &ctx), 0);
    sw_buf_dispose(&tar);
    sw_assemble_opts o = SW_ASSEMBLE_OPTS_INIT;
    o.spool_dir = f->dir;
    o.max_unpack_entries = 3;
    assert_int_equal(plan_opts(f, "FROM base\nADD r.tar /a/\n", &o), 0);
    assert_int_equal(plan_opts(f, "FROM base\nADD r.tar /a/\nADD r.tar /b/\n", &o), SW_ELIMIT);
    assert_non_null(strstr(sw_error_msg(), "Dockerfile:3"));
    assert_non_null(strstr(sw_error_msg(), "share the limits of a build context"));
    o.max_unpack_entries = 0;
    o.max_unpack_bytes = 3; /* two bytes per archive */
    assert_int_equal(plan_opts(f, "FROM base\nADD r.tar /a/\nADD r.tar /b/\n", &o), SW_ELIMIT);
    o.max_unpack_bytes = 0;
    o.max_unpack_path_bytes = 20; /* "a/etc" "a/etc/motd" "b/etc" ... */
    assert_int_equal(plan_opts(f, "FROM base\nADD r.tar /a/\nADD r.tar /b/\n", &o), SW_ELIMIT);
}

/* On a base image WORKDIR records no directory (an existing /tmp keeps its 1777; the runtime
 * makes a missing one), and COPY of an empty directory still makes its destination. */
static void test_base_directories(void **state)
{
    fx *f = *state;
    context(f);
    add(f, SW_TAR_DIR, "empty", 0755, NULL);
    plan_ok(f, "FROM base\nWORKDIR /tmp\nCOPY README .\nCOPY empty /srv/data\nCOPY empty .\n",
            false);
    assert_null(sw_assembly_step(f->a, 0)->tar);
    expect_layer(f, 1, "f tmp/README 0644 0:0 =readme\n");
    expect_layer(f, 2, "d srv/data 0755 0:0\n");
    expect_layer(f, 3, ""); /* /tmp is known: nothing to record, an empty layer */
    plan_ok(f, "FROM base\nWORKDIR /w\n", false);
    assert_null(sw_assembly_step(f->a, 0)->tar); /* no layer of its own either */
}

static void test_refusals(void **state)
{
    fx *f = *state;
    context(f);
    plan_fails(f, "FROM scratch\n\nCOPY ../x /x\n", SW_EINVALID,
               "Dockerfile:3: COPY ../x /x: \"../x\" leaves the build context");
    add(f, SW_TAR_SYMLINK, "out", 0777, "../../etc/passwd");
    plan_fails(f, "FROM scratch\nCOPY out /x\n", SW_EINVALID,
               "Dockerfile:2: COPY out /x: symlink \"out\" points outside the build context");
    plan_fails(f, "FROM scratch\nCOPY missing /x\n", SW_ENOTFOUND,
               "\"missing\" not found in the build context");
    plan_fails(f, "FROM scratch\nCOPY README link /x\n", SW_EINVALID,
               "the destination must be a directory and end with a /");
    plan_fails(f, "FROM scratch\nCOPY --chown=app:app README /x\n", SW_EINVALID, "use numeric ids");
    /* across layers a directory may replace a file (the unpacker replaces it) */
    plan_ok(f, "FROM scratch\nCOPY README /x\nCOPY README app /x/\n", true);
    /* one instruction putting a file where it also puts a directory's children */
    add(f, SW_TAR_REG, "two/app", 0644, "file");
    add(f, SW_TAR_REG, "three/app/x", 0644, "x");
    plan_fails(f, "FROM scratch\nCOPY three two /d/\n", SW_EINVALID,
               "\"/d/app\" would be a file and also hold \"/d/app/x\"");
}

static void test_ranges(void **state)
{
    fx *f = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/spool", f->dir);
    FILE *fp = fopen(path, "wb");
    fputs("AAAABBBBBB", fp);
    fclose(fp);
    sw_tar_entry a = {.path = "a",
                      .type = SW_TAR_REG,
                      .mode = 0644,
                      .src_path = path,
                      .src_range = true,
                      .src_offset = 0,
                      .src_size = 4};
    sw_tar_entry b = {.path = "b",
                      .type = SW_TAR_REG,
                      .mode = 0644,
                      .src_path = path,
                      .src_range = true,
                      .src_offset = 4,
                      .src_size = 6};
    sw_tar_entry c = {.path = "c",
                      .type = SW_TAR_REG,
                      .mode = 0644,
                      .src_path = path,
                      .src_range = true,
                      .src_offset = 8,
                      .src_size = 3};
    assert_int_equal(sw_source_add(f->s, &a), 0);
    assert_int_equal(sw_source_add(f->s, &b), 0);
    assert_int_equal(sw_source_add(f->s, &c), 0);
    plan_ok(f, "FROM scratch\nCOPY a b /r/\nCOPY c /c\n", true);
    expect_layer(f, 0, "d r 0755 0:0\nf r/a 0644 0:0 =AAAA\nf r/b 0644 0:0 =BBBBBB\n");
    sw_buf out = SW_BUF_INIT(1 << 20);
    assert_int_equal(sw_tar_write(sw_assembly_step(f->a, 1)->tar, 0, to_buf, &out),
                     SW_ECONFLICT); /* the file ends before c's range */
    sw_buf_dispose(&out);
}

static void test_chown_parse(void **state)
{
    (void)state;
    uint32_t u = 9, g = 9;
    assert_int_equal(sw_assemble_parse_chown("10:20", &u, &g), 0);
    assert_int_equal(u, 10);
    assert_int_equal(g, 20);
    assert_int_equal(sw_assemble_parse_chown("33", &u, &g), 0);
    assert_int_equal(g, 33);
    assert_int_equal(sw_assemble_parse_chown("root:0", &u, &g), 0);
    assert_int_equal(u, 0);
    assert_int_equal(sw_assemble_parse_chown("1:", &u, &g), SW_EINVALID);
    assert_int_equal(sw_assemble_parse_chown(":1", &u, &g), SW_EINVALID);
    assert_int_equal(sw_assemble_parse_chown("4294967296", &u, &g), SW_EINVALID);
    assert_int_equal(sw_assemble_parse_chown("www-data", &u, &g), SW_EINVALID);
}

static void test_deterministic(void **state)
{
    fx *f = *state;
    context(f);
    plan_ok(f, "FROM scratch\nCOPY . /app/\n", true);
    char *a = layer_text(f, 0);
    sw_buf t1 = SW_BUF_INIT(1 << 20), t2 = SW_BUF_INIT(1 << 20);
    assert_int_equal(sw_tar_write(sw_assembly_step(f->a, 0)->tar, 0, to_buf, &t1), 0);
    plan_ok(f, "FROM scratch\nCOPY . /app/\n", true);
    char *b = layer_text(f, 0);
    assert_string_equal(a, b);
    assert_int_equal(sw_tar_write(sw_assembly_step(f->a, 0)->tar, 0, to_buf, &t2), 0);
    assert_int_equal(t1.len, t2.len);
    assert_memory_equal(t1.ptr, t2.ptr, t1.len);
    sw_free(a);
    sw_free(b);
    sw_buf_dispose(&t1);
    sw_buf_dispose(&t2);
}

typedef struct deep_run {
    fx *f;
    int error;
} deep_run;

static void *deep_assemble(void *arg)
{
    deep_run *r = arg;
    sw_assemble_opts o = SW_ASSEMBLE_OPTS_INIT;
    o.scratch = true;
    o.spool_dir = r->f->dir;
    r->error = sw_assemble(&r->f->a, r->f->df, r->f->s, r->f->img, &o);
    return NULL;
}

/* The deepest tree a source holds, copied on a 512 KiB stack: the walk used to keep a 4 KiB
 * path per level (over 1 MiB at this depth). */
static void test_copy_deep_tree_small_stack(void **state)
{
    fx *f = *state;
    char path[SW_SOURCE_MAX_DEPTH * 2 + 1] = "";
    for (int i = 1; i < SW_SOURCE_MAX_DEPTH; i++)
        sw_strlcat(path, "d/", sizeof(path));
    sw_strlcat(path, "f", sizeof(path));
    add(f, SW_TAR_REG, path, 0644, "deep");
    const char *df = "FROM scratch\nCOPY d /out/\n";
    assert_int_equal(sw_dockerfile_parse(df, strlen(df), NULL, &f->df), 0);
    deep_run r = {f, 1};
    pthread_attr_t attr;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 512 << 10), 0);
    assert_int_equal(pthread_create(&t, &attr, deep_assemble, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    if (r.error < 0)
        fail_msg("assemble: %s", sw_error_msg());
    /* out, then the 254 directories below d and the file */
    assert_int_equal(sw_assembly_step(f->a, 0)->entries, SW_SOURCE_MAX_DEPTH);
    char *text = layer_text(f, 0);
    assert_non_null(strstr(text, "/d/f 0644 0:0 =deep\n"));
    sw_free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_dir_scratch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_dir_on_base, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workdir_layers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_and_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entrypoint_clears_inherited_cmd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_zero_block_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_unpack_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_base_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
        cmocka_unit_test(test_chown_parse),
        cmocka_unit_test_setup_teardown(test_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_deep_tree_small_stack, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
