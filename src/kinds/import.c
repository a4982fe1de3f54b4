/* import: one image reference → Image objects, HEAD first when there is a digest to compare
 * with, else one GET (see import.h). Manifest lists follow
 * importMode: Legacy keeps one platform (the tag's prefer-arch/prefer-os annotations, else
 * linux/amd64, else the first entry) and records the list's digest on that Image so change
 * detection compares index digests; PreserveOriginal keeps the index and every child. */
#include "kinds/import.h"

#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/metric.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHILDREN 32
#define MAX_LIST_TAGS 10000

static void fail(sw_import_result *out, int code, const char *from, const char *msg)
{
    out->code = code;
    snprintf(out->message, sizeof(out->message), "importing %s: %s", from, msg);
}

static json_t *strv_array(sw_strv v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v.n; i++)
        json_array_append_new(a, json_string(v.v[i]));
    return a;
}

static void set_str(json_t *obj, const char *key, const char *value)
{
    if (value && *value)
        json_object_set_new(obj, key, json_string(value));
}

/* An Image is an API object like any other: one built from a registry's config must stay
 * small enough to store, list and send (a config blob may be 8 MiB of Env). */
static int check_image_size(const json_t *image, const char *digest)
{
    size_t len = 0;
    char *text = sw_json_dumps(image, &len);
    sw_free(text);
    if (len <= SW_IMPORT_MAX_IMAGE_BYTES)
        return 0;
    return sw_error_set(SW_ELIMIT,
                        "%s: the image's metadata (its config: env, labels, command...) is %zu "
                        "bytes as an Image; at most %d are kept",
                        digest, len, SW_IMPORT_MAX_IMAGE_BYTES);
}

/* dockerImageMetadata in OpenShift's DockerImage 1.0 shape. */
static json_t *image_metadata(const sw_manifest *m, const sw_image_config *cfg, int64_t size)
{
    json_t *md = json_pack("{s:s, s:s, s:s, s:I}", "kind", "DockerImage", "apiVersion",
                           "image.openshift.io/1.0", "Id", sw_manifest_config(m)->digest, "Size",
                           (json_int_t)size);
    json_t *conf = json_object();
    const char *created = sw_image_config_str(cfg, "created");
    int64_t secs;
    if (created && sw_time_parse(created, &secs) == 0) /* clients decode it as a metav1.Time */
        set_str(md, "Created", created);
    set_str(md, "Architecture", sw_image_config_str(cfg, "architecture"));
    set_str(md, "Os", sw_image_config_str(cfg, "os"));
    set_str(md, "Variant", sw_image_config_str(cfg, "variant"));
    set_str(md, "Author", sw_image_config_str(cfg, "author"));
    set_str(conf, "WorkingDir", sw_image_config_str(cfg, "config.WorkingDir"));
    set_str(conf, "User", sw_image_config_str(cfg, "config.User"));
    if (sw_image_config_env(cfg).n)
        json_object_set_new(conf, "Env", strv_array(sw_image_config_env(cfg)));
    if (sw_image_config_entrypoint(cfg).n)
        json_object_set_new(conf, "Entrypoint", strv_array(sw_image_config_entrypoint(cfg)));
    if (sw_image_config_cmd(cfg).n)
        json_object_set_new(conf, "Cmd", strv_array(sw_image_config_cmd(cfg)));
    sw_strv ports = sw_image_config_exposed_ports(cfg);
    if (ports.n) {
        json_t *p = json_object();
        for (size_t i = 0; i < ports.n; i++)
            json_object_set_new(p, ports.v[i], json_object());
        json_object_set_new(conf, "ExposedPorts", p);
    }
    sw_strv lk = sw_image_config_label_keys(cfg), lv = sw_image_config_label_values(cfg);
    if (lk.n) {
        json_t *labels = json_object();
        for (size_t i = 0; i < lk.n && i < lv.n; i++)
            json_object_set_new(labels, lk.v[i], json_string(lv.v[i]));
        json_object_set_new(conf, "Labels", labels);
    }
    json_object_set_new(md, "Config", conf);
    return md;
}

