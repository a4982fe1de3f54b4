/* manifest: OCI / Docker schema2 manifest, index and config blob parsing on jansson. The JSON
 * is parsed once, validated, copied into fixed-size descriptors and released, so a parsed
 * manifest holds no jansson state; a config keeps its json_t because it hands out strings. */
#include "registry/manifest.h"

#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MANIFEST_JSON_DEPTH 32
#define CONFIG_LIST_MAX 10000 /* entries of Env, Cmd, Labels, diff_ids ... */
#define DESCRIPTOR_SIZE_MAX ((json_int_t)1 << 53)

struct sw_manifest {
    sw_manifest_kind kind;
    const char *media_type; /* one of the SW_MEDIA_* literals */
    sw_descriptor config;   /* image manifests only */
    sw_descriptor *items;   /* layers or index entries */
    size_t n;
    json_t *annotations; /* the top-level "annotations" object, or NULL */
};

static const struct {
    const char *type;
    sw_manifest_kind kind;
} known_types[] = {
    {SW_MEDIA_OCI_MANIFEST, SW_MANIFEST_IMAGE},
    {SW_MEDIA_OCI_INDEX, SW_MANIFEST_INDEX},
    {SW_MEDIA_DOCKER_MANIFEST, SW_MANIFEST_IMAGE},
    {SW_MEDIA_DOCKER_LIST, SW_MANIFEST_INDEX},
};

/* Index into known_types of the media type in s[0..n), or -1. */
static int known_index(const char *s, size_t n)
{
    for (int i = 0; i < 4; i++)
        if (strlen(known_types[i].type) == n && strncasecmp(s, known_types[i].type, n) == 0)
            return i;
    return -1;
}

static bool is_schema1(const char *s, size_t n)
{
    return n >= 47 && strncasecmp(s, "application/vnd.docker.distribution.manifest.v1+", 47) == 0;
}

/* A Content-Type that says nothing about the manifest kind. */
static bool is_generic(const char *s, size_t n)
{
    static const char *const generic[] = {"application/json", "application/octet-stream",
                                          "text/plain", "binary/octet-stream", NULL};
    if (n == 0)
        return true;
    for (size_t i = 0; generic[i]; i++)
        if (strlen(generic[i]) == n && strncasecmp(s, generic[i], n) == 0)
            return true;
    return false;
}

/* Trims the parameters and whitespace of a Content-Type: *n is the length of the bare type. */
static const char *bare_type(const char *ct, size_t *n)
{
    if (!ct)
        ct = "";
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t len = strcspn(ct, ";");
    while (len && (ct[len - 1] == ' ' || ct[len - 1] == '\t'))
        len--;
    *n = len;
    return ct;
}

static int copy_str(char *dst, size_t n, json_t *v, const char *where, const char *field)
{
    if (!v)
        return 0;
    if (!json_is_string(v))
        return sw_error_set(SW_EINVALID, "manifest %s: %s is not a string", where, field);
    if (sw_strlcpy(dst, json_string_value(v), n) >= n)
        return sw_error_set(SW_EINVALID, "manifest %s: %s is longer than %zu bytes", where, field,
                            n - 1);
    return 0;
}

static int parse_platform(json_t *p, sw_descriptor *d, const char *where)
{
    if (!p)
        return 0;
    if (!json_is_object(p))
        return sw_error_set(SW_EINVALID, "manifest %s: platform is not an object", where);
    int error = copy_str(d->os, sizeof(d->os), json_object_get(p, "os"), where, "platform.os");
    if (error == 0)
        error = copy_str(d->architecture, sizeof(d->architecture),
                         json_object_get(p, "architecture"), where, "platform.architecture");
    if (error == 0)
        error = copy_str(d->variant, sizeof(d->variant), json_object_get(p, "variant"), where,
                         "platform.variant");
    return error;
}

