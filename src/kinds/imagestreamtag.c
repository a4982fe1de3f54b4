/* imagestreamtag: image.openshift.io/v1 ImageStreamTag, a virtual view of one tag of a stream
 * (openshift-api.md §2): name "<stream>:<tag>"; get/list need an imported image (404 otherwise);
 * create/update write the spec tag (creating the stream when missing); delete removes the spec
 * and status entries of the tag. */
#include "kinds/imagestream.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <string.h>

extern const sw_kind sw_kind_imagestreamtag;

static int not_found(const char *name)
{
    return sw_error_set(SW_ENOTFOUND, "imagestreamtags.image.openshift.io \"%s\" not found", name);
}

/* The Image of a tag event, with the event's pull spec; a minimal one when not stored. */
static json_t *event_image(sw_objects *o, const json_t *stream, const char *tag, const json_t *ev)
{
    json_t *img = NULL;
    const char *id = sw_json_str_at(ev, "image");
    char ref[1024];
    sw_imagestream_pull_spec(stream, tag, ev, ref, sizeof(ref));
    if (!id || !*id || o->get(o, &sw_kind_image, NULL, id, &img) < 0)
        img = json_pack("{s:s, s:s, s:{s:s}}", "kind", "Image", "apiVersion",
                        "image.openshift.io/v1", "metadata", "name", id ? id : "");
    json_object_set_new(img, "dockerImageReference", json_string(ref));
    json_object_del(img, "dockerImageManifest");
    json_t *ann = sw_json_at(sw_imagestream_spec_tag(stream, tag), "annotations");
    if (json_is_object(ann))
        json_object_update(sw_json_obj_path(img, "metadata.annotations"), ann);
    return img;
}

/* Builds the ImageStreamTag for tag of stream; NULL when the tag has no image yet (no event,
 * or a reference tag's event, which has a pull spec but no image: newISTag's NotFound). */
json_t *sw_istag_build(const sw_kind_ctx *ctx, sw_objects *o, const json_t *stream, const char *tag)
{
    json_t *st = sw_imagestream_status_tag(stream, tag);
    json_t *head = json_array_get(json_object_get(st, "items"), 0);
    const char *image = sw_json_str_at(head, "image");
    if (!head || !image || !*image)
        return NULL;
    char name[600];
    snprintf(name, sizeof(name), "%s:%s", sw_json_str_at(stream, "metadata.name"), tag);
    json_t *spec = sw_imagestream_spec_tag(stream, tag);
    json_t *lookup = sw_json_at(stream, "spec.lookupPolicy");
    int64_t gen = 0;
    sw_json_int_at(head, "generation", &gen);
    json_t *meta = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", name, "namespace",
                             sw_json_str_at(stream, "metadata.namespace") ?: "", "uid",
                             sw_json_str_at(stream, "metadata.uid") ?: "", "resourceVersion",
                             sw_json_str_at(stream, "metadata.resourceVersion") ?: "",
                             "creationTimestamp", sw_json_str_at(head, "created") ?: "");
    json_t *out =
        json_pack("{s:s, s:s, s:o, s:O, s:I, s:o, s:o}", "kind", "ImageStreamTag", "apiVersion",
                  "image.openshift.io/v1", "metadata", meta, "tag", spec ? spec : json_null(),
                  "generation", (json_int_t)gen, "lookupPolicy",
                  lookup ? json_incref(lookup) : json_pack("{s:b}", "local", 0), "image",
                  event_image(o, stream, tag, head));
    json_t *conds = json_object_get(st, "conditions");
    if (conds)
        json_object_set(out, "conditions", conds);
    json_t *ann = sw_json_at(spec, "annotations");
    if (json_is_object(ann) && json_object_size(ann)) /* newISTag: the tag's annotations */
        json_object_set(meta, "annotations", ann);
    return out;
}