static json_t *new_image(const char *digest, const char *pull_spec, const char *media_type)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:s, s:s}", "kind", "Image", "apiVersion",
                     "image.openshift.io/v1", "metadata", "name", digest, "annotations",
                     "image.openshift.io/dockerLayersOrder", "ascending", "dockerImageReference",
                     pull_spec, "dockerImageMetadataVersion", "1.0", "dockerImageManifestMediaType",
                     media_type);
}

static void pull_spec(const sw_ref *ref, const char *digest, char *out, size_t n)
{
    snprintf(out, n, "%s/%s@%s", ref->registry, ref->repository, digest);
}

/* An Image for a single-platform manifest (body already verified against digest). */
static int image_from_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                               const sw_manifest *m, const char *digest, json_t **out)
{
    const sw_descriptor *cd = sw_manifest_config(m);
    char *blob = NULL, spec[1024];
    size_t blen = 0;
    sw_image_config *cfg = NULL;
    int error = sw_registry_get_blob(r, c, ref, cd->digest, SW_CONFIG_MAX_BYTES, &blob, &blen);
    if (error == 0)
        error = sw_image_config_parse(blob, blen, &cfg);
    if (error < 0)
        goto done;
    json_t *layers = json_array();
    int64_t size = cd->size;
    for (size_t i = 0; i < sw_manifest_layer_count(m); i++) {
        const sw_descriptor *l = sw_manifest_layer(m, i);
        json_array_append_new(layers, json_pack("{s:s, s:I, s:s}", "name", l->digest, "size",
                                                (json_int_t)l->size, "mediaType", l->media_type));
        if (__builtin_add_overflow(size, l->size, &size)) {
            json_decref(layers);
            error = sw_error_set(SW_EINVALID, "%s: the layer sizes add up past 2^63 bytes", digest);
            goto done;
        }
    }
    pull_spec(ref, digest, spec, sizeof(spec));
    *out = new_image(digest, spec, sw_manifest_media_type(m));
    json_object_set_new(*out, "dockerImageLayers", layers);
    json_object_set_new(*out, "dockerImageMetadata", image_metadata(m, cfg, size));
    error = check_image_size(*out, digest);
    if (error < 0) {
        json_decref(*out);
        *out = NULL;
    }
done:
    sw_image_config_free(cfg);
    sw_free(blob);
    return error;
}

/* Fetches (by digest) and imports one manifest; an index is refused here. */
static int fetch_image(sw_registry *r, const sw_registry_call *c, const sw_ref *base,
                       const char *digest, json_t **out)
{
    sw_ref ref = *base;
    char *body = NULL, mt[128] = "";
    size_t len = 0;
    sw_manifest *m = NULL;
    ref.tag[0] = '\0';
    sw_strlcpy(ref.digest, digest, sizeof(ref.digest));
    int error = sw_registry_get_manifest(r, c, &ref, &body, &len, mt, NULL);
    if (error == 0)
        error = sw_manifest_parse(mt, body, len, &m);
    if (error == 0 && sw_manifest_get_kind(m) != SW_MANIFEST_IMAGE)
        error = sw_error_set(SW_EINVALID, "%s: a manifest list inside a manifest list", digest);
    if (error == 0)
        error = image_from_manifest(r, c, &ref, m, digest, out);
    sw_manifest_free(m);
    sw_free(body);
    return error;
}

static const sw_descriptor *pick_platform(const sw_manifest *m, const sw_import_req *req)
{
    const char *arch = req->prefer_arch && *req->prefer_arch ? req->prefer_arch : "amd64";
    const char *os = req->prefer_os && *req->prefer_os ? req->prefer_os : "linux";
    const sw_descriptor *d = sw_manifest_find_platform(m, os, arch, "");
    if (!d)
        d = sw_manifest_find_platform(m, "linux", "amd64", "");
    if (!d && sw_manifest_entry_count(m))
        d = sw_manifest_entry(m, 0);
    return d;
}

/* SW_ETIMEOUT once the request's deadline passed (checked before each registry request that
 * an import may repeat: a registry answering just under each timeout must not hold it for
 * hours). */
