/* Unit tests for src/image/oci and src/image/layout: the exact canonical config and manifest
 * JSON of a scratch image, digests that do not depend on the order settings were made in,
 * images on a base (field filtering, diff_id checks, media type conversion for OCI and Docker
 * schema2), every refusal, and an OCI layout on disk (blobs named by digest, index.json tags
 * that replace and survive reopening, no temporary files left). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/layout.h"
#include "image/oci.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define T0 "1970-01-01T00:00:00Z"

static sw_oci_desc desc(const char *mt, const char *digest, int64_t size)
{
    sw_oci_desc d;
    memset(&d, 0, sizeof(d));
    snprintf(d.media_type, sizeof(d.media_type), "%s", mt);
    snprintf(d.digest, sizeof(d.digest), "%s", digest);
    d.size = size;
    return d;
}

static char *config_of(const sw_oci_image *img, sw_oci_desc *d)
{
    char *json = NULL;
    size_t len = 0;
    sw_oci_desc tmp;
    assert_int_equal(sw_oci_image_config(img, SW_OCI_FORMAT_OCI, &json, &len, d ? d : &tmp), 0);
    assert_int_equal(strlen(json), len);
    return json;
}

static void test_oci_scratch_config_is_canonical(void **state)
{
    static const char *const ep[] = {"/app"}, *const cmd[] = {"--x"};
    sw_oci_image *img = NULL;
    assert_int_equal(sw_oci_image_new(&img, "linux", "amd64", 0), 0);
    assert_int_equal(sw_oci_image_set_env(img, "PATH", "/usr/bin"), 0);
    assert_int_equal(sw_oci_image_set_entrypoint(img, ep, 1), 0);
    assert_int_equal(sw_oci_image_set_cmd(img, cmd, 1), 0);
    assert_int_equal(sw_oci_image_set_workdir(img, "/app"), 0);
    assert_int_equal(sw_oci_image_set_user(img, "1000"), 0);
    assert_int_equal(sw_oci_image_add_port(img, "8080"), 0);
    assert_int_equal(sw_oci_image_add_volume(img, "/data"), 0);
    assert_int_equal(sw_oci_image_set_label(img, "b", "2"), 0);
    assert_int_equal(sw_oci_image_set_label(img, "a", "1"), 0);
    assert_int_equal(sw_oci_image_set_stop_signal(img, "SIGTERM"), 0);
    sw_oci_desc layer = desc(SW_OCI_MEDIA_LAYER_GZIP, D1, 100);
    assert_int_equal(sw_oci_image_add_layer(img, &layer, D2, "COPY . /app"), 0);
    assert_int_equal(sw_oci_image_add_history(img, "ENV PATH=/usr/bin"), 0);

    sw_oci_desc cd;
    char *cfg = config_of(img, &cd);
    assert_string_equal(
        cfg,
        "{\"architecture\":\"amd64\",\"config\":{\"Cmd\":[\"--x\"],\"Entrypoint\":[\"/app\"],"
        "\"Env\":[\"PATH=/usr/bin\"],\"ExposedPorts\":{\"8080/tcp\":{}},\"Labels\":{\"a\":\"1\","
        "\"b\":\"2\"},\"StopSignal\":\"SIGTERM\",\"User\":\"1000\",\"Volumes\":{\"/data\":{}},"
        "\"WorkingDir\":\"/app\"},\"created\":\"" T0 "\",\"history\":[{\"created\":\"" T0
        "\",\"created_by\":\"COPY . /app\"},{\"created\":\"" T0
        "\",\"created_by\":\"ENV PATH=/usr/bin\",\"empty_layer\":true}],\"os\":\"linux\","
        "\"rootfs\":{\"diff_ids\":[\"" D2 "\"],\"type\":\"layers\"}}");
    char want[SW_SHA256_DIGEST_BUF];
    sw_sha256_digest(cfg, strlen(cfg), want);
    assert_string_equal(cd.digest, want);
    assert_int_equal(cd.size, (int64_t)strlen(cfg));
    assert_string_equal(cd.media_type, SW_OCI_MEDIA_CONFIG);

    char *man = NULL;
    size_t man_len = 0;
    sw_oci_desc md;
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_OCI, &man, &man_len, &md), 0);
    char expect[1024];
    snprintf(expect, sizeof(expect),
             "{\"config\":{\"digest\":\"%s\",\"mediaType\":\"%s\",\"size\":%lld},\"layers\":"
             "[{\"digest\":\"" D1 "\",\"mediaType\":\"" SW_OCI_MEDIA_LAYER_GZIP
             "\",\"size\":100}],\"mediaType\":\"" SW_OCI_MEDIA_MANIFEST "\",\"schemaVersion\":2}",
             cd.digest, SW_OCI_MEDIA_CONFIG, (long long)cd.size);
    assert_string_equal(man, expect);
    sw_sha256_digest(man, man_len, want);
    assert_string_equal(md.digest, want);
    assert_string_equal(md.media_type, SW_OCI_MEDIA_MANIFEST);
    assert_int_equal(sw_oci_image_layer_count(img), 1);
    assert_string_equal(sw_oci_image_layer(img, 0)->digest, D1);
    assert_null(sw_oci_image_layer(img, 1));
    sw_free(cfg);
    sw_free(man);
    sw_oci_image_free(img);
}

/* Object-valued settings in another order give the same digest; Env replacement keeps its
 * place; clearing Entrypoint removes the field. */
