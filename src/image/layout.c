/* layout: OCI image layout writer. Paths are built in fixed PATH_MAX buffers (refused when
 * they do not fit); every file is written under a temporary name in its final directory and
 * renamed into place, so a reader never sees a half-written blob or index. Design note:
 * docs/internals/image.md. */
#include "image/layout.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/path.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INDEX_DEPTH 16
#define LAYOUT_VERSION "{\"imageLayoutVersion\":\"1.0.0\"}"

struct sw_oci_layout {
    char dir[PATH_MAX];
    json_t *index; /* the image index written to index.json */
};

static int join(char *out, const char *dir, const char *a, const char *b)
{
    int n = snprintf(out, PATH_MAX, "%s/%s%s%s", dir, a, b ? "/" : "", b ? b : "");
    if (n < 0 || n >= PATH_MAX)
        return sw_error_set(SW_EINVALID, "oci layout: path under %.200s is too long", dir);
    return 0;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    return sw_error_set(SW_ERROR, "oci layout: cannot create %s: %s", path, sw_strerror(errno));
}

/* A fresh temporary name next to final. */
static int temp_name(char *out, const char *final)
{
    char id[37];
    sw_uuid_v4(id);
    int n = snprintf(out, PATH_MAX, "%s.tmp-%s", final, id);
    if (n < 0 || n >= PATH_MAX)
        return sw_error_set(SW_EINVALID, "oci layout: path %.200s is too long", final);
    return 0;
}

/* Writes data to final through a temporary file and a rename. */
static int write_atomic(const char *final, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    int error = temp_name(tmp, final);
    if (error < 0)
        return error;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "oci layout: cannot create %s: %s", tmp, sw_strerror(errno));
    error = sw_path_write_fd(fd, tmp, data, len);
    if (close(fd) < 0 && error == 0)
        error = sw_error_set(SW_ERROR, "oci layout: closing %s: %s", tmp, sw_strerror(errno));
    if (error == 0 && rename(tmp, final) < 0)
        error = sw_error_set(SW_ERROR, "oci layout: renaming to %s: %s", final, sw_strerror(errno));
    if (error < 0)
        unlink(tmp);
    return error;
}

static int canonical_write(const json_t *j, const char *path)
{
    char *s = NULL;
    size_t len = 0;
    int error = sw_oci_json_canonical(j, &s, &len);
    if (error == 0)
        error = write_atomic(path, s, len);
    sw_free(s);
    return error;
}

static json_t *empty_index(void)
{
    return json_pack("{s:i, s:s, s:[]}", "schemaVersion", 2, "mediaType", SW_OCI_MEDIA_INDEX,
                     "manifests");
}

static int load_index(sw_oci_layout *l)
{
    char path[PATH_MAX], *body = NULL;
    size_t len = 0;
    int error = join(path, l->dir, "index.json", NULL);
    if (error < 0)
        return error;
    error = sw_path_read(path, SW_OCI_INDEX_MAX, false, &body, &len);
    if (error == SW_ENOTFOUND) {
        l->index = empty_index();
        return canonical_write(l->index, path);
    }
    if (error < 0)
        return error;
    error = sw_json_parse(body, len, INDEX_DEPTH, 0, &l->index);
    sw_free(body);
    if (error < 0) {
        char why[256];
        sw_strlcpy(why, sw_error_msg(), sizeof(why));
        return sw_error_set(SW_EINVALID, "oci layout: %s: %s", path, why);
    }
    if (!json_is_array(json_object_get(l->index, "manifests")))
        return sw_error_set(SW_EINVALID, "oci layout: %s has no manifests list", path);
    return 0;
}