static int check_deadline(const sw_import_req *req)
{
    if (!req->deadline_ms || sw_time_mono_ms() < req->deadline_ms)
        return 0;
    return sw_error_set(SW_ETIMEOUT, "the import ran out of time (the registry is too slow)");
}

/* A manifest list: Legacy picks one platform, PreserveOriginal keeps everything. */
static int import_index(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                        const sw_manifest *m, const sw_import_req *req, sw_import_result *out)
{
    int error = 0;
    if (!req->preserve_original) {
        const sw_descriptor *d = pick_platform(m, req);
        if (!d)
            return sw_error_set(SW_ENOTFOUND, "the manifest list has no entries");
        error = fetch_image(r, c, ref, d->digest, &out->image);
        if (error == 0) {
            json_object_set_new(sw_json_obj_path(out->image, "metadata.annotations"),
                                SW_IMPORT_INDEX_ANNOTATION, json_string(out->digest));
            pull_spec(ref, d->digest, out->pull_spec, sizeof(out->pull_spec));
        }
        return error;
    }
    if (sw_manifest_entry_count(m) > MAX_CHILDREN)
        return sw_error_set(SW_ELIMIT,
                            "the manifest list has %zu entries; PreserveOriginal keeps at most %d "
                            "(import it with importMode Legacy)",
                            sw_manifest_entry_count(m), MAX_CHILDREN);
    json_t *entries = json_array();
    out->manifests = json_array();
    for (size_t i = 0; i < sw_manifest_entry_count(m) && error == 0; i++) {
        const sw_descriptor *d = sw_manifest_entry(m, i);
        json_t *child = NULL;
        if ((error = check_deadline(req)) < 0)
            break;
        json_array_append_new(
            entries, json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "digest", d->digest, "mediaType",
                               d->media_type, "manifestSize", (json_int_t)d->size, "architecture",
                               d->architecture, "os", d->os, "variant", d->variant));
        error = fetch_image(r, c, ref, d->digest, &child);
        if (error == 0)
            json_array_append_new(out->manifests, child);
    }
    pull_spec(ref, out->digest, out->pull_spec, sizeof(out->pull_spec));
    out->image = new_image(out->digest, out->pull_spec, sw_manifest_media_type(m));
    json_object_set_new(out->image, "dockerImageManifests", entries);
    return error;
}

static const sw_metric_desc m_imports = {
    "slipway_image_imports_total",
    "Image imports (one tag or digest each), by registry and result (imported, unchanged: the "
    "registry reported the digest already known, failed).",
    SW_METRIC_COUNTER,
    {"registry", "result"},
    NULL,
    0};
static const sw_metric_desc m_import_seconds = {
    "slipway_image_import_duration_seconds",
    "Image import latency in seconds, registry round trips included, by registry.",
    SW_METRIC_HISTOGRAM,
    {"registry"},
    sw_metric_slow_buckets,
    12};

static void import_image(sw_registry *r, const sw_creds *creds, const sw_import_req *req,
                         sw_import_result *out);

void sw_import_image(sw_registry *r, const sw_creds *creds, const sw_import_req *req,
                     sw_import_result *out)
{
    double t0 = sw_time_mono_s();
    import_image(r, creds, req, out);
    sw_ref ref;
    const char *labels[] = {sw_ref_parse(req->from, &ref) == 0 ? ref.registry : "invalid",
                            out->code        ? "failed"
                            : out->unchanged ? "unchanged"
                                             : "imported"};
    sw_metric_add(&m_imports, labels, 1);
    sw_metric_observe(&m_import_seconds, labels, sw_time_mono_s() - t0);
}