static void test_oci_digest_stable(void **state)
{
    static const char *const ep[] = {"/bin/sh", "-c"};
    sw_oci_image *a = NULL, *b = NULL;
    sw_oci_image_new(&a, NULL, "arm64", 1700000000);
    sw_oci_image_new(&b, "linux", "arm64", 1700000000);
    sw_oci_image_set_label(a, "x", "1");
    sw_oci_image_set_label(a, "y", "2");
    sw_oci_image_add_port(a, "53/udp");
    sw_oci_image_add_port(a, "80/tcp");
    sw_oci_image_set_env(a, "A", "1");
    sw_oci_image_set_env(a, "B", "2");
    sw_oci_image_set_env(a, "A", "3");
    sw_oci_image_set_label(b, "y", "2");
    sw_oci_image_add_port(b, "80");
    sw_oci_image_set_label(b, "x", "1");
    sw_oci_image_add_port(b, "53/udp");
    sw_oci_image_set_env(b, "A", "3");
    sw_oci_image_set_env(b, "B", "2");
    sw_oci_image_set_entrypoint(b, ep, 2);
    sw_oci_image_set_entrypoint(b, NULL, 0);
    sw_oci_desc da, db;
    char *ca = config_of(a, &da), *cb = config_of(b, &db);
    assert_string_equal(ca, cb);
    assert_string_equal(da.digest, db.digest);
    assert_non_null(strstr(ca, "\"Env\":[\"A=3\",\"B=2\"]"));
    assert_non_null(strstr(ca, "\"created\":\"2023-11-14T22:13:20Z\""));
    assert_non_null(strstr(ca, "\"os\":\"linux\""));
    assert_null(strstr(cb, "Entrypoint"));
    sw_free(ca);
    sw_free(cb);
    sw_oci_image_free(a);
    sw_oci_image_free(b);
}

/* Manifest annotations are canonical (sorted keys) and absent until one is set. */
static void test_oci_manifest_annotations(void **state)
{
    (void)state;
    sw_oci_image *img = NULL;
    char *man = NULL;
    size_t len = 0;
    sw_oci_desc md, md2;
    assert_int_equal(sw_oci_image_new(&img, "linux", "amd64", 0), 0);
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_OCI, &man, &len, &md), 0);
    assert_null(strstr(man, "annotations"));
    sw_free(man);
    assert_int_equal(sw_oci_image_set_annotation(img, "z.example/b", "2"), 0);
    assert_int_equal(sw_oci_image_set_annotation(img, "a.example/a", "old"), 0);
    assert_int_equal(sw_oci_image_set_annotation(img, "a.example/a", "1"), 0);
    assert_int_equal(sw_oci_image_set_annotation(img, "", "x"), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_annotation(img, "k", "\xff"), SW_EINVALID);
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_OCI, &man, &len, &md2), 0);
    assert_non_null(strstr(man, "{\"annotations\":{\"a.example/a\":\"1\",\"z.example/b\":\"2\"},"));
    assert_string_not_equal(md.digest, md2.digest);
    sw_free(man);
    sw_oci_image_free(img);
}

