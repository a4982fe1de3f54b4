/* imagestreammapping: image.openshift.io/v1 ImageStreamMapping, the virtual create a registry
 * push (or a slipway build) uses to record an image: the Image is created (existing ones are
 * kept), the stream (created when missing) gains a tag event with the stream's generation,
 * tags tracking that tag follow, and the status is written with conflict retries. */
#include "kinds/imagestream.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <string.h>

/* Creates the Image unless it exists (*existed). */
static int ensure_image(sw_objects *o, const json_t *image, bool *existed)
{
    json_t *img = json_deep_copy(image);
    json_object_set_new(img, "kind", json_string("Image"));
    json_object_set_new(img, "apiVersion", json_string("image.openshift.io/v1"));
    json_object_del(json_object_get(img, "metadata"), "resourceVersion");
    int error = o->create(o, &sw_kind_image, img, NULL);
    json_decref(img);
    *existed = error == SW_EEXISTS;
    return *existed ? 0 : error;
}

static int ensure_stream(sw_objects *o, const char *ns, const char *name, json_t **out)
{
    int error = o->get(o, &sw_kind_imagestream, ns, name, out);
    if (error != SW_ENOTFOUND)
        return error;
    json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion", "image.openshift.io/v1",
                          "kind", "ImageStream", "metadata", "name", name, "namespace", ns, "spec");
    error = o->create(o, &sw_kind_imagestream, s, out);
    json_decref(s);
    return error == SW_EEXISTS ? o->get(o, &sw_kind_imagestream, ns, name, out) : error;
}

int sw_imagestream_record(sw_objects *o, const char *ns, const char *stream_name, const char *tag,
                          const json_t *event)
{
    int error = 0;
    for (int attempt = 0; attempt < 10; attempt++) {
        json_t *stream = NULL;
        error = ensure_stream(o, ns, stream_name, &stream);
        if (error == 0) {
            json_t *ev = json_deep_copy(event);
            int64_t gen = 1;
            sw_json_int_at(stream, "metadata.generation", &gen);
            if (!json_object_get(ev, "generation"))
                json_object_set_new(ev, "generation", json_integer(gen));
            bool changed = sw_imagestream_add_tag_event(stream, tag, ev);
            changed |= sw_imagestream_update_tracking_tags(stream, tag);
            json_decref(ev);
            if (changed)
                error = o->update_status(o, &sw_kind_imagestream, stream, NULL);
        }
        json_decref(stream);
        if (error != SW_ECONFLICT)
            break;
    }
    return error;
}

static int ismapping_create(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *body,
                            json_t **out)
{
    const char *name = sw_json_str_at(body, "metadata.name");
    const char *tag = sw_json_str_at(body, "tag");
    json_t *image = json_object_get(body, "image");
    const char *id = sw_json_str_at(image, "metadata.name");
    const char *ref = sw_json_str_at(image, "dockerImageReference");
    char now[32];
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "metadata.name: Required value: the stream's name");
    if (!id || !sw_str_prefix(id, "sha256:") || strlen(id) != 71)
        return sw_error_set(SW_EINVALID,
                            "image.metadata.name: Invalid value: must be the image digest "
                            "(sha256:<64 hex>)");
    if (!ref || !*ref)
        return sw_error_set(SW_EINVALID, "image.dockerImageReference: Required value");
    if (sw_image_ref_check(ref, "image.dockerImageReference") < 0)
        return SW_EINVALID;
    if (!tag || !*tag)
        tag = "latest";
    bool existed = false;
    int error = ensure_image(o, image, &existed);
    /* A managed image (pushed to the integrated registry) that exists already is pulled
     * through this stream's own repository from now on, as OpenShift re-points it. */
    char repointed[700];
    const char *managed = json_string_value(
        json_object_get(sw_json_at(image, "metadata.annotations"), "openshift.io/image.managed"));
    if (existed && sw_str_eq(managed, "true") && ctx && ctx->image_registry &&
        *ctx->image_registry) {
        snprintf(repointed, sizeof(repointed), "%s/%s/%s@%s", ctx->image_registry, ns, name, id);
        ref = repointed;
    }
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *ev =
        json_pack("{s:s, s:s, s:s}", "created", now, "dockerImageReference", ref, "image", id);
    if (error == 0)
        error = sw_imagestream_record(o, ns, name, tag, ev);
    json_decref(ev);
    *out = NULL;
    return error;
}

static const sw_virtual_ops ismapping_ops = {.create = ismapping_create};
static const char *const ismapping_verbs[] = {"create", NULL};

const sw_kind sw_kind_imagestreammapping = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "ImageStreamMapping",
    .plural = "imagestreammappings",
    .singular = "imagestreammapping",
    .namespaced = true,
    .schema_text = "{\"image\":\"any\",\"tag\":\"string\"}",
    .virt = &ismapping_ops,
    .verbs = ismapping_verbs,
};
