/* imagestreamimage: image.openshift.io/v1 ImageStreamImage, a virtual get of an image by
 * "<stream>@<digest or unique digest prefix>" among every event in the stream's history
 * (ResolveImageID: no match → NotFound, several distinct images → Conflict). */
#include "kinds/imagestream.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <string.h>

/* The unique image ID in the stream's history starting with prefix. */
static int resolve(const json_t *stream, const char *prefix, const char **id_out,
                   const json_t **event_out, const char **tag_out)
{
    size_t i, j;
    json_t *st, *ev;
    *id_out = NULL;
    json_array_foreach(sw_json_at(stream, "status.tags"), i, st)
    {
        json_array_foreach(json_object_get(st, "items"), j, ev)
        {
            const char *id = sw_json_str_at(ev, "image");
            if (!id || !*id || !sw_str_prefix(id, prefix))
                continue;
            if (*id_out && strcmp(*id_out, id))
                return sw_error_set(SW_ECONFLICT, "multiple images match the prefix \"%s\": %s, %s",
                                    prefix, *id_out, id);
            if (!*id_out) {
                *id_out = id;
                *event_out = ev;
                *tag_out = sw_json_str_at(st, "tag");
            }
        }
    }
    return *id_out ? 0 : SW_ENOTFOUND;
}

static int isimage_get(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
                       json_t **out)
{
    char sname[256];
    const char *at = strchr(name, '@');
    const char *id = NULL, *tag = NULL;
    const json_t *ev = NULL;
    json_t *stream = NULL, *img = NULL;
    if (!at || at == name || (size_t)(at - name) >= sizeof(sname) || strlen(at + 1) < 3)
        return sw_error_set(SW_EBADREQUEST,
                            "\"%.300s\" is not a valid name: must be <stream>@<digest>", name);
    memcpy(sname, name, (size_t)(at - name));
    sname[at - name] = '\0';
    int error = o->get(o, &sw_kind_imagestream, ns, sname, &stream);
    if (error == 0)
        error = resolve(stream, at + 1, &id, &ev, &tag);
    if (error == SW_ENOTFOUND)
        error = sw_error_set(SW_ENOTFOUND, "imagestreamimages.image.openshift.io \"%s\" not found",
                             name);
    if (error == 0 && o->get(o, &sw_kind_image, NULL, id, &img) < 0)
        img = json_pack("{s:s, s:s, s:{s:s}}", "kind", "Image", "apiVersion",
                        "image.openshift.io/v1", "metadata", "name", id);
    if (error == 0) {
        char ref[1024], full[600];
        sw_imagestream_pull_spec(stream, tag, ev, ref, sizeof(ref));
        json_object_set_new(img, "dockerImageReference", json_string(ref));
        json_object_del(img, "dockerImageManifest");
        snprintf(full, sizeof(full), "%s@%s", sname, id);
        *out = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:o}", "kind", "ImageStreamImage",
                         "apiVersion", "image.openshift.io/v1", "metadata", "name", full,
                         "namespace", ns, "uid", sw_json_str_at(stream, "metadata.uid") ?: "",
                         "creationTimestamp", sw_json_str_at(ev, "created") ?: "", "image", img);
    }
    json_decref(stream);
    return error;
}

static const sw_virtual_ops isimage_ops = {.get = isimage_get};
static const char *const isimage_verbs[] = {"get", NULL};

const sw_kind sw_kind_imagestreamimage = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "ImageStreamImage",
    .plural = "imagestreamimages",
    .singular = "imagestreamimage",
    .short_names = {"isimage"},
    .namespaced = true,
    .virt = &isimage_ops,
    .verbs = isimage_verbs,
};
