/* oci: the image config is kept as one jansson object that the setters edit in place (a base
 * image's config is filtered into it first, keeping only the fields slipway understands);
 * layer descriptors are a plain array. Encoding is jansson's compact form with sorted keys,
 * which is what makes config and manifest digests a function of their content only. Design
 * note: docs/internals/image.md. */
#include "image/oci.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define BASE_JSON_DEPTH 32
#define CANON_MAX (16 * 1024 * 1024)

struct sw_oci_image {
    json_t *cfg;         /* the config object */
    sw_oci_desc *layers; /* one per rootfs.diff_ids entry */
    size_t nlayers, cap;
    char created[32];    /* RFC 3339 */
    json_t *annotations; /* the manifest's, or NULL */
};

const char *sw_oci_layer_media_type(sw_compress_kind k)
{
    switch (k) {
    case SW_COMPRESS_GZIP:
        return SW_OCI_MEDIA_LAYER_GZIP;
    case SW_COMPRESS_ZSTD:
        return SW_OCI_MEDIA_LAYER_ZSTD;
    case SW_COMPRESS_NONE:
        return SW_OCI_MEDIA_LAYER;
    }
    return SW_OCI_MEDIA_LAYER;
}

const char *sw_oci_host_arch(void)
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__arm__)
    return "arm";
#elif defined(__i386__)
    return "386";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
    return "unknown";
#endif
}

/* ---- canonical JSON ---- */

static int canon_cb(const char *buffer, size_t size, void *data)
{
    return sw_buf_put(data, buffer, size) < 0 ? -1 : 0;
}

int sw_oci_json_canonical(const json_t *j, char **out, size_t *len)
{
    sw_buf b = SW_BUF_INIT(CANON_MAX);
    if (json_dump_callback(j, canon_cb, &b, JSON_COMPACT | JSON_SORT_KEYS) < 0 ||
        sw_buf_error(&b) < 0) {
        sw_buf_dispose(&b);
        return sw_error_set(SW_ELIMIT, "oci: JSON encoding failed or exceeded %d bytes", CANON_MAX);
    }
    *out = sw_buf_detach(&b, len);
    return 0;
}

static void desc_fill(sw_oci_desc *d, const char *media_type, const char *json, size_t len)
{
    memset(d, 0, sizeof(*d));
    sw_strlcpy(d->media_type, media_type, sizeof(d->media_type));
    sw_sha256_digest(json, len, d->digest);
    d->size = (int64_t)len;
}

static json_t *desc_json(const char *media_type, const sw_oci_desc *d)
{
    return json_pack("{s:s, s:s, s:I}", "mediaType", media_type, "digest", d->digest, "size",
                     (json_int_t)d->size);
}

/* ---- construction ---- */

static json_t *utf8(const char *s)
{
    return s ? json_string(s) : NULL;
}

static int bad_utf8(const char *what)
{
    return sw_error_set(SW_EINVALID, "oci: %s is missing or not valid UTF-8", what);
}

static sw_oci_image *image_alloc(int64_t created)
{
    sw_oci_image *img = sw_calloc(1, sizeof(*img));
    sw_time_format(created, img->created, sizeof(img->created));
    img->cfg = json_object();
    json_object_set_new(img->cfg, "created", json_string(img->created));
    json_object_set_new(img->cfg, "config", json_object());
    json_object_set_new(img->cfg, "rootfs", json_pack("{s:s, s:[]}", "type", "layers", "diff_ids"));
    json_object_set_new(img->cfg, "history", json_array());
    return img;
}

int sw_oci_image_new(sw_oci_image **out, const char *os, const char *arch, int64_t created)
{
    sw_oci_image *img = image_alloc(created);
    json_object_set_new(img->cfg, "os", json_string(os && *os ? os : "linux"));
    json_object_set_new(img->cfg, "architecture",
                        json_string(arch && *arch ? arch : sw_oci_host_arch()));
    *out = img;
    return 0;
}

void sw_oci_image_free(sw_oci_image *img)
{
    if (!img)
        return;
    json_decref(img->cfg);
    json_decref(img->annotations);
    sw_free(img->layers);
    sw_free(img);
}

/* ---- base images ---- */

static bool is_str_array(const json_t *v)
{
    size_t i;
    json_t *x;
    if (!json_is_array(v))
        return false;
    json_array_foreach(v, i, x)
    {
        if (!json_is_string(x))
            return false;
    }
    return true;
}

