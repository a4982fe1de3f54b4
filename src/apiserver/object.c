/* object: store keys, decoding stored values into API objects, and the ObjectMeta rules every
 * kind shares (uid, timestamps, generation, namespace/name checks). */
#include "apiserver/object.h"

#include "meta/names.h"
#include "apiserver/objtext.h"
#include "kinds/crd.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

void sw_api_key(const sw_kind *k, const char *ns, const char *name, char *out, size_t n)
{
    const char *g = k->group[0] ? k->group : "core";
    if (k->namespaced && ns && *ns)
        snprintf(out, n, "/%s/%s/%s/%s", g, k->plural, ns, name ? name : "");
    else
        snprintf(out, n, "/%s/%s/%s", g, k->plural, name ? name : "");
}

const sw_kind *sw_api_kind_of_key(const char *key)
{
    char group[256], plural[128];
    const char *p = key + 1, *slash = strchr(p, '/');
    if (key[0] != '/' || !slash || (size_t)(slash - p) >= sizeof(group))
        return NULL;
    memcpy(group, p, (size_t)(slash - p));
    group[slash - p] = '\0';
    p = slash + 1;
    slash = strchr(p, '/');
    if (!slash || (size_t)(slash - p) >= sizeof(plural))
        return NULL;
    memcpy(plural, p, (size_t)(slash - p));
    plural[slash - p] = '\0';
    return sw_kinds_find(strcmp(group, "core") ? group : "", NULL, plural);
}

void sw_object_set_rv(json_t *obj, int64_t rev)
{
    char rv[24];
    snprintf(rv, sizeof(rv), "%lld", (long long)rev);
    json_object_set_new(sw_json_obj_path(obj, "metadata"), "resourceVersion", json_string(rv));
}

int sw_api_decode(sw_api *api, const sw_kind *k, const char *value, size_t len, int64_t rev,
                  json_t **out)
{
    json_error_t jerr;
    json_t *obj = json_loadb(value, len, 0, &jerr);
    if (!obj)
        return sw_error_set(SW_ERROR, "stored object does not decode: %s", jerr.text);
    sw_object_set_rv(obj, rev);
    if (k)
        sw_object_decorate(api, k, obj);
    *out = obj;
    return 0;
}

void sw_object_decorate(sw_api *api, const sw_kind *k, json_t *obj)
{
    char value[1024];
    /* a custom resource reads through its current schema: pruned and defaulted (a default
     * added later shows on old objects; nothing is written back) */
    if (k->dynamic && sw_cr_read_normalizes(k))
        sw_cr_normalize(k, obj, NULL);
    if (k->computed_status &&
        k->computed_status(&api->kctx, sw_json_str_at(obj, "metadata.namespace"),
                           sw_json_str_at(obj, "metadata.name"), value, sizeof(value))) {
        /* First key of status, as the text renderer puts it. */
        json_t *status = json_object_get(obj, "status"), *next = json_object();
        const char *key;
        json_t *v;
        json_object_set_new(next, k->computed_status_key, json_string(value));
        json_object_foreach(status, key, v)
        {
            if (strcmp(key, k->computed_status_key))
                json_object_set(next, key, v);
        }
        json_object_set_new(obj, "status", next);
    }
}

/* /<group>/<plural>/[<ns>/]<name> → ns (may be "") and name. */
static void key_parts(const sw_kind *k, const char *key, char *ns, size_t nn, const char **name)
{
    const char *last = strrchr(key, '/');
    *name = last ? last + 1 : key;
    ns[0] = '\0';
    if (k->namespaced && last) {
        const char *p = last;
        while (p > key && p[-1] != '/')
            p--;
        size_t len = (size_t)(last - p);
        if (len < nn) {
            memcpy(ns, p, len);
            ns[len] = '\0';
        }
    }
}

int sw_api_render(sw_api *api, const sw_kind *k, const char *key, const char *value, size_t len,
                  int64_t rev, sw_buf *out)
{
    if (k->dynamic && sw_cr_read_normalizes(k)) {
        /* read through the current schema (sw_object_decorate), so not spliced */
        json_t *obj = NULL;
        int error = sw_api_decode(api, k, value, len, rev, &obj);
        if (error == 0)
            error = sw_json_dump_buf(obj, out);
        json_decref(obj);
        return error;
    }
    return sw_api_render_written(api, k, key, value, len, rev, out);
}

