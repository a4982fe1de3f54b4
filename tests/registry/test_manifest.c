/* Unit tests for src/registry/manifest: the four manifest media types (by Content-Type, by the
 * body's mediaType, by shape), index platforms, rejections (bad JSON, schemaVersion, type
 * mismatch, bad descriptors, too many layers, too large) and image config blobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <string.h>

#define DA "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static const char oci_manifest[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" DA
    "\",\"size\":1234},"
    "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" DB
    "\",\"size\":5678},"
    "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" DC
    "\",\"size\":0}],\"annotations\":{\"a\":\"b\"}}";

static const char docker_manifest[] =
    "{\"schemaVersion\":2,\"mediaType\":"
    "\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"size\":7,"
    "\"digest\":\"" DA "\"},\"layers\":[{\"mediaType\":"
    "\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":9,\"digest\":\"" DB "\"}]}";

static const char oci_index[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
    "\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DA
    "\",\"size\":500,\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DB
    "\",\"size\":501,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\","
    "\"variant\":\"v8\",\"os.version\":\"x\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DC
    "\",\"size\":502}]}";

static const char docker_list[] =
    "{\"schemaVersion\":2,\"mediaType\":"
    "\"application/vnd.docker.distribution.manifest.list.v2+json\","
    "\"manifests\":[{\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"digest\":\"" DA "\",\"size\":1,\"platform\":{\"architecture\":\"arm\",\"os\":\"linux\","
    "\"variant\":\"v7\"}},{\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"digest\":\"" DB "\",\"size\":2,\"platform\":{\"architecture\":\"arm\",\"os\":\"linux\","
    "\"variant\":\"v6\"}}]}";

static sw_manifest *parse_ok(const char *ct, const char *body)
{
    sw_manifest *m = NULL;
    int rc = sw_manifest_parse(ct, body, strlen(body), &m);
    if (rc != 0)
        fail_msg("sw_manifest_parse: %s", sw_error_msg());
    return m;
}

static void parse_bad(const char *ct, const char *body, int code, const char *msg_part)
{
    sw_manifest *m = (sw_manifest *)0x1;
    assert_int_equal(sw_manifest_parse(ct, body, strlen(body), &m), code);
    assert_ptr_equal(m, (sw_manifest *)0x1);
    if (msg_part && !strstr(sw_error_msg(), msg_part))
        fail_msg("message \"%s\" lacks \"%s\"", sw_error_msg(), msg_part);
}

static void test_manifest__oci_manifest(void **state)
{
    sw_manifest *m = parse_ok(SW_MEDIA_OCI_MANIFEST "; charset=utf-8", oci_manifest);
    assert_int_equal(sw_manifest_get_kind(m), SW_MANIFEST_IMAGE);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_OCI_MANIFEST);
    const sw_descriptor *cfg = sw_manifest_config(m);
    assert_non_null(cfg);
    assert_string_equal(cfg->digest, DA);
    assert_int_equal(cfg->size, 1234);
    assert_string_equal(cfg->media_type, "application/vnd.oci.image.config.v1+json");
    assert_int_equal(sw_manifest_layer_count(m), 2);
    assert_string_equal(sw_manifest_layer(m, 0)->digest, DB);
    assert_int_equal(sw_manifest_layer(m, 0)->size, 5678);
    assert_string_equal(sw_manifest_layer(m, 1)->media_type,
                        "application/vnd.oci.image.layer.v1.tar+zstd");
    assert_null(sw_manifest_layer(m, 2));
    assert_int_equal(sw_manifest_entry_count(m), 0);
    assert_null(sw_manifest_entry(m, 0));
    assert_null(sw_manifest_find_platform(m, "linux", "amd64", NULL));
    sw_manifest_free(m);
}

static void test_manifest__docker_manifest(void **state)
{
    sw_manifest *m = parse_ok(SW_MEDIA_DOCKER_MANIFEST, docker_manifest);
    assert_int_equal(sw_manifest_get_kind(m), SW_MANIFEST_IMAGE);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_DOCKER_MANIFEST);
    assert_int_equal(sw_manifest_config(m)->size, 7);
    assert_int_equal(sw_manifest_layer_count(m), 1);
    sw_manifest_free(m);
    /* A generic Content-Type defers to the body's mediaType. */
    m = parse_ok("application/json", docker_manifest);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_DOCKER_MANIFEST);
    sw_manifest_free(m);
    m = parse_ok(NULL, docker_manifest);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_DOCKER_MANIFEST);
    sw_manifest_free(m);
}