static bool is_str_object(const json_t *v)
{
    const char *k;
    json_t *x;
    if (!json_is_object(v))
        return false;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!json_is_string(x))
            return false;
    }
    return true;
}

/* A set (ExposedPorts, Volumes): the keys count, values become {}. */
static json_t *copy_set(const json_t *v)
{
    const char *k;
    json_t *x, *out = json_object();
    json_object_foreach((json_t *)v, k, x)
    {
        (void)x;
        json_object_set_new(out, k, json_object());
    }
    return out;
}

typedef enum field_kind { F_STR, F_ARGV, F_SET, F_MAP } field_kind;

static const struct {
    const char *name;
    field_kind kind;
} config_fields[] = {
    {"Cmd", F_ARGV},         {"Entrypoint", F_ARGV}, {"Env", F_ARGV},
    {"ExposedPorts", F_SET}, {"Labels", F_MAP},      {"StopSignal", F_STR},
    {"User", F_STR},         {"Volumes", F_SET},     {"WorkingDir", F_STR},
};

/* Copies the known runtime config fields of base (the "config" object); null means absent. */
static int copy_runtime(json_t *dst, const json_t *base)
{
    for (size_t i = 0; i < sizeof(config_fields) / sizeof(config_fields[0]); i++) {
        const char *name = config_fields[i].name;
        json_t *v = json_object_get(base, name);
        if (!v || json_is_null(v))
            continue;
        bool ok = false;
        switch (config_fields[i].kind) {
        case F_STR:
            ok = json_is_string(v);
            break;
        case F_ARGV:
            ok = is_str_array(v);
            break;
        case F_SET:
            ok = json_is_object(v);
            break;
        case F_MAP:
            ok = is_str_object(v);
            break;
        }
        if (!ok)
            return sw_error_set(SW_EINVALID, "base image config: config.%s has the wrong type",
                                name);
        json_object_set_new(dst, name,
                            config_fields[i].kind == F_SET ? copy_set(v) : json_deep_copy(v));
    }
    return 0;
}

static int copy_platform(json_t *dst, const json_t *base)
{
    static const char *const strs[] = {"architecture", "os", "variant", "os.version"};
    for (size_t i = 0; i < 4; i++) {
        json_t *v = json_object_get(base, strs[i]);
        if (v && !json_is_string(v))
            return sw_error_set(SW_EINVALID, "base image config: %s is not a string", strs[i]);
        if (v && json_string_length(v))
            json_object_set_new(dst, strs[i], json_deep_copy(v));
    }
    json_t *f = json_object_get(base, "os.features");
    if (f && !is_str_array(f))
        return sw_error_set(SW_EINVALID, "base image config: os.features is not a list");
    if (f && json_array_size(f))
        json_object_set_new(dst, "os.features", json_deep_copy(f));
    if (!json_object_get(dst, "os"))
        json_object_set_new(dst, "os", json_string("linux"));
    if (!json_object_get(dst, "architecture"))
        json_object_set_new(dst, "architecture", json_string(sw_oci_host_arch()));
    return 0;
}

static int copy_diff_ids(json_t *dst, const json_t *base, size_t nlayers)
{
    json_t *rootfs = json_object_get(base, "rootfs");
    json_t *ids = json_object_get(rootfs, "diff_ids");
    json_t *type = json_object_get(rootfs, "type");
    json_t *out = json_object_get(json_object_get(dst, "rootfs"), "diff_ids");
    size_t i, n = json_array_size(ids);
    json_t *x;
    if (rootfs &&
        (!json_is_object(rootfs) || (type && !sw_str_eq(json_string_value(type), "layers"))))
        return sw_error_set(SW_EINVALID, "base image config: rootfs.type is not \"layers\"");
    if (ids && !json_is_array(ids))
        return sw_error_set(SW_EINVALID, "base image config: rootfs.diff_ids is not a list");
    if (n != nlayers)
        return sw_error_set(SW_EINVALID,
                            "base image: %zu diff_ids in the config but %zu layers in the "
                            "manifest",
                            n, nlayers);
    json_array_foreach(ids, i, x)
    {
        if (!sw_sha256_digest_valid(json_string_value(x)))
            return sw_error_set(SW_EINVALID,
                                "base image config: diff_id %zu is not a sha256 "
                                "digest",
                                i);
        json_array_append(out, x);
    }
    return 0;
}