static void import_image(sw_registry *r, const sw_creds *creds, const sw_import_req *req,
                         sw_import_result *out)
{
    sw_ref ref;
    sw_registry_call call = {.creds = creds, .insecure = req->insecure};
    char *body = NULL, mt[128] = "";
    size_t len = 0;
    sw_manifest *m = NULL;
    memset(out, 0, sizeof(*out));
    int error = check_deadline(req);
    if (error == 0)
        error = sw_ref_parse(req->from, &ref);
    if (error == 0 && ref.digest[0] && req->is_known &&
        req->is_known(req->known_payload, ref.digest)) {
        sw_strlcpy(out->digest, ref.digest, sizeof(out->digest));
        out->unchanged = true; /* content addressed: a digest never changes */
        return;
    }
    if (error == 0 && !req->is_known) {
        /* Nothing to compare with: one GET (its digest verified) instead of HEAD + GET. */
        error = sw_registry_get_manifest(r, &call, &ref, &body, &len, mt, out->digest);
    } else if (error == 0) {
        error = sw_registry_head_manifest(r, &call, &ref, out->digest, mt, NULL);
        if (error == 0 && req->is_known(req->known_payload, out->digest)) {
            out->unchanged = true;
            return;
        }
        /* Changed: fetch by the digest HEAD reported, so what we verify is what we saw. */
        sw_ref byd = ref;
        byd.tag[0] = '\0';
        sw_strlcpy(byd.digest, out->digest, sizeof(byd.digest));
        if (error == 0)
            error = sw_registry_get_manifest(r, &call, &byd, &body, &len, mt, NULL);
    }
    if (error == 0)
        error = sw_manifest_parse(mt, body, len, &m);
    if (error == 0 && sw_manifest_get_kind(m) == SW_MANIFEST_INDEX) {
        error = import_index(r, &call, &ref, m, req, out);
    } else if (error == 0) {
        error = image_from_manifest(r, &call, &ref, m, out->digest, &out->image);
        pull_spec(&ref, out->digest, out->pull_spec, sizeof(out->pull_spec));
    }
    if (error < 0) {
        fail(out, error, req->from, sw_error_msg());
        json_decref(out->image);
        json_decref(out->manifests);
        out->image = out->manifests = NULL;
    }
    sw_manifest_free(m);
    sw_free(body);
}

void sw_import_result_dispose(sw_import_result *res)
{
    json_decref(res->image);
    json_decref(res->manifests);
    res->image = res->manifests = NULL;
}

/* PrioritizeTags: latest; then X.Y descending; then X.Y.Z... descending; then the rest. */
static int tag_class(const char *t, uint64_t v[3])
{
    const char *p = t;
    int parts = 0;
    if (!strcmp(t, "latest"))
        return 0;
    if (*p == 'v')
        p++;
    v[0] = v[1] = v[2] = 0;
    while (parts < 3 && sw_parse_u64(&p, UINT32_MAX, &v[parts]) == 0) {
        parts++;
        if (*p != '.')
            break;
        p++;
    }
    if (*p || parts < 2)
        return 3;
    return parts == 2 ? 1 : 2;
}

int sw_import_tag_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    uint64_t vx[3], vy[3];
    int cx = tag_class(x, vx), cy = tag_class(y, vy);
    if (cx != cy)
        return cx - cy;
    if (cx == 1 || cx == 2)
        for (int i = 0; i < 3; i++)
            if (vx[i] != vy[i])
                return vx[i] > vy[i] ? -1 : 1;
    return strcmp(x, y);
}

int sw_import_list_tags(sw_registry *r, const sw_creds *creds, const char *repository,
                        bool insecure, int64_t deadline_ms, size_t max, char ***tags, size_t *count,
                        char ***more, size_t *more_count)
{
    sw_ref ref;
    sw_registry_call call = {.creds = creds, .insecure = insecure, .deadline_ms = deadline_ms};
    char **all = NULL;
    size_t n = 0;
    int error = sw_ref_parse(repository, &ref);
    if (error == 0 && ref.digest[0])
        error = sw_error_set(SW_EINVALID, "%s: a repository import takes no digest", repository);
    if (error == 0)
        error = sw_registry_list_tags(r, &call, &ref, MAX_LIST_TAGS, &all, &n);
    if (error < 0)
        return error;
    qsort(all, n, sizeof(*all), sw_import_tag_cmp);
    size_t keep = n < max ? n : max;
    *tags = sw_calloc(keep + 1, sizeof(char *));
    *more = sw_calloc(n - keep + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        if (i < keep)
            (*tags)[i] = all[i];
        else
            (*more)[i - keep] = all[i];
    }
    *count = keep;
    *more_count = n - keep;
    sw_free(all);
    return 0;
}