static int ensure_layout_file(sw_oci_layout *l)
{
    char path[PATH_MAX], *body = NULL;
    size_t len = 0;
    int error = join(path, l->dir, "oci-layout", NULL);
    if (error < 0)
        return error;
    error = sw_path_read(path, 4096, false, &body, &len);
    if (error == SW_ENOTFOUND)
        return write_atomic(path, LAYOUT_VERSION, strlen(LAYOUT_VERSION));
    if (error < 0)
        return error;
    json_t *j = NULL;
    error = sw_json_parse(body, len, 4, 0, &j);
    sw_free(body);
    if (error == 0 && !json_is_string(json_object_get(j, "imageLayoutVersion")))
        error = SW_EINVALID;
    json_decref(j);
    if (error < 0)
        return sw_error_set(SW_EINVALID, "oci layout: %s is not a valid oci-layout file", path);
    return 0;
}

int sw_oci_layout_open(sw_oci_layout **out, const char *dir)
{
    sw_oci_layout *l = sw_calloc(1, sizeof(*l));
    char path[PATH_MAX];
    int error = 0;
    *out = NULL;
    if (sw_strlcpy(l->dir, dir, sizeof(l->dir)) >= sizeof(l->dir) - 64) {
        error = sw_error_set(SW_EINVALID, "oci layout: directory name is too long");
        goto done;
    }
    error = make_dir(l->dir);
    if (error == 0)
        error = join(path, l->dir, "blobs", NULL);
    if (error == 0)
        error = make_dir(path);
    if (error == 0)
        error = join(path, l->dir, "blobs", "sha256");
    if (error == 0)
        error = make_dir(path);
    if (error == 0)
        error = ensure_layout_file(l);
    if (error == 0)
        error = load_index(l);
done:
    if (error < 0) {
        sw_oci_layout_free(l);
        return error;
    }
    *out = l;
    return 0;
}

void sw_oci_layout_free(sw_oci_layout *l)
{
    if (!l)
        return;
    json_decref(l->index);
    sw_free(l);
}

static int blob_path(const sw_oci_layout *l, const char *digest, char *out)
{
    return join(out, l->dir, "blobs/sha256", digest + 7);
}

int sw_oci_layout_put_blob(sw_oci_layout *l, const void *data, size_t len,
                           char digest[SW_SHA256_DIGEST_BUF])
{
    char d[SW_SHA256_DIGEST_BUF], path[PATH_MAX];
    struct stat st;
    sw_sha256_digest(data, len, d);
    if (digest)
        memcpy(digest, d, sizeof(d));
    int error = blob_path(l, d, path);
    if (error < 0)
        return error;
    if (stat(path, &st) == 0 && (size_t)st.st_size == len)
        return 0;
    return write_atomic(path, data, len);
}

int sw_oci_layout_put_layer(sw_oci_layout *l, sw_tar *tar, const sw_layer_opts *opts,
                            sw_layer_info *info)
{
    char tmp[PATH_MAX], final[PATH_MAX];
    sw_layer_opts o = *opts;
    if (opts->out_path)
        return sw_error_set(SW_EINVALID, "oci layout: put_layer chooses the file itself");
    int error = join(final, l->dir, "blobs/sha256", "layer");
    if (error == 0)
        error = temp_name(tmp, final);
    if (error < 0)
        return error;
    o.out_path = tmp;
    error = sw_layer_build(tar, &o, info);
    if (error < 0)
        return error;
    error = blob_path(l, info->digest, final);
    if (error == 0 && rename(tmp, final) < 0)
        error = sw_error_set(SW_ERROR, "oci layout: renaming to %s: %s", final, sw_strerror(errno));
    if (error < 0)
        unlink(tmp);
    return error;
}

static bool has_ref(json_t *entry, const char *ref_name)
{
    json_t *ann = json_object_get(entry, "annotations");
    return sw_str_eq(json_string_value(json_object_get(ann, SW_OCI_REF_NAME)), ref_name);
}

