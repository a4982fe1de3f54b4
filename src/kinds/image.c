/* image: image.openshift.io/v1 Image, cluster-scoped, named by its manifest digest. */
#include "kinds/docs.h"
#include "kinds/imagestream.h"

#include "util/json.h"

static void image_ref(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "dockerImageReference", out);
}

static const sw_column image_columns[] = {
    {"Image Reference", "string", "The pull spec of the image", 0, image_ref, NULL, NULL},
};

/* dockerImageReference must parse as an image reference (OpenShift validates it too). */
static int image_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    const char *ref = sw_json_str_at(obj, "dockerImageReference");
    return ref && *ref ? sw_image_ref_check(ref, "dockerImageReference") : 0;
}

const sw_kind sw_kind_image = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "Image",
    .plural = "images",
    .singular = "image",
    .namespaced = false,
    .name_rule = SW_NAME_PATH_SEGMENT,
    .docs = sw_docs_image,
    .schema_text =
        "{\"dockerImageReference\":\"string\",\"dockerImageMetadata\":\"any\","
        "\"dockerImageMetadataVersion\":\"string\",\"dockerImageManifest\":\"string\","
        "\"dockerImageLayers\":[{\"name\":\"string\",\"size\":\"integer\","
        "\"mediaType\":\"string\"}],\"signatures\":[\"any\"],"
        "\"dockerImageSignatures\":[\"string\"],\"dockerImageManifestMediaType\":\"string\","
        "\"dockerImageConfig\":\"string\",\"dockerImageManifests\":[{\"digest\":\"string\","
        "\"mediaType\":\"string\",\"manifestSize\":\"integer\",\"architecture\":\"string\","
        "\"os\":\"string\",\"variant\":\"string\"}]}",
    .columns = image_columns,
    .ncolumns = 1,
    .validate = image_validate,
};