static void test_oci_setter_refusals(void **state)
{
    sw_oci_image *img = NULL;
    sw_oci_image_new(&img, NULL, NULL, 0);
    static const char *const bad_argv[] = {"ok", "\xff\xfe"};
    assert_int_equal(sw_oci_image_set_env(img, "", "x"), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_env(img, "A=B", "x"), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_env(img, "A", "\xc3"), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_cmd(img, bad_argv, 2), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_user(img, NULL), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_port(img, "0"), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_port(img, "65536"), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_port(img, "80/icmp"), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_port(img, "8000-8010"), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_port(img, NULL), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_volume(img, ""), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_label(img, "", "v"), SW_EINVALID);
    assert_int_equal(sw_oci_image_set_label(img, "k", "\x80"), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_history(img, "\xff"), SW_EINVALID);
    sw_oci_desc bad = desc(SW_OCI_MEDIA_LAYER_GZIP, "sha256:xyz", 1);
    sw_oci_desc good = desc(SW_OCI_MEDIA_LAYER_GZIP, D1, 1);
    assert_int_equal(sw_oci_image_add_layer(img, &bad, D2, NULL), SW_EINVALID);
    assert_int_equal(sw_oci_image_add_layer(img, &good, "sha256:00", NULL), SW_EINVALID);
    assert_int_equal(sw_oci_image_layer_count(img), 0);
    for (int i = 0; i < SW_OCI_MAX_LAYERS; i++)
        assert_int_equal(sw_oci_image_add_layer(img, &good, D2, NULL), 0);
    assert_int_equal(sw_oci_image_add_layer(img, &good, D2, NULL), SW_ELIMIT);
    sw_oci_image_free(img);
    sw_oci_image_free(NULL);
}

static const char base_config[] =
    "{\"architecture\":\"arm64\",\"variant\":\"v8\",\"os\":\"linux\",\"container\":\"abc\","
    "\"docker_version\":\"20.10\",\"created\":\"2021-01-01T00:00:00Z\",\"author\":\"someone\","
    "\"config\":{\"Hostname\":\"h\",\"Env\":[\"PATH=/bin\",\"A=1\"],\"Cmd\":[\"sh\"],"
    "\"Labels\":null,\"ExposedPorts\":{\"80/tcp\":{\"x\":1}},\"OnBuild\":null,"
    "\"WorkingDir\":\"/w\"},"
    "\"container_config\":{\"Cmd\":[\"junk\"]},"
    "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2 "\"]},"
    "\"history\":[{\"created\":\"2021-01-01T00:00:00Z\",\"created_by\":\"ADD file\"},"
    "{\"created_by\":\"CMD sh\",\"empty_layer\":true,\"extra\":1}]}";

static sw_oci_image *base_image(void)
{
    sw_oci_desc layers[2] = {desc(SW_DOCKER_MEDIA_LAYER_GZIP, D1, 10),
                             desc(SW_OCI_MEDIA_LAYER_GZIP, D2, 20)};
    sw_oci_image *img = NULL;
    assert_int_equal(
        sw_oci_image_new_from_base(&img, base_config, strlen(base_config), layers, 2, 0), 0);
    return img;
}

static void test_oci_on_base(void **state)
{
    sw_oci_image *img = base_image();
    assert_int_equal(sw_oci_image_set_env(img, "A", "2"), 0);
    sw_oci_desc l3 = desc(SW_OCI_MEDIA_LAYER_GZIP, D3, 30);
    assert_int_equal(sw_oci_image_add_layer(img, &l3, D3, "COPY x /x"), 0);
    char *cfg = config_of(img, NULL);
    assert_string_equal(
        cfg, "{\"architecture\":\"arm64\",\"config\":{\"Cmd\":[\"sh\"],\"Env\":[\"PATH=/bin\","
             "\"A=2\"],\"ExposedPorts\":{\"80/tcp\":{}},\"WorkingDir\":\"/w\"},\"created\":\"" T0
             "\",\"history\":[{\"created\":\"2021-01-01T00:00:00Z\",\"created_by\":\"ADD file\"},"
             "{\"created_by\":\"CMD sh\",\"empty_layer\":true},{\"created\":\"" T0
             "\",\"created_by\":\"COPY x /x\"}],\"os\":\"linux\",\"rootfs\":{\"diff_ids\":[\"" D1
             "\",\"" D2 "\",\"" D3 "\"],\"type\":\"layers\"},\"variant\":\"v8\"}");
    sw_free(cfg);

    /* OCI manifest: the Docker gzip layer is listed under the OCI name (same bytes) */
    char *man = NULL;
    size_t len = 0;
    sw_oci_desc md;
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_OCI, &man, &len, &md), 0);
    assert_null(strstr(man, "docker"));
    sw_free(man);
    /* Docker schema2: every layer under the Docker name, Docker config type */
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_DOCKER, &man, &len, &md), 0);
    assert_string_equal(md.media_type, SW_DOCKER_MEDIA_MANIFEST);
    assert_null(strstr(man, "vnd.oci"));
    assert_non_null(strstr(man, SW_DOCKER_MEDIA_CONFIG));
    sw_free(man);
    /* a zstd layer cannot go into a Docker manifest */
    sw_oci_desc lz = desc(SW_OCI_MEDIA_LAYER_ZSTD, D3, 30);
    assert_int_equal(sw_oci_image_add_layer(img, &lz, D3, NULL), 0);
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_DOCKER, &man, &len, &md),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(sw_error_msg(), "zstd"));
    assert_int_equal(sw_oci_image_manifest(img, SW_OCI_FORMAT_OCI, &man, &len, &md), 0);
    assert_non_null(strstr(man, SW_OCI_MEDIA_LAYER_ZSTD));
    sw_free(man);
    sw_oci_image_free(img);
}