static void test_manifest__oci_index(void **state)
{
    sw_manifest *m = parse_ok(SW_MEDIA_OCI_INDEX, oci_index);
    assert_int_equal(sw_manifest_get_kind(m), SW_MANIFEST_INDEX);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_OCI_INDEX);
    assert_null(sw_manifest_config(m));
    assert_int_equal(sw_manifest_layer_count(m), 0);
    assert_int_equal(sw_manifest_entry_count(m), 3);
    const sw_descriptor *e = sw_manifest_entry(m, 1);
    assert_string_equal(e->os, "linux");
    assert_string_equal(e->architecture, "arm64");
    assert_string_equal(e->variant, "v8");
    assert_int_equal(e->size, 501);
    assert_string_equal(sw_manifest_entry(m, 2)->os, ""); /* no platform */
    assert_ptr_equal(sw_manifest_find_platform(m, "linux", "amd64", NULL), sw_manifest_entry(m, 0));
    assert_ptr_equal(sw_manifest_find_platform(m, "linux", "arm64", ""), e);
    assert_null(sw_manifest_find_platform(m, "windows", "amd64", NULL));
    sw_manifest_free(m);
}

static void test_manifest__docker_list(void **state)
{
    sw_manifest *m = parse_ok(SW_MEDIA_DOCKER_LIST, docker_list);
    assert_int_equal(sw_manifest_get_kind(m), SW_MANIFEST_INDEX);
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_DOCKER_LIST);
    assert_string_equal(sw_manifest_find_platform(m, "linux", "arm", "v6")->digest, DB);
    assert_string_equal(sw_manifest_find_platform(m, "linux", "arm", "v7")->digest, DA);
    assert_string_equal(sw_manifest_find_platform(m, "linux", "arm", NULL)->digest, DA);
    sw_manifest_free(m);
}

static void test_manifest__by_shape(void **state)
{
    /* OCI lets both mediaType fields be absent. */
    sw_manifest *m = parse_ok("application/octet-stream",
                              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},"
                              "\"layers\":[]}");
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_OCI_MANIFEST);
    assert_int_equal(sw_manifest_layer_count(m), 0);
    assert_string_equal(sw_manifest_config(m)->media_type, "");
    sw_manifest_free(m);
    m = parse_ok("", "{\"schemaVersion\":2,\"manifests\":[]}");
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_OCI_INDEX);
    sw_manifest_free(m);
    /* Content-Type alone decides when the body has no mediaType. */
    m = parse_ok(SW_MEDIA_DOCKER_LIST, "{\"schemaVersion\":2,\"manifests\":[]}");
    assert_string_equal(sw_manifest_media_type(m), SW_MEDIA_DOCKER_LIST);
    sw_manifest_free(m);
}

static void test_manifest__rejects(void **state)
{
    parse_bad(SW_MEDIA_OCI_MANIFEST, "{\"schemaVersion\":2,", SW_EINVALID, "manifest:");
    parse_bad(SW_MEDIA_OCI_MANIFEST, "[]", SW_EINVALID, "not a JSON object");
    parse_bad(SW_MEDIA_OCI_MANIFEST, "{\"config\":{}}", SW_EINVALID, "schemaVersion");
    parse_bad(SW_MEDIA_OCI_MANIFEST, "{\"schemaVersion\":3}", SW_EINVALID, "is not 2");
    parse_bad(SW_MEDIA_OCI_MANIFEST, "{\"schemaVersion\":\"2\"}", SW_EINVALID, "schemaVersion");
    parse_bad(NULL, "{\"schemaVersion\":1,\"fsLayers\":[]}", SW_EUNSUPPORTED, "schema1");
    parse_bad("application/vnd.docker.distribution.manifest.v1+prettyjws", "{\"schemaVersion\":2}",
              SW_EUNSUPPORTED, "schema1");
    parse_bad("application/vnd.example+json", oci_manifest, SW_EUNSUPPORTED, "unsupported");
    parse_bad(NULL, "{\"schemaVersion\":2,\"mediaType\":\"x/y\"}", SW_EUNSUPPORTED, "x/y");
    parse_bad(SW_MEDIA_DOCKER_MANIFEST, oci_manifest, SW_EINVALID, "does not match");
    parse_bad(SW_MEDIA_OCI_INDEX, oci_manifest, SW_EINVALID, "does not match");
    parse_bad(NULL, "{\"schemaVersion\":2}", SW_EINVALID, "neither config nor manifests");
    parse_bad(SW_MEDIA_OCI_MANIFEST, "{\"schemaVersion\":2,\"layers\":[]}", SW_EINVALID,
              "config is not an object");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1}}", SW_EINVALID,
              "no layers array");
    parse_bad(SW_MEDIA_OCI_INDEX, "{\"schemaVersion\":2,\"manifests\":{}}", SW_EINVALID,
              "no manifests array");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:abc\",\"size\":1},"
              "\"layers\":[]}",
              SW_EINVALID, "config: digest");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":-1},"
              "\"layers\":[]}",
              SW_EINVALID, "size");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},"
              "\"layers\":[{\"digest\":\"" DA "\",\"size\":1.5}]}",
              SW_EINVALID, "layers[0]");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1,"
              "\"mediaType\":7},\"layers\":[]}",
              SW_EINVALID, "mediaType is not a string");
    parse_bad(SW_MEDIA_OCI_INDEX,
              "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" DA "\",\"size\":1,"
              "\"platform\":\"linux\"}]}",
              SW_EINVALID, "platform");
    parse_bad(SW_MEDIA_OCI_INDEX,
              "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" DA "\",\"size\":1,"
              "\"platform\":{\"os\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}]}",
              SW_EINVALID, "longer than");
    /* Duplicate keys could make two parsers see two different manifests. */
    parse_bad(SW_MEDIA_OCI_INDEX, "{\"schemaVersion\":2,\"manifests\":[],\"manifests\":[]}",
              SW_EINVALID, NULL);
    sw_manifest *m;
    assert_int_equal(sw_manifest_parse(NULL, NULL, 0, &m), SW_EINVALID);
}