static int parse_descriptor(json_t *j, sw_descriptor *d, const char *where, bool platform)
{
    memset(d, 0, sizeof(*d));
    if (!json_is_object(j))
        return sw_error_set(SW_EINVALID, "manifest %s is not an object", where);
    json_t *digest = json_object_get(j, "digest");
    if (!json_is_string(digest) || !sw_ref_digest_valid(json_string_value(digest)))
        return sw_error_set(SW_EINVALID, "manifest %s: digest missing or not a sha256 digest",
                            where);
    sw_strlcpy(d->digest, json_string_value(digest), sizeof(d->digest));
    json_t *size = json_object_get(j, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return sw_error_set(SW_EINVALID, "manifest %s: size missing or negative", where);
    /* 2^53 is the largest integer JSON clients keep exactly; it also keeps the sum of the
     * sizes of SW_MANIFEST_MAX_ENTRIES descriptors far from overflowing an int64_t. */
    if (json_integer_value(size) > DESCRIPTOR_SIZE_MAX)
        return sw_error_set(SW_EINVALID, "manifest %s: size %lld is larger than %lld bytes (2^53)",
                            where, (long long)json_integer_value(size),
                            (long long)DESCRIPTOR_SIZE_MAX);
    d->size = json_integer_value(size);
    int error = copy_str(d->media_type, sizeof(d->media_type), json_object_get(j, "mediaType"),
                         where, "mediaType");
    if (error == 0 && platform)
        error = parse_platform(json_object_get(j, "platform"), d, where);
    return error;
}

static int parse_items(json_t *arr, sw_manifest *m, const char *what)
{
    if (!json_is_array(arr))
        return sw_error_set(SW_EINVALID, "manifest has no %s array", what);
    size_t n = json_array_size(arr);
    if (n > SW_MANIFEST_MAX_ENTRIES)
        return sw_error_set(SW_EINVALID, "manifest has %zu %s, more than the limit of %d", n, what,
                            SW_MANIFEST_MAX_ENTRIES);
    m->items = sw_calloc(n ? n : 1, sizeof(sw_descriptor));
    bool platform = m->kind == SW_MANIFEST_INDEX;
    for (size_t i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof(where), "%s[%zu]", what, i);
        int error = parse_descriptor(json_array_get(arr, i), &m->items[i], where, platform);
        if (error < 0)
            return error;
        m->n++;
    }
    return 0;
}

/* Decides the manifest type from the Content-Type (ct) and the body. */
static int decide_type(const char *ct, json_t *root, int *type_out)
{
    size_t ctn;
    const char *t = bare_type(ct, &ctn);
    if (is_schema1(t, ctn))
        return sw_error_set(SW_EUNSUPPORTED, "Docker schema1 manifests are not supported");
    int from_ct = known_index(t, ctn);
    if (from_ct < 0 && !is_generic(t, ctn))
        return sw_error_set(SW_EUNSUPPORTED, "unsupported manifest media type \"%.*s\"",
                            (int)(ctn > 100 ? 100 : ctn), t);
    json_t *mt = json_object_get(root, "mediaType");
    if (mt && !json_is_string(mt))
        return sw_error_set(SW_EINVALID, "manifest mediaType is not a string");
    int from_body = -1;
    if (mt) {
        const char *b = json_string_value(mt);
        from_body = known_index(b, strlen(b));
        if (from_body < 0 && from_ct < 0)
            return sw_error_set(SW_EUNSUPPORTED, "unsupported manifest media type \"%.100s\"", b);
        if (from_ct >= 0 && from_body != from_ct)
            return sw_error_set(SW_EINVALID,
                                "manifest mediaType \"%.100s\" does not match the "
                                "Content-Type %s",
                                b, known_types[from_ct].type);
    }
    if (from_ct < 0)
        from_ct = from_body;
    if (from_ct < 0) {
        /* OCI allows omitting mediaType: decide by shape. */
        if (json_is_array(json_object_get(root, "manifests")))
            from_ct = 1;
        else if (json_is_object(json_object_get(root, "config")))
            from_ct = 0;
        else
            return sw_error_set(SW_EINVALID, "manifest has neither config nor manifests");
    }
    *type_out = from_ct;
    return 0;
}

static int check_schema_version(json_t *root)
{
    json_t *sv = json_object_get(root, "schemaVersion");
    if (!json_is_integer(sv))
        return sw_error_set(SW_EINVALID, "manifest schemaVersion missing or not an integer");
    if (json_integer_value(sv) == 1)
        return sw_error_set(SW_EUNSUPPORTED, "Docker schema1 manifests are not supported");
    if (json_integer_value(sv) != 2)
        return sw_error_set(SW_EINVALID, "manifest schemaVersion %lld is not 2",
                            (long long)json_integer_value(sv));
    return 0;
}