int sw_api_render_written(sw_api *api, const sw_kind *k, const char *key, const char *value,
                          size_t len, int64_t rev, sw_buf *out)
{
    char ns[256], computed[1024];
    const char *name;
    key_parts(k, key, ns, sizeof(ns), &name);
    bool has =
        k->computed_status && k->computed_status(&api->kctx, ns, name, computed, sizeof(computed));
    return sw_objtext_render(value, len, rev, has ? k->computed_status_key : NULL, computed, out);
}

char *sw_object_encode(const json_t *obj, size_t *len)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_t *rv = json_incref(json_object_get(meta, "resourceVersion"));
    json_object_del(meta, "resourceVersion");
    char *s = sw_json_dumps(obj, len);
    if (rv)
        json_object_set_new(meta, "resourceVersion", rv);
    return s;
}

int64_t sw_object_rv(const json_t *obj)
{
    const char *rv = sw_json_str_at(obj, "metadata.resourceVersion");
    int64_t v;
    if (!rv || !*rv || sw_str_to_i64(rv, &v) < 0)
        return 0;
    return v;
}

int sw_object_check_name(const sw_kind *k, const char *name)
{
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "metadata.name: Required value: name or generateName is "
                                         "required");
    int error = k->name_rule == SW_NAME_LABEL          ? sw_names_check_label(name)
                : k->name_rule == SW_NAME_PATH_SEGMENT ? sw_names_check_path_segment(name)
                                                       : sw_names_check_subdomain(name);
    if (error < 0) {
        char msg[1024];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        return sw_error_set(SW_EINVALID, "metadata.name: Invalid value: \"%.253s\": %s", name, msg);
    }
    return 0;
}

void sw_object_init_meta(const sw_kind *k, json_t *obj)
{
    json_t *meta = sw_json_obj_path(obj, "metadata");
    char uid[37], now[32];
    sw_uuid_v4(uid);
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(now));
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "deletionTimestamp");
    json_object_del(meta, "deletionGracePeriodSeconds");
    json_object_del(meta, "selfLink");
    if (k->spec_generation)
        json_object_set_new(meta, "generation", json_integer(1));
    else
        json_object_del(meta, "generation");
    if (!k->namespaced)
        json_object_del(meta, "namespace");
}

/* Carries the server-owned metadata of old into obj (update path). */
void sw_object_keep_meta(const sw_kind *k, json_t *obj, const json_t *old)
{
    static const char *const keep[] = {"uid", "creationTimestamp", "generation",
                                       "deletionTimestamp", "deletionGracePeriodSeconds"};
    json_t *meta = sw_json_obj_path(obj, "metadata");
    json_t *ometa = json_object_get(old, "metadata");
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(ometa, keep[i]);
        if (v)
            json_object_set(meta, keep[i], v);
        else
            json_object_del(meta, keep[i]);
    }
    json_object_del(meta, "selfLink");
    if (!k->namespaced)
        json_object_del(meta, "namespace");
}

/* Generation bumps when anything outside metadata and status changed. */
void sw_object_bump_generation(const sw_kind *k, json_t *obj, const json_t *old)
{
    if (!k->spec_generation)
        return;
    const char *key;
    json_t *v;
    bool changed = false;
    json_object_foreach(obj, key, v)
    {
        if (!strcmp(key, "metadata") || !strcmp(key, "status") || !strcmp(key, "apiVersion") ||
            !strcmp(key, "kind"))
            continue;
        if (!json_equal(v, json_object_get(old, key)))
            changed = true;
    }
    json_object_foreach((json_t *)old, key, v)
    {
        if (strcmp(key, "metadata") && strcmp(key, "status") && !json_object_get(obj, key))
            changed = true;
    }
    int64_t gen = 1;
    sw_json_int_at(old, "metadata.generation", &gen);
    json_object_set_new(sw_json_obj_path(obj, "metadata"), "generation",
                        json_integer(changed ? gen + 1 : gen));
}
