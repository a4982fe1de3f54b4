/* imagepolicy: local-name resolution of workload images (see imagepolicy.h). */
#include "kinds/imagepolicy.h"

#include "kinds/imagestream.h"
#include "kinds/podspec.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

/* "name" or "name:tag" with no registry, path or digest: what a stream name could be. */
static bool short_name(const char *image, char *stream, size_t sn, char *tag, size_t tn)
{
    if (!image || !*image || strchr(image, '/') || strchr(image, '@'))
        return false;
    const char *colon = strchr(image, ':');
    size_t len = colon ? (size_t)(colon - image) : strlen(image);
    if (!len || len >= sn || (colon && (!colon[1] || strlen(colon + 1) >= tn)))
        return false;
    memcpy(stream, image, len);
    stream[len] = '\0';
    snprintf(tag, tn, "%s", colon ? colon + 1 : "latest");
    return true;
}

static int resolve_list(sw_objects *o, const char *ns, json_t *list)
{
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        char stream[256], tag[256], spec[1024];
        json_t *s = NULL;
        if (!short_name(sw_json_str_at(c, "image"), stream, sizeof(stream), tag, sizeof(tag)))
            continue;
        int error = o->get(o, &sw_kind_imagestream, ns, stream, &s);
        if (error == SW_ENOTFOUND)
            continue;
        if (error < 0)
            return error;
        const json_t *head =
            json_array_get(json_object_get(sw_imagestream_status_tag(s, tag), "items"), 0);
        if (sw_json_bool_at(s, "spec.lookupPolicy.local") && head) {
            sw_imagestream_pull_spec(s, tag, head, spec, sizeof(spec));
            if (spec[0])
                json_object_set_new(c, "image", json_string(spec));
        }
        json_decref(s);
    }
    return 0;
}

int sw_image_policy_admit(const sw_kind_ctx *ctx, sw_objects *o, const char *kind, json_t *obj)
{
    const char *path = sw_podspec_path(kind);
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    if (!path || !ns)
        return 0;
    if (!sw_str_eq(kind, "Pod") &&
        !sw_str_eq(json_string_value(json_object_get(sw_json_at(obj, "metadata.annotations"),
                                                     SW_RESOLVE_NAMES_ANNOTATION)),
                   "*"))
        return 0;
    json_t *spec = sw_json_at(obj, path);
    int error = resolve_list(o, ns, json_object_get(spec, "containers"));
    if (error == 0)
        error = resolve_list(o, ns, json_object_get(spec, "initContainers"));
    return error;
}