static int copy_history(json_t *dst, const json_t *base)
{
    static const char *const strs[] = {"author", "comment", "created", "created_by"};
    json_t *h = json_object_get(base, "history"), *x;
    json_t *out = json_object_get(dst, "history");
    size_t i;
    if (!h || json_is_null(h))
        return 0;
    if (!json_is_array(h))
        return sw_error_set(SW_EINVALID, "base image config: history is not a list");
    json_array_foreach(h, i, x)
    {
        if (!json_is_object(x))
            return sw_error_set(SW_EINVALID, "base image config: history[%zu] is not an object", i);
        json_t *e = json_object();
        for (size_t k = 0; k < 4; k++) {
            json_t *v = json_object_get(x, strs[k]);
            if (json_is_string(v))
                json_object_set(e, strs[k], v);
        }
        if (json_is_true(json_object_get(x, "empty_layer")))
            json_object_set_new(e, "empty_layer", json_true());
        json_array_append_new(out, e);
    }
    return 0;
}

static int copy_layers(sw_oci_image *img, const sw_oci_desc *layers, size_t n)
{
    if (n > SW_OCI_MAX_LAYERS)
        return sw_error_set(SW_ELIMIT, "base image has %zu layers (at most %d)", n,
                            SW_OCI_MAX_LAYERS);
    for (size_t i = 0; i < n; i++)
        if (!sw_sha256_digest_valid(layers[i].digest) || layers[i].size < 0)
            return sw_error_set(SW_EINVALID, "base image: layer %zu has a bad descriptor", i);
    img->cap = n ? n : 1;
    img->layers = sw_calloc(img->cap, sizeof(sw_oci_desc));
    if (n)
        memcpy(img->layers, layers, n * sizeof(sw_oci_desc));
    img->nlayers = n;
    return 0;
}

int sw_oci_image_new_from_base(sw_oci_image **out, const char *config, size_t config_len,
                               const sw_oci_desc *layers, size_t nlayers, int64_t created)
{
    json_t *base = NULL;
    sw_oci_image *img = NULL;
    int error = 0;
    *out = NULL;
    if (config_len > SW_OCI_CONFIG_MAX)
        return sw_error_set(SW_ELIMIT, "base image config is larger than %d bytes",
                            SW_OCI_CONFIG_MAX);
    error = sw_json_parse(config, config_len, BASE_JSON_DEPTH, 0, &base);
    if (error < 0) {
        char why[256];
        sw_strlcpy(why, sw_error_msg(), sizeof(why));
        error = sw_error_set(SW_EINVALID, "base image config: %s", why);
        goto done;
    }
    json_t *rt = json_object_get(base, "config");
    if (!json_is_object(base) || (rt && !json_is_object(rt) && !json_is_null(rt))) {
        error = sw_error_set(SW_EINVALID, "base image config is not an image config object");
        goto done;
    }
    img = image_alloc(created);
    error = copy_platform(img->cfg, base);
    if (error == 0 && json_is_object(rt))
        error = copy_runtime(json_object_get(img->cfg, "config"), rt);
    if (error == 0)
        error = copy_diff_ids(img->cfg, base, nlayers);
    if (error == 0)
        error = copy_history(img->cfg, base);
    if (error == 0)
        error = copy_layers(img, layers, nlayers);
done:
    json_decref(base);
    if (error < 0) {
        sw_oci_image_free(img);
        return error;
    }
    *out = img;
    return 0;
}

/* ---- runtime config setters ---- */

static json_t *runtime(sw_oci_image *img)
{
    return json_object_get(img->cfg, "config");
}

static int set_string(sw_oci_image *img, const char *key, const char *value)
{
    json_t *v = utf8(value);
    if (!v)
        return bad_utf8(key);
    json_object_set_new(runtime(img), key, v);
    return 0;
}

static int set_argv(sw_oci_image *img, const char *key, const char *const *argv, size_t n)
{
    if (n == 0) {
        json_object_del(runtime(img), key);
        return 0;
    }
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *v = utf8(argv[i]);
        if (!v) {
            json_decref(a);
            return bad_utf8(key);
        }
        json_array_append_new(a, v);
    }
    json_object_set_new(runtime(img), key, a);
    return 0;
}