int sw_oci_layout_tag(sw_oci_layout *l, const sw_oci_desc *manifest, const char *ref_name)
{
    char path[PATH_MAX];
    json_t *list = json_object_get(l->index, "manifests");
    if (!ref_name || !*ref_name)
        return sw_error_set(SW_EINVALID, "oci layout: empty ref name");
    if (!sw_sha256_digest_valid(manifest->digest))
        return sw_error_set(SW_EINVALID, "oci layout: manifest digest is invalid");
    for (size_t i = json_array_size(list); i > 0; i--)
        if (has_ref(json_array_get(list, i - 1), ref_name))
            json_array_remove(list, i - 1);
    json_t *e = json_pack("{s:s, s:s, s:I, s:{s:s}}", "mediaType", manifest->media_type, "digest",
                          manifest->digest, "size", (json_int_t)manifest->size, "annotations",
                          SW_OCI_REF_NAME, ref_name);
    if (!e)
        return sw_error_set(SW_EINVALID, "oci layout: ref name or media type is not UTF-8");
    json_array_append_new(list, e);
    int error = join(path, l->dir, "index.json", NULL);
    if (error < 0)
        return error;
    return canonical_write(l->index, path);
}

int sw_oci_layout_put_image(sw_oci_layout *l, const sw_oci_image *img, sw_oci_format fmt,
                            const char *ref_name, sw_oci_desc *manifest)
{
    char *cfg = NULL, *man = NULL;
    size_t cfg_len = 0, man_len = 0;
    sw_oci_desc cd, md;
    int error = sw_oci_image_config(img, fmt, &cfg, &cfg_len, &cd);
    if (error == 0)
        error = sw_oci_image_manifest(img, fmt, &man, &man_len, &md);
    if (error == 0)
        error = sw_oci_layout_put_blob(l, cfg, cfg_len, NULL);
    if (error == 0)
        error = sw_oci_layout_put_blob(l, man, man_len, NULL);
    if (error == 0 && ref_name)
        error = sw_oci_layout_tag(l, &md, ref_name);
    if (error == 0 && manifest)
        *manifest = md;
    sw_free(cfg);
    sw_free(man);
    return error;
}

/* ---- reading ---- */

int sw_oci_layout_blob_path(const char *dir, const char *digest, char *out)
{
    if (!sw_sha256_digest_valid(digest))
        return sw_error_set(SW_EINVALID, "oci layout: \"%.80s\" is not a sha256 digest", digest);
    return join(out, dir, "blobs/sha256", digest + 7);
}

int sw_oci_layout_read_manifest(const char *dir, const char *ref_name, size_t max, char **body,
                                size_t *len, char media[128], char digest[80])
{
    char path[PATH_MAX], got[SW_SHA256_DIGEST_BUF];
    size_t i;
    json_t *index = NULL, *e, *hit = NULL;
    *body = NULL;
    int error = join(path, dir, "index.json", NULL);
    if (error == 0 && (error = sw_path_read(path, SW_OCI_INDEX_MAX, true, body, len)) == 0) {
        error = sw_json_parse(*body, *len, INDEX_DEPTH, 0, &index);
        sw_free(*body);
        *body = NULL;
        if (error < 0)
            error = sw_error_set(SW_EINVALID, "oci layout: %s is not JSON", path);
    }
    json_array_foreach(json_object_get(index, "manifests"), i, e)
    {
        if (error == 0 && !hit && has_ref(e, ref_name))
            hit = e;
    }
    const char *d = sw_json_str_at(hit, "digest"), *mt = sw_json_str_at(hit, "mediaType");
    if (error == 0 && !hit)
        error =
            sw_error_set(SW_ENOTFOUND, "oci layout: no image tagged %.100s in %s", ref_name, path);
    if (error == 0)
        error = sw_oci_layout_blob_path(dir, d, path);
    if (error == 0)
        error = sw_path_read(path, max, true, body, len);
    if (error == 0) {
        sw_sha256_digest(*body, *len, got);
        if (strcmp(got, d))
            error = sw_error_set(SW_EINVALID, "oci layout: manifest %s has the digest %s", d, got);
    }
    if (error == 0) {
        sw_strlcpy(media, mt ? mt : SW_OCI_MEDIA_MANIFEST, 128);
        sw_strlcpy(digest, d, 80);
    } else {
        sw_free(*body);
        *body = NULL;
    }
    json_decref(index);
    return error;
}