static int istag_get(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
                     json_t **out)
{
    char sname[256], tag[129];
    json_t *stream = NULL;
    int error = sw_imagestream_split_tag_name(name, sname, sizeof(sname), tag, sizeof(tag));
    if (error == 0)
        error = o->get(o, &sw_kind_imagestream, ns, sname, &stream);
    if (error == SW_ENOTFOUND)
        error = not_found(name);
    if (error == 0 && !(*out = sw_istag_build(ctx, o, stream, tag)))
        error = not_found(name);
    json_decref(stream);
    return error;
}

static int istag_list(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t **items)
{
    json_t *streams = NULL;
    int error = o->list(o, &sw_kind_imagestream, ns, &streams);
    size_t i, j;
    json_t *s, *st;
    *items = json_array();
    json_array_foreach(streams, i, s)
    {
        json_array_foreach(sw_json_at(s, "status.tags"), j, st)
        {
            json_t *t = sw_istag_build(ctx, o, s, sw_json_str_at(st, "tag"));
            if (t)
                json_array_append_new(*items, t);
        }
    }
    json_decref(streams);
    return error;
}

/* Writes body.tag as the spec tag `tag` of the stream; create fails when it exists. */
static int write_spec_tag(sw_objects *o, const char *ns, const char *name, json_t *body,
                          bool create, json_t **out)
{
    char sname[256], tag[129];
    json_t *stream = NULL, *saved = NULL;
    int error = sw_imagestream_split_tag_name(name, sname, sizeof(sname), tag, sizeof(tag));
    json_t *ref = json_object_get(body, "tag");
    const char *rv = sw_json_str_at(body, "metadata.resourceVersion");
    json_t *ann = sw_json_at(body, "metadata.annotations");
    if (error == 0 && ref && !json_is_null(ref) && !json_is_object(ref))
        error = sw_error_set(SW_EINVALID, "tag: Invalid value: must be a tag reference");
    for (int attempt = 0; error == 0 && attempt < 10; attempt++) {
        json_decref(stream);
        stream = NULL;
        error = o->get(o, &sw_kind_imagestream, ns, sname, &stream);
        bool exists = error == 0;
        if (error == SW_ENOTFOUND) {
            stream = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[]}}", "apiVersion",
                               "image.openshift.io/v1", "kind", "ImageStream", "metadata", "name",
                               sname, "namespace", ns, "spec", "tags");
            error = 0;
        }
        if (error < 0)
            break;
        json_t *existing = sw_imagestream_spec_tag(stream, tag);
        if (create && existing) {
            error = sw_error_set(SW_EEXISTS,
                                 "imagestreamtags.image.openshift.io \"%s\" already exists", name);
            break;
        }
        /* an update names the stream's resourceVersion it read (the ImageStreamTag's) */
        if (!create && rv && *rv &&
            (!exists || !sw_str_eq(rv, sw_json_str_at(stream, "metadata.resourceVersion")))) {
            error = exists ? sw_error_set(SW_ECONFLICT,
                                          "Operation cannot be fulfilled on "
                                          "imagestreamtags.image.openshift.io \"%s\": the object "
                                          "has been modified; please apply your changes to the "
                                          "latest version and try again",
                                          name)
                           : not_found(name);
            break;
        }
        /* no tag in the body: the existing one is kept (only its annotations change) */
        if (!json_is_object(ref) && !existing) {
            error = sw_error_set(SW_EINVALID, "tag: Required value: an ImageStreamTag needs a "
                                              "tag reference");
            break;
        }
        json_t *entry = json_deep_copy(json_is_object(ref) ? ref : existing);
        json_object_set_new(entry, "name", json_string(tag));
        if (json_is_object(ann)) /* tagRef.Annotations = istag.Annotations */
            json_object_set(entry, "annotations", ann);
        json_t *tags = sw_json_at(stream, "spec.tags");
        if (!json_is_array(tags)) {
            tags = json_array();
            sw_json_set_path(stream, "spec.tags", tags);
        }
        size_t i;
        json_t *t;
        json_array_foreach(tags, i, t) if (t == existing) json_array_remove(tags, i--);
        json_array_append_new(tags, entry);
        error = exists ? o->update(o, &sw_kind_imagestream, stream, &saved)
                       : o->create(o, &sw_kind_imagestream, stream, &saved);
        if ((error != SW_ECONFLICT && error != SW_EEXISTS) || (rv && *rv))
            break; /* conflicts and a stream created meanwhile are retried, unless the client
                    * named the version it wrote over */
        error = 0;
    }
    if (error == 0) {
        /* Without an image yet there is no ImageStreamTag to show: return the reference. */
        *out = sw_istag_build(NULL, o, saved, tag);
        if (!*out)
            *out =
                json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "kind", "ImageStreamTag", "apiVersion",
                          "image.openshift.io/v1", "metadata", "name", name, "namespace", ns, "tag",
                          sw_imagestream_spec_tag(saved, tag) ?: json_null());
    }
    json_decref(stream);
    json_decref(saved);
    return error;
}