int sw_oci_image_set_env(sw_oci_image *img, const char *name, const char *value)
{
    if (!name || !*name || strchr(name, '='))
        return sw_error_set(SW_EINVALID,
                            "oci: environment variable name \"%.100s\" is empty "
                            "or contains '='",
                            name ? name : "");
    size_t nlen = strlen(name), i;
    char *kv = sw_malloc(nlen + strlen(value ? value : "") + 2);
    memcpy(kv, name, nlen);
    kv[nlen] = '=';
    memcpy(kv + nlen + 1, value ? value : "", strlen(value ? value : "") + 1);
    json_t *v = utf8(kv), *x;
    sw_free(kv);
    if (!v)
        return bad_utf8("Env");
    json_t *env = json_object_get(runtime(img), "Env");
    if (!env) {
        env = json_array();
        json_object_set_new(runtime(img), "Env", env);
    }
    json_array_foreach(env, i, x)
    {
        const char *s = json_string_value(x);
        if (strncmp(s, name, nlen) == 0 && (s[nlen] == '=' || s[nlen] == '\0'))
            return json_array_set_new(env, i, v) == 0 ? 0 : SW_ERROR;
    }
    json_array_append_new(env, v);
    return 0;
}

int sw_oci_image_set_entrypoint(sw_oci_image *img, const char *const *argv, size_t n)
{
    return set_argv(img, "Entrypoint", argv, n);
}

int sw_oci_image_set_cmd(sw_oci_image *img, const char *const *argv, size_t n)
{
    return set_argv(img, "Cmd", argv, n);
}

int sw_oci_image_set_workdir(sw_oci_image *img, const char *dir)
{
    return set_string(img, "WorkingDir", dir);
}

int sw_oci_image_set_user(sw_oci_image *img, const char *user)
{
    return set_string(img, "User", user);
}

int sw_oci_image_set_stop_signal(sw_oci_image *img, const char *signal)
{
    return set_string(img, "StopSignal", signal);
}

static int add_to_set(sw_oci_image *img, const char *field, const char *key)
{
    json_t *set = json_object_get(runtime(img), field);
    if (!set) {
        set = json_object();
        json_object_set_new(runtime(img), field, set);
    }
    if (json_object_set_new(set, key, json_object()) < 0)
        return bad_utf8(field);
    return 0;
}

int sw_oci_image_add_port(sw_oci_image *img, const char *port)
{
    const char *p = port ? port : "";
    uint64_t num = 0;
    const char *proto = "tcp";
    if (sw_parse_u64(&p, 65535, &num) < 0 || num == 0)
        goto bad;
    if (*p == '/') {
        proto = p + 1;
        if (strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0 && strcmp(proto, "sctp") != 0)
            goto bad;
    } else if (*p) {
        goto bad;
    }
    char key[32];
    snprintf(key, sizeof(key), "%u/%s", (unsigned)num, proto);
    return add_to_set(img, "ExposedPorts", key);
bad:
    return sw_error_set(SW_EINVALID,
                        "oci: invalid port \"%.40s\" (want PORT or PORT/tcp|udp|sctp "
                        "with PORT in 1-65535)",
                        port ? port : "");
}

int sw_oci_image_add_volume(sw_oci_image *img, const char *path)
{
    if (!path || !*path)
        return sw_error_set(SW_EINVALID, "oci: empty volume path");
    return add_to_set(img, "Volumes", path);
}

int sw_oci_image_set_label(sw_oci_image *img, const char *key, const char *value)
{
    if (!key || !*key)
        return sw_error_set(SW_EINVALID, "oci: empty label key");
    json_t *v = utf8(value);
    if (!v)
        return bad_utf8("label value");
    json_t *labels = json_object_get(runtime(img), "Labels");
    if (!labels) {
        labels = json_object();
        json_object_set_new(runtime(img), "Labels", labels);
    }
    if (json_object_set_new(labels, key, v) < 0)
        return bad_utf8("label key");
    return 0;
}

/* ---- layers and history ---- */

static int add_history(sw_oci_image *img, const char *created_by, bool empty)
{
    json_t *e = json_pack("{s:s}", "created", img->created);
    if (created_by && *created_by) {
        json_t *v = utf8(created_by);
        if (!v) {
            json_decref(e);
            return bad_utf8("history created_by");
        }
        json_object_set_new(e, "created_by", v);
    }
    if (empty)
        json_object_set_new(e, "empty_layer", json_true());
    json_array_append_new(json_object_get(img->cfg, "history"), e);
    return 0;
}

int sw_oci_image_add_history(sw_oci_image *img, const char *created_by)
{
    return add_history(img, created_by, true);
}