int sw_manifest_parse(const char *media_type, const char *body, size_t len, sw_manifest **out)
{
    json_t *root = NULL;
    sw_manifest *m = NULL;
    int type = -1, error = 0;
    if (!body || len > SW_MANIFEST_MAX_BYTES)
        return sw_error_set(SW_EINVALID, "manifest missing or larger than %d bytes",
                            SW_MANIFEST_MAX_BYTES);
    error = sw_json_parse(body, len, MANIFEST_JSON_DEPTH, SW_JSON_STRICT_DUPLICATES, &root);
    if (error < 0) {
        error = sw_error_set(SW_EINVALID, "manifest: %s", sw_error_msg());
        goto done;
    }
    if (!json_is_object(root)) {
        error = sw_error_set(SW_EINVALID, "manifest is not a JSON object");
        goto done;
    }
    error = check_schema_version(root);
    if (error == 0)
        error = decide_type(media_type, root, &type);
    if (error < 0)
        goto done;
    m = sw_calloc(1, sizeof(*m));
    m->kind = known_types[type].kind;
    m->media_type = known_types[type].type;
    if (json_is_object(json_object_get(root, "annotations")))
        m->annotations = json_incref(json_object_get(root, "annotations"));
    if (m->kind == SW_MANIFEST_IMAGE) {
        error = parse_descriptor(json_object_get(root, "config"), &m->config, "config", false);
        if (error == 0)
            error = parse_items(json_object_get(root, "layers"), m, "layers");
    } else {
        error = parse_items(json_object_get(root, "manifests"), m, "manifests");
    }
done:
    json_decref(root);
    if (error < 0) {
        sw_manifest_free(m);
        return error;
    }
    *out = m;
    return 0;
}

void sw_manifest_free(sw_manifest *m)
{
    if (!m)
        return;
    json_decref(m->annotations);
    sw_free(m->items);
    sw_free(m);
}

const char *sw_manifest_annotation(const sw_manifest *m, const char *key)
{
    return json_string_value(json_object_get(m->annotations, key));
}

sw_manifest_kind sw_manifest_get_kind(const sw_manifest *m)
{
    return m->kind;
}

const char *sw_manifest_media_type(const sw_manifest *m)
{
    return m->media_type;
}

const sw_descriptor *sw_manifest_config(const sw_manifest *m)
{
    return m->kind == SW_MANIFEST_IMAGE ? &m->config : NULL;
}

size_t sw_manifest_layer_count(const sw_manifest *m)
{
    return m->kind == SW_MANIFEST_IMAGE ? m->n : 0;
}

const sw_descriptor *sw_manifest_layer(const sw_manifest *m, size_t i)
{
    return (m->kind == SW_MANIFEST_IMAGE && i < m->n) ? &m->items[i] : NULL;
}

size_t sw_manifest_entry_count(const sw_manifest *m)
{
    return m->kind == SW_MANIFEST_INDEX ? m->n : 0;
}

const sw_descriptor *sw_manifest_entry(const sw_manifest *m, size_t i)
{
    return (m->kind == SW_MANIFEST_INDEX && i < m->n) ? &m->items[i] : NULL;
}

const sw_descriptor *sw_manifest_find_platform(const sw_manifest *m, const char *os,
                                               const char *architecture, const char *variant)
{
    for (size_t i = 0; i < sw_manifest_entry_count(m); i++) {
        const sw_descriptor *d = &m->items[i];
        if (strcmp(d->os, os) != 0 || strcmp(d->architecture, architecture) != 0)
            continue;
        if (variant && variant[0] && strcmp(d->variant, variant) != 0)
            continue;
        return d;
    }
    return NULL;
}

/* ---- image config ---- */

struct sw_image_config {
    json_t *root;
    const char **env, **entrypoint, **cmd, **ports, **diff_ids, **label_keys, **label_values;
    size_t env_n, entrypoint_n, cmd_n, ports_n, diff_ids_n, labels_n;
};

/* parent[key]: absent or null gives an empty list; otherwise an array of strings. */
static int str_array(json_t *parent, const char *key, const char ***out, size_t *n)
{
    json_t *a = json_object_get(parent, key);
    *n = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return sw_error_set(SW_EINVALID, "image config: %s is not an array", key);
    size_t count = json_array_size(a);
    if (count > CONFIG_LIST_MAX)
        return sw_error_set(SW_EINVALID, "image config: %s has more than %d entries", key,
                            CONFIG_LIST_MAX);
    *out = sw_calloc(count ? count : 1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (!s)
            return sw_error_set(SW_EINVALID, "image config: %s[%zu] is not a string", key, i);
        (*out)[(*n)++] = s;
    }
    return 0;
}

/* parent[key] as an object: its keys, and (if values) its string values. */
static int str_map(json_t *parent, const char *key, const char ***keys, const char ***values,
                   size_t *n)
{
    json_t *o = json_object_get(parent, key);
    *n = 0;
    if (!o || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return sw_error_set(SW_EINVALID, "image config: %s is not an object", key);
    size_t count = json_object_size(o);
    if (count > CONFIG_LIST_MAX)
        return sw_error_set(SW_EINVALID, "image config: %s has more than %d entries", key,
                            CONFIG_LIST_MAX);
    *keys = sw_calloc(count ? count : 1, sizeof(char *));
    if (values)
        *values = sw_calloc(count ? count : 1, sizeof(char *));
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (values && !json_is_string(v))
            return sw_error_set(SW_EINVALID, "image config: %s[%.100s] is not a string", key, k);
        (*keys)[*n] = k;
        if (values)
            (*values)[*n] = json_string_value(v);
        (*n)++;
    }
    return 0;
}