static int istag_create(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *body,
                        json_t **out)
{
    const char *name = sw_json_str_at(body, "metadata.name");
    if (!name)
        return sw_error_set(SW_EINVALID, "metadata.name: Required value");
    return write_spec_tag(o, ns, name, body, true, out);
}

static int istag_update(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
                        json_t *body, json_t **out)
{
    return write_spec_tag(o, ns, name, body, false, out);
}

static void remove_named(json_t *arr, const char *field, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (sw_str_eq(sw_json_str_at(e, field), value))
            json_array_remove(arr, i--);
    }
}

static int istag_delete(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
                        json_t **out)
{
    char sname[256], tag[129];
    json_t *stream = NULL, *saved = NULL;
    int error = sw_imagestream_split_tag_name(name, sname, sizeof(sname), tag, sizeof(tag));
    for (int attempt = 0; error == 0 && attempt < 10; attempt++) {
        json_decref(stream);
        json_decref(saved);
        stream = saved = NULL;
        error = o->get(o, &sw_kind_imagestream, ns, sname, &stream);
        if (error == SW_ENOTFOUND || (error == 0 && !sw_imagestream_spec_tag(stream, tag) &&
                                      !sw_imagestream_status_tag(stream, tag)))
            error = not_found(name);
        if (error < 0)
            break;
        remove_named(sw_json_at(stream, "spec.tags"), "name", tag);
        error = o->update(o, &sw_kind_imagestream, stream, &saved);
        if (error == 0) {
            remove_named(sw_json_at(saved, "status.tags"), "tag", tag);
            error = o->update_status(o, &sw_kind_imagestream, saved, NULL);
        }
        if (error != SW_ECONFLICT)
            break;
        error = 0;
    }
    json_decref(stream);
    json_decref(saved);
    if (error == 0)
        *out = NULL;
    return error;
}

static const sw_virtual_ops istag_ops = {
    .get = istag_get,
    .list = istag_list,
    .create = istag_create,
    .update = istag_update,
    .del = istag_delete,
};

static const char *const istag_verbs[] = {"create", "delete", "get", "list", "update", NULL};

static void istag_image(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "image.dockerImageReference", out);
}

static const sw_column istag_columns[] = {
    {"Image Reference", "string", "The pull spec of the tag's image", 0, istag_image, NULL, NULL},
};

const sw_kind sw_kind_imagestreamtag = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "ImageStreamTag",
    .plural = "imagestreamtags",
    .singular = "imagestreamtag",
    .short_names = {"istag"},
    .namespaced = true,
    .schema_text = "{\"tag\":\"any\",\"generation\":\"integer\",\"lookupPolicy\":\"any\","
                   "\"conditions\":[\"any\"],\"image\":\"any\"}",
    .columns = istag_columns,
    .ncolumns = 1,
    .virt = &istag_ops,
    .verbs = istag_verbs,
};