int sw_oci_image_add_layer(sw_oci_image *img, const sw_oci_desc *layer, const char *diff_id,
                           const char *created_by)
{
    if (img->nlayers >= SW_OCI_MAX_LAYERS)
        return sw_error_set(SW_ELIMIT, "oci: more than %d layers", SW_OCI_MAX_LAYERS);
    if (!sw_sha256_digest_valid(layer->digest) || !sw_sha256_digest_valid(diff_id) ||
        layer->size < 0 || !layer->media_type[0])
        return sw_error_set(SW_EINVALID, "oci: layer descriptor or diff_id is invalid");
    int error = add_history(img, created_by, false);
    if (error < 0)
        return error;
    if (img->nlayers == img->cap) {
        img->cap = img->cap ? img->cap * 2 : 8;
        img->layers = sw_realloc(img->layers, img->cap * sizeof(sw_oci_desc));
    }
    img->layers[img->nlayers++] = *layer;
    json_array_append_new(json_object_get(json_object_get(img->cfg, "rootfs"), "diff_ids"),
                          json_string(diff_id));
    return 0;
}

size_t sw_oci_image_layer_count(const sw_oci_image *img)
{
    return img->nlayers;
}

const sw_oci_desc *sw_oci_image_layer(const sw_oci_image *img, size_t i)
{
    return i < img->nlayers ? &img->layers[i] : NULL;
}

/* ---- blobs ---- */

int sw_oci_image_config(const sw_oci_image *img, sw_oci_format fmt, char **json, size_t *len,
                        sw_oci_desc *desc)
{
    int error = sw_oci_json_canonical(img->cfg, json, len);
    if (error < 0)
        return error;
    desc_fill(desc, fmt == SW_OCI_FORMAT_DOCKER ? SW_DOCKER_MEDIA_CONFIG : SW_OCI_MEDIA_CONFIG,
              *json, *len);
    return 0;
}

int sw_oci_image_set_annotation(sw_oci_image *img, const char *key, const char *value)
{
    if (!key || !*key)
        return bad_utf8("a manifest annotation's key");
    json_t *v = utf8(value);
    if (!img->annotations)
        img->annotations = json_object();
    if (!v || json_object_set_new(img->annotations, key, v) < 0)
        return bad_utf8("a manifest annotation"); /* set_new releases v on failure */
    return 0;
}

/* The media type a layer gets in a manifest of fmt, or NULL when fmt cannot carry it. */
static const char *layer_type_for(const char *mt, sw_oci_format fmt)
{
    bool gzip =
        strcmp(mt, SW_OCI_MEDIA_LAYER_GZIP) == 0 || strcmp(mt, SW_DOCKER_MEDIA_LAYER_GZIP) == 0;
    if (fmt == SW_OCI_FORMAT_DOCKER)
        return gzip ? SW_DOCKER_MEDIA_LAYER_GZIP : NULL;
    return gzip ? SW_OCI_MEDIA_LAYER_GZIP : mt;
}

int sw_oci_image_manifest(const sw_oci_image *img, sw_oci_format fmt, char **json, size_t *len,
                          sw_oci_desc *desc)
{
    char *cfg = NULL;
    size_t cfg_len = 0;
    sw_oci_desc cd;
    json_t *m = NULL, *layers = json_array();
    int error = sw_oci_image_config(img, fmt, &cfg, &cfg_len, &cd);
    if (error < 0)
        goto done;
    for (size_t i = 0; i < img->nlayers; i++) {
        const char *mt = layer_type_for(img->layers[i].media_type, fmt);
        if (!mt) {
            error = sw_error_set(SW_EUNSUPPORTED,
                                 "oci: layer %zu (%s) cannot be listed in a "
                                 "Docker schema2 manifest; use the OCI format",
                                 i, img->layers[i].media_type);
            goto done;
        }
        json_array_append_new(layers, desc_json(mt, &img->layers[i]));
    }
    bool docker = fmt == SW_OCI_FORMAT_DOCKER;
    m = json_pack("{s:i, s:s, s:o, s:O}", "schemaVersion", 2, "mediaType",
                  docker ? SW_DOCKER_MEDIA_MANIFEST : SW_OCI_MEDIA_MANIFEST, "config",
                  desc_json(cd.media_type, &cd), "layers", layers);
    if (json_object_size(img->annotations))
        json_object_set(m, "annotations", img->annotations);
    error = sw_oci_json_canonical(m, json, len);
    if (error < 0)
        goto done;
    desc_fill(desc, docker ? SW_DOCKER_MEDIA_MANIFEST : SW_OCI_MEDIA_MANIFEST, *json, *len);
done:
    sw_free(cfg);
    json_decref(layers);
    json_decref(m);
    return error;
}