static int check_strings(json_t *obj, const char *const *fields, const char *where)
{
    for (size_t i = 0; fields[i]; i++) {
        json_t *v = json_object_get(obj, fields[i]);
        if (v && !json_is_string(v) && !json_is_null(v))
            return sw_error_set(SW_EINVALID, "image config: %s%s is not a string", where,
                                fields[i]);
    }
    return 0;
}

static int parse_config_section(sw_image_config *c, json_t *cfg)
{
    static const char *const fields[] = {"WorkingDir", "User", NULL};
    if (!cfg || json_is_null(cfg))
        return 0;
    if (!json_is_object(cfg))
        return sw_error_set(SW_EINVALID, "image config: config is not an object");
    int error = check_strings(cfg, fields, "config.");
    if (error == 0)
        error = str_array(cfg, "Env", &c->env, &c->env_n);
    if (error == 0)
        error = str_array(cfg, "Entrypoint", &c->entrypoint, &c->entrypoint_n);
    if (error == 0)
        error = str_array(cfg, "Cmd", &c->cmd, &c->cmd_n);
    if (error == 0)
        error = str_map(cfg, "Labels", &c->label_keys, &c->label_values, &c->labels_n);
    if (error == 0)
        error = str_map(cfg, "ExposedPorts", &c->ports, NULL, &c->ports_n);
    return error;
}

static int parse_rootfs(sw_image_config *c, json_t *rootfs)
{
    if (!rootfs)
        return 0;
    if (!json_is_object(rootfs))
        return sw_error_set(SW_EINVALID, "image config: rootfs is not an object");
    return str_array(rootfs, "diff_ids", &c->diff_ids, &c->diff_ids_n);
}

int sw_image_config_parse(const char *body, size_t len, sw_image_config **out)
{
    static const char *const top[] = {"architecture", "os", "variant", "created", "author", NULL};
    sw_image_config *c = NULL;
    json_t *root = NULL;
    if (!body || len > SW_CONFIG_MAX_BYTES)
        return sw_error_set(SW_EINVALID, "image config missing or larger than %d bytes",
                            SW_CONFIG_MAX_BYTES);
    int error = sw_json_parse(body, len, MANIFEST_JSON_DEPTH, 0, &root);
    if (error < 0)
        return sw_error_set(SW_EINVALID, "image config: %s", sw_error_msg());
    c = sw_calloc(1, sizeof(*c));
    c->root = root;
    if (!json_is_object(root)) {
        error = sw_error_set(SW_EINVALID, "image config is not a JSON object");
        goto done;
    }
    error = check_strings(root, top, "");
    if (error == 0)
        error = parse_config_section(c, json_object_get(root, "config"));
    if (error == 0)
        error = parse_rootfs(c, json_object_get(root, "rootfs"));
done:
    if (error < 0) {
        sw_image_config_free(c);
        return error;
    }
    *out = c;
    return 0;
}

void sw_image_config_free(sw_image_config *c)
{
    if (!c)
        return;
    sw_free(c->env);
    sw_free(c->entrypoint);
    sw_free(c->cmd);
    sw_free(c->ports);
    sw_free(c->diff_ids);
    sw_free(c->label_keys);
    sw_free(c->label_values);
    json_decref(c->root);
    sw_free(c);
}

const char *sw_image_config_str(const sw_image_config *c, const char *field)
{
    return sw_json_str_at(c->root, field);
}

static sw_strv strv(const char **v, size_t n)
{
    return (sw_strv){(const char *const *)v, n};
}

sw_strv sw_image_config_env(const sw_image_config *c)
{
    return strv(c->env, c->env_n);
}

sw_strv sw_image_config_entrypoint(const sw_image_config *c)
{
    return strv(c->entrypoint, c->entrypoint_n);
}

sw_strv sw_image_config_cmd(const sw_image_config *c)
{
    return strv(c->cmd, c->cmd_n);
}

sw_strv sw_image_config_exposed_ports(const sw_image_config *c)
{
    return strv(c->ports, c->ports_n);
}

sw_strv sw_image_config_diff_ids(const sw_image_config *c)
{
    return strv(c->diff_ids, c->diff_ids_n);
}

sw_strv sw_image_config_label_keys(const sw_image_config *c)
{
    return strv(c->label_keys, c->labels_n);
}

sw_strv sw_image_config_label_values(const sw_image_config *c)
{
    return strv(c->label_values, c->labels_n);
}

const json_t *sw_image_config_json(const sw_image_config *c)
{
    return c->root;
}