static void test_manifest__bounds(void **state)
{
    sw_buf b = SW_BUF_INIT(SW_MANIFEST_MAX_BYTES * 2);
    sw_buf_puts(&b, "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},"
                    "\"layers\":[");
    for (int i = 0; i < SW_MANIFEST_MAX_ENTRIES; i++)
        sw_buf_printf(&b, "%s{\"digest\":\"" DB "\",\"size\":%d}", i ? "," : "", i);
    sw_buf_puts(&b, "]}");
    sw_manifest *m = NULL;
    assert_int_equal(sw_manifest_parse(SW_MEDIA_OCI_MANIFEST, b.ptr, b.len, &m), 0);
    assert_int_equal(sw_manifest_layer_count(m), SW_MANIFEST_MAX_ENTRIES);
    assert_int_equal(sw_manifest_layer(m, 999)->size, 999);
    sw_manifest_free(m);
    /* One more layer is refused. */
    b.len -= 2;
    sw_buf_puts(&b, ",{\"digest\":\"" DB "\",\"size\":1}]}");
    assert_int_equal(sw_manifest_parse(SW_MEDIA_OCI_MANIFEST, b.ptr, b.len, &m), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "more than the limit"));
    /* Over 1 MiB is refused before parsing. */
    while (b.len <= SW_MANIFEST_MAX_BYTES)
        sw_buf_puts(&b, "                                ");
    assert_int_equal(sw_manifest_parse(SW_MEDIA_OCI_MANIFEST, b.ptr, b.len, &m), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "larger than"));
    sw_buf_dispose(&b);
}

/* Sizes above 2^53 are refused: summing up to SW_MANIFEST_MAX_ENTRIES of them cannot
 * overflow an int64_t, and JSON clients keep every size up to 2^53 exact. */
static void test_manifest__size_limit(void **state)
{
    const char *at_limit = "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\","
                           "\"size\":9007199254740992},\"layers\":[]}";
    sw_manifest *m = parse_ok(SW_MEDIA_OCI_MANIFEST, at_limit);
    assert_int_equal(sw_manifest_config(m)->size, 9007199254740992LL);
    sw_manifest_free(m);
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\","
              "\"size\":9007199254740993},\"layers\":[]}",
              SW_EINVALID,
              "manifest config: size 9007199254740993 is larger than 9007199254740992 bytes");
    parse_bad(SW_MEDIA_OCI_MANIFEST,
              "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},"
              "\"layers\":[{\"digest\":\"" DB "\",\"size\":9223372036854775807},"
              "{\"digest\":\"" DB "\",\"size\":9223372036854775807}]}",
              SW_EINVALID, "manifest layers[0]: size 9223372036854775807");
    parse_bad(SW_MEDIA_OCI_INDEX,
              "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" DA "\",\"size\":1},"
              "{\"digest\":\"" DB "\",\"size\":9007199254740993}]}",
              SW_EINVALID, "manifest manifests[1]: size");
}