static int from_base(const char *cfg, size_t nlayers)
{
    sw_oci_desc layers[2] = {desc(SW_OCI_MEDIA_LAYER_GZIP, D1, 1),
                             desc(SW_OCI_MEDIA_LAYER_GZIP, D2, 1)};
    sw_oci_image *img = NULL;
    int rc = sw_oci_image_new_from_base(&img, cfg, strlen(cfg), layers, nlayers, 0);
    if (rc == 0)
        assert_non_null(img);
    else
        assert_null(img);
    sw_oci_image_free(img);
    return rc;
}

static void test_oci_base_refusals(void **state)
{
    assert_int_equal(from_base("{}", 0), 0); /* everything optional; linux/host arch */
    assert_int_equal(from_base("{\"config\":null}", 0), 0);
    assert_int_equal(from_base("{\"rootfs\":{\"diff_ids\":[\"" D1 "\"]}}", 1), 0);
    assert_int_equal(from_base(base_config, 1), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "2 diff_ids"));
    assert_int_equal(from_base("{", 0), SW_EINVALID);
    assert_int_equal(from_base("[]", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"config\":[]}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"config\":{\"Env\":\"A=1\"}}", 0), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "config.Env"));
    assert_int_equal(from_base("{\"config\":{\"Labels\":{\"a\":1}}}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"config\":{\"User\":5}}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"os\":5}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"os.features\":\"x\"}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"rootfs\":{\"type\":\"other\",\"diff_ids\":[]}}", 0),
                     SW_EINVALID);
    assert_int_equal(from_base("{\"rootfs\":{\"diff_ids\":{}}}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"rootfs\":{\"diff_ids\":[\"md5:x\"]}}", 1), SW_EINVALID);
    assert_int_equal(from_base("{\"history\":{}}", 0), SW_EINVALID);
    assert_int_equal(from_base("{\"history\":[1]}", 0), SW_EINVALID);

    sw_oci_desc bad = desc(SW_OCI_MEDIA_LAYER_GZIP, "nope", 1);
    sw_oci_image *img = NULL;
    const char *cfg = "{\"rootfs\":{\"diff_ids\":[\"" D1 "\"]}}";
    assert_int_equal(sw_oci_image_new_from_base(&img, cfg, strlen(cfg), &bad, 1, 0), SW_EINVALID);
    assert_int_equal(sw_oci_image_new_from_base(&img, cfg, SW_OCI_CONFIG_MAX + 1, &bad, 1, 0),
                     SW_ELIMIT);
}

/* ---- layout ---- */

static char g_dir[] = "/tmp/sw-oci-test-XXXXXX";
static char g_layout[600];

static int setup(void **state)
{
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_layout, sizeof(g_layout), "%s/layout", g_dir);
    return 0;
}

static int teardown(void **state)
{
    return sw_path_remove_tree(g_dir);
}

static json_t *load_json(const char *rel)
{
    char path[800];
    snprintf(path, sizeof(path), "%s/%s", g_layout, rel);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    assert_non_null(j);
    return j;
}

static bool blob_ok(const char *digest)
{
    char path[800];
    snprintf(path, sizeof(path), "%s/blobs/sha256/%s", g_layout, digest + 7);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    sw_sha256 h;
    sw_sha256_init(&h);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        sw_sha256_update(&h, buf, n);
    fclose(f);
    char got[SW_SHA256_DIGEST_BUF];
    sw_sha256_final_digest(&h, got);
    return strcmp(got, digest) == 0;
}

static size_t count_blob_files(void)
{
    char path[800];
    snprintf(path, sizeof(path), "%s/blobs/sha256", g_layout);
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        assert_int_equal(strlen(e->d_name), 64); /* no temporary files left behind */
        n++;
    }
    closedir(d);
    return n;
}

static const char *ref_of(json_t *entry)
{
    return json_string_value(
        json_object_get(json_object_get(entry, "annotations"), SW_OCI_REF_NAME));
}

