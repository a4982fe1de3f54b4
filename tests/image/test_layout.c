/* Unit tests for reading an OCI layout another tool wrote (src/image/layout.c): the manifest a
 * tag names comes back with its digest and media type; a missing tag is SW_ENOTFOUND; a digest
 * that is not sha256 (a path in disguise) and bytes that do not hash to their digest are
 * SW_EINVALID; blob paths are only made from valid digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "image/layout.h"
#include "image/oci.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/path.h"
#include "util/sha256.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[] = "/tmp/sw-test-layout-XXXXXX";

static void write_index(const char *body)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/index.json", dir);
    assert_int_equal(sw_path_write(path, body, strlen(body), 0644), 0);
}

static void test_read(void **state)
{
    (void)state;
    sw_oci_layout *l = NULL;
    sw_oci_image *img = NULL;
    sw_oci_desc m;
    assert_int_equal(sw_oci_layout_open(&l, dir), 0);
    assert_int_equal(sw_oci_image_new(&img, NULL, NULL, 0), 0);
    assert_int_equal(sw_oci_layout_put_image(l, img, SW_OCI_FORMAT_OCI, "latest", &m), 0);
    sw_oci_image_free(img);
    sw_oci_layout_free(l);

    char *body = NULL, media[128], digest[80], got[SW_SHA256_DIGEST_BUF];
    size_t len = 0;
    assert_int_equal(
        sw_oci_layout_read_manifest(dir, "latest", 1 << 20, &body, &len, media, digest), 0);
    assert_string_equal(digest, m.digest);
    assert_string_equal(media, SW_OCI_MEDIA_MANIFEST);
    sw_sha256_digest(body, len, got);
    assert_string_equal(got, m.digest);
    sw_free(body);
    assert_int_equal(sw_oci_layout_read_manifest(dir, "other", 1 << 20, &body, &len, media, digest),
                     SW_ENOTFOUND);
    assert_null(body);

    char path[PATH_MAX];
    assert_int_equal(sw_oci_layout_blob_path(dir, m.digest, path), 0);
    assert_non_null(strstr(path, "/blobs/sha256/"));
    assert_int_equal(sw_oci_layout_blob_path(dir, "sha256:../../etc/passwd", path), SW_EINVALID);
    assert_int_equal(sw_oci_layout_blob_path(dir, "sha512:00", path), SW_EINVALID);

    /* an index naming a path instead of a digest */
    write_index("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image."
                "manifest.v1+json\",\"digest\":\"sha256:../../../etc/passwd\",\"size\":1,"
                "\"annotations\":{\"org.opencontainers.image.ref.name\":\"latest\"}}]}");
    assert_int_equal(
        sw_oci_layout_read_manifest(dir, "latest", 1 << 20, &body, &len, media, digest),
        SW_EINVALID);
    assert_null(body);
    /* a blob whose bytes are not its digest's */
    char idx[512], zero[80];
    snprintf(zero, sizeof(zero), "sha256:%064d", 0);
    snprintf(idx, sizeof(idx),
             "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"%s\",\"size\":2,\"annotations\":"
             "{\"org.opencontainers.image.ref.name\":\"latest\"}}]}",
             zero);
    write_index(idx);
    assert_int_equal(sw_oci_layout_blob_path(dir, zero, path), 0);
    assert_int_equal(sw_path_write(path, "{}", 2, 0644), 0);
    assert_int_equal(
        sw_oci_layout_read_manifest(dir, "latest", 1 << 20, &body, &len, media, digest),
        SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "has the digest"));
    write_index("not json");
    assert_int_equal(
        sw_oci_layout_read_manifest(dir, "latest", 1 << 20, &body, &len, media, digest),
        SW_EINVALID);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sw_path_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