static const char config_blob[] =
    "{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\","
    "\"created\":\"2024-01-02T03:04:05Z\",\"author\":\"me\","
    "\"config\":{\"User\":\"1001\",\"WorkingDir\":\"/app\","
    "\"Env\":[\"PATH=/usr/bin\",\"A=b=c\"],\"Entrypoint\":[\"/bin/sh\",\"-c\"],"
    "\"Cmd\":null,\"Labels\":{\"io.k8s.display-name\":\"demo\",\"x\":\"\"},"
    "\"ExposedPorts\":{\"8080/tcp\":{},\"53/udp\":{}}},"
    "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" DA "\",\"" DB "\"]},"
    "\"history\":[{\"created_by\":\"x\"}]}";

static void test_manifest__config(void **state)
{
    sw_image_config *c = NULL;
    assert_int_equal(sw_image_config_parse(config_blob, strlen(config_blob), &c), 0);
    assert_string_equal(sw_image_config_str(c, "architecture"), "arm64");
    assert_string_equal(sw_image_config_str(c, "os"), "linux");
    assert_string_equal(sw_image_config_str(c, "variant"), "v8");
    assert_string_equal(sw_image_config_str(c, "created"), "2024-01-02T03:04:05Z");
    assert_string_equal(sw_image_config_str(c, "config.User"), "1001");
    assert_string_equal(sw_image_config_str(c, "config.WorkingDir"), "/app");
    assert_null(sw_image_config_str(c, "nope"));
    sw_strv env = sw_image_config_env(c);
    assert_int_equal(env.n, 2);
    assert_string_equal(env.v[1], "A=b=c");
    sw_strv ep = sw_image_config_entrypoint(c);
    assert_int_equal(ep.n, 2);
    assert_string_equal(ep.v[0], "/bin/sh");
    assert_int_equal(sw_image_config_cmd(c).n, 0);
    sw_strv keys = sw_image_config_label_keys(c), vals = sw_image_config_label_values(c);
    assert_int_equal(keys.n, 2);
    assert_string_equal(keys.v[0], "io.k8s.display-name");
    assert_string_equal(vals.v[0], "demo");
    assert_string_equal(vals.v[1], "");
    sw_strv ports = sw_image_config_exposed_ports(c);
    assert_int_equal(ports.n, 2);
    assert_string_equal(ports.v[0], "8080/tcp");
    sw_strv ids = sw_image_config_diff_ids(c);
    assert_int_equal(ids.n, 2);
    assert_string_equal(ids.v[1], DB);
    assert_true(json_is_array(json_object_get(sw_image_config_json(c), "history")));
    sw_image_config_free(c);
    /* Everything is optional. */
    assert_int_equal(sw_image_config_parse("{}", 2, &c), 0);
    assert_null(sw_image_config_str(c, "os"));
    assert_int_equal(sw_image_config_env(c).n, 0);
    sw_image_config_free(c);
}

static void config_bad(const char *body, const char *msg_part)
{
    sw_image_config *c = NULL;
    assert_int_equal(sw_image_config_parse(body, strlen(body), &c), SW_EINVALID);
    assert_null(c);
    if (!strstr(sw_error_msg(), msg_part))
        fail_msg("message \"%s\" lacks \"%s\"", sw_error_msg(), msg_part);
}

static void test_manifest__config_rejects(void **state)
{
    config_bad("nope", "image config:");
    config_bad("[1]", "not a JSON object");
    config_bad("{\"os\":1}", "os is not a string");
    config_bad("{\"config\":[]}", "config is not an object");
    config_bad("{\"config\":{\"Env\":\"A=b\"}}", "Env is not an array");
    config_bad("{\"config\":{\"Cmd\":[1]}}", "Cmd[0] is not a string");
    config_bad("{\"config\":{\"Labels\":{\"a\":1}}}", "Labels[a]");
    config_bad("{\"config\":{\"ExposedPorts\":[]}}", "ExposedPorts is not an object");
    config_bad("{\"config\":{\"User\":0}}", "config.User");
    config_bad("{\"rootfs\":{\"diff_ids\":{}}}", "diff_ids");
    config_bad("{\"rootfs\":[]}", "rootfs");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest__oci_manifest),
        cmocka_unit_test(test_manifest__docker_manifest),
        cmocka_unit_test(test_manifest__oci_index),
        cmocka_unit_test(test_manifest__docker_list),
        cmocka_unit_test(test_manifest__by_shape),
        cmocka_unit_test(test_manifest__rejects),
        cmocka_unit_test(test_manifest__bounds),
        cmocka_unit_test(test_manifest__size_limit),
        cmocka_unit_test(test_manifest__config),
        cmocka_unit_test(test_manifest__config_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