static void test_layout_write_and_retag(void **state)
{
    sw_oci_layout *l = NULL;
    assert_int_equal(sw_oci_layout_open(&l, g_layout), 0);
    sw_tar *t = NULL;
    sw_tar_new(&t);
    sw_tar_entry e = {
        .path = "hello.txt", .type = SW_TAR_REG, .mode = 0644, .data = "hi\n", .data_len = 3};
    assert_int_equal(sw_tar_add(t, &e), 0);
    sw_layer_opts o = SW_LAYER_OPTS_INIT;
    sw_layer_info info;
    assert_int_equal(sw_oci_layout_put_layer(l, t, &o, &info), 0);
    o.out_path = "/tmp/x";
    assert_int_equal(sw_oci_layout_put_layer(l, t, &o, &info), SW_EINVALID);
    o.out_path = NULL;
    assert_int_equal(sw_oci_layout_put_layer(l, t, &o, &info), 0); /* same blob again */
    assert_true(blob_ok(info.digest));

    sw_oci_image *img = NULL;
    sw_oci_image_new(&img, "linux", "amd64", 0);
    sw_oci_desc ld = desc(info.media_type, info.digest, (int64_t)info.size);
    assert_int_equal(sw_oci_image_add_layer(img, &ld, info.diff_id, "COPY hello.txt /"), 0);
    sw_oci_desc m1, m2;
    assert_int_equal(sw_oci_layout_put_image(l, img, SW_OCI_FORMAT_OCI, "v1", &m1), 0);
    assert_true(blob_ok(m1.digest));
    assert_int_equal(count_blob_files(), 3); /* layer, config, manifest */
    sw_oci_layout_free(l);

    json_t *layout = load_json("oci-layout");
    assert_string_equal(json_string_value(json_object_get(layout, "imageLayoutVersion")), "1.0.0");
    json_decref(layout);
    json_t *idx = load_json("index.json");
    json_t *list = json_object_get(idx, "manifests");
    assert_int_equal(json_integer_value(json_object_get(idx, "schemaVersion")), 2);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "digest")),
                        m1.digest);
    assert_string_equal(ref_of(json_array_get(list, 0)), "v1");
    json_decref(idx);

    /* reopen: a second tag survives, retagging v1 replaces its entry */
    assert_int_equal(sw_oci_layout_open(&l, g_layout), 0);
    assert_int_equal(sw_oci_layout_tag(l, &m1, "v2"), 0);
    sw_oci_image_set_label(img, "k", "v");
    assert_int_equal(sw_oci_layout_put_image(l, img, SW_OCI_FORMAT_OCI, "v1", &m2), 0);
    assert_string_not_equal(m1.digest, m2.digest);
    assert_int_equal(sw_oci_layout_tag(l, &m2, ""), SW_EINVALID);
    sw_oci_desc broken = m2;
    broken.digest[10] = 'X';
    assert_int_equal(sw_oci_layout_tag(l, &broken, "v3"), SW_EINVALID);
    sw_oci_layout_free(l);
    idx = load_json("index.json");
    list = json_object_get(idx, "manifests");
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(ref_of(json_array_get(list, 0)), "v2");
    assert_string_equal(ref_of(json_array_get(list, 1)), "v1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "digest")),
                        m2.digest);
    json_decref(idx);
    assert_int_equal(count_blob_files(), 5);
    sw_oci_image_free(img);
    sw_tar_free(t);
}

static void test_layout_refusals(void **state)
{
    sw_oci_layout *l = NULL;
    char path[800];
    assert_int_equal(sw_oci_layout_open(&l, "/nonexistent/a/b"), SW_ERROR);
    assert_null(l);
    snprintf(path, sizeof(path), "%s/broken", g_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/broken/oci-layout", g_dir);
    FILE *f = fopen(path, "w");
    fputs("not json", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/broken", g_dir);
    assert_int_equal(sw_oci_layout_open(&l, path), SW_EINVALID);
    snprintf(path, sizeof(path), "%s/broken/oci-layout", g_dir);
    f = fopen(path, "w");
    fputs("{\"imageLayoutVersion\":\"1.0.0\"}", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/broken/index.json", g_dir);
    f = fopen(path, "w");
    fputs("{\"manifests\":{}}", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/broken", g_dir);
    assert_int_equal(sw_oci_layout_open(&l, path), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "manifests"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oci_scratch_config_is_canonical),
        cmocka_unit_test(test_oci_digest_stable),
        cmocka_unit_test(test_oci_manifest_annotations),
        cmocka_unit_test(test_oci_setter_refusals),
        cmocka_unit_test(test_oci_on_base),
        cmocka_unit_test(test_oci_base_refusals),
        cmocka_unit_test(test_layout_write_and_retag),
        cmocka_unit_test(test_layout_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
