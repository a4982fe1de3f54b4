/* managedimage: the ManagedImage kind (see managedimage.h): descriptor, strict schema,
 * defaults (strategy type, output tag "latest", the policy's), validation (what a BuildConfig
 * validates, plus an output ImageStreamTag in the ManagedImage's own namespace and a source it
 * can rebuild from on its own), table columns and the derivations the controller uses. */
#include "kinds/docs.h"
#include "kinds/managedimage.h"

#include "kinds/build.h"
#include "kinds/imagestream.h"
#include "meta/names.h"
#include "registry/ref.h"
#include "util/error.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- derivations ---- */

bool sw_mi_output(const json_t *mi, char *stream, size_t sn, char *tag, size_t tn)
{
    const char *to = sw_json_str_at(mi, "spec.output.to.name");
    return to && sw_imagestream_split_tag_name(to, stream, sn, tag, tn) == 0;
}

int64_t sw_mi_verify_interval(const json_t *mi)
{
    int64_t v;
    return sw_json_int_at(mi, "spec.policy.verifyIntervalSeconds", &v) && v >= 0
               ? v
               : SW_MI_VERIFY_DEFAULT;
}

bool sw_mi_rebuild_on_base(const json_t *mi)
{
    const json_t *v = sw_json_at(mi, "spec.policy.rebuildOnBaseImageChange");
    return !json_is_false(v);
}

static int64_t limit(const json_t *mi, const char *key)
{
    char path[96];
    int64_t v;
    snprintf(path, sizeof(path), "spec.policy.%s", key);
    return sw_json_int_at(mi, path, &v) && v >= 0 ? v : SW_MI_HISTORY_DEFAULT;
}

/* The build fields of the spec (everything but policy), output in the ManagedImage's
 * namespace. */
static json_t *build_fields(const json_t *mi)
{
    json_t *spec = json_deep_copy(json_object_get(mi, "spec"));
    if (!json_is_object(spec)) {
        json_decref(spec);
        spec = json_object();
    }
    json_object_del(spec, "policy");
    json_t *to = sw_json_at(spec, "output.to");
    if (json_is_object(to))
        json_object_del(to, "namespace");
    if (!sw_json_str_at(spec, "strategy.type") && sw_json_at(spec, "strategy.dockerStrategy"))
        sw_json_set_path(spec, "strategy.type", json_string("Docker"));
    return spec;
}

json_t *sw_mi_bc_spec(const json_t *mi)
{
    json_t *spec = build_fields(mi);
    json_object_set_new(spec, "runPolicy", json_string("Serial"));
    json_object_set_new(spec, "triggers", json_array());
    json_object_set_new(spec, "successfulBuildsHistoryLimit",
                        json_integer(limit(mi, "successfulBuildsHistoryLimit")));
    json_object_set_new(spec, "failedBuildsHistoryLimit",
                        json_integer(limit(mi, "failedBuildsHistoryLimit")));
    return spec;
}

void sw_mi_spec_hash(const json_t *mi, char *out, size_t n)
{
    json_t *spec = build_fields(mi);
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    char digest[SW_SHA256_DIGEST_BUF];
    sw_sha256_digest(text ? text : "", text ? strlen(text) : 0, digest);
    free(text);
    json_decref(spec);
    sw_strlcpy(out, digest, n);
}

/* ---- strategy ---- */

static void defaults(json_t *obj)
{
    json_t *spec = sw_json_obj_path(obj, "spec");
    if (!sw_json_str_at(spec, "strategy.type") && sw_json_at(spec, "strategy.dockerStrategy"))
        sw_json_set_path(spec, "strategy.type", json_string("Docker"));
    if (!sw_json_str_at(spec, "output.to.kind") && sw_json_at(spec, "output.to"))
        sw_json_set_path(spec, "output.to.kind", json_string("ImageStreamTag"));
    const char *to = sw_json_str_at(spec, "output.to.name");
    if (to && *to && !strchr(to, ':')) {
        char full[300];
        snprintf(full, sizeof(full), "%.250s:latest", to);
        sw_json_set_path(spec, "output.to.name", json_string(full));
    }
    json_t *policy = sw_json_obj_path(spec, "policy");
    if (!json_is_boolean(json_object_get(policy, "rebuildOnBaseImageChange")))
        json_object_set_new(policy, "rebuildOnBaseImageChange", json_true());
    if (!json_object_get(policy, "verifyIntervalSeconds"))
        json_object_set_new(policy, "verifyIntervalSeconds", json_integer(SW_MI_VERIFY_DEFAULT));
    if (!json_object_get(policy, "successfulBuildsHistoryLimit"))
        json_object_set_new(policy, "successfulBuildsHistoryLimit",
                            json_integer(SW_MI_HISTORY_DEFAULT));
    if (!json_object_get(policy, "failedBuildsHistoryLimit"))
        json_object_set_new(policy, "failedBuildsHistoryLimit",
                            json_integer(SW_MI_HISTORY_DEFAULT));
}

static int mi_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    defaults(obj);
    return 0;
}

static int mi_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    defaults(obj);
    return 0;
}

static int validate_output(const json_t *obj)
{
    static const char *const kinds[] = {"ImageStreamTag", NULL};
    const json_t *spec = json_object_get(obj, "spec");
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    const char *to_ns = sw_json_str_at(spec, "output.to.namespace");
    const char *to = sw_json_str_at(spec, "output.to.name");
    char stream[256], tag[256];
    if (!sw_json_at(spec, "output.to"))
        return sw_error_set(SW_EINVALID, "spec.output.to: Required value: the ImageStreamTag "
                                         "<stream>:<tag> the image is kept in");
    int error = sw_kind_check_enum(spec, "spec", "output.to.kind", kinds, true);
    if (error < 0)
        return error;
    if (to_ns && *to_ns && !sw_str_eq(to_ns, ns))
        return sw_error_set(SW_EINVALID,
                            "spec.output.to.namespace: Invalid value: \"%.64s\": a ManagedImage "
                            "keeps its image in its own namespace (\"%s\")",
                            to_ns, ns ? ns : "");
    if (!to || sw_imagestream_split_tag_name(to, stream, sizeof(stream), tag, sizeof(tag)) < 0)
        return sw_error_set(SW_EINVALID,
                            "spec.output.to.name: Invalid value: \"%.200s\": must be "
                            "<stream>:<tag>",
                            to ? to : "");
    if (sw_names_check_path_segment(stream) < 0 || sw_names_check_subdomain(stream) < 0)
        return sw_names_invalid(SW_EINVALID, "spec.output.to.name", to, sw_error_msg());
    /* the tag is pushed to the registry: the registry's tag grammar, stricter than a stream's */
    if (!sw_imagestream_tag_name_ok(tag) || !sw_ref_tag_valid(tag))
        return sw_error_set(SW_EINVALID,
                            "spec.output.to.name: Invalid value: \"%.200s\": the tag \"%.130s\" "
                            "must be a registry tag, [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}",
                            to, tag);
    return 0;
}

static int mi_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *name = sw_json_str_at(obj, "metadata.name");
    int64_t v;
    if (name && strlen(name) > 63)
        return sw_error_set(SW_EINVALID,
                            "metadata.name: Invalid value: \"%.80s...\": must be no more than 63 "
                            "characters (it names the ManagedImage's BuildConfig)",
                            name);
    if (!json_is_object(sw_json_at(spec, "strategy")))
        return sw_error_set(SW_EINVALID, "spec.strategy: Required value: how the image is built "
                                         "(type Docker)");
    if (sw_str_eq(sw_json_str_at(spec, "strategy.type"), "Source"))
        return sw_error_set(SW_EINVALID, "spec.strategy.type: Unsupported value: \"Source\": a "
                                         "ManagedImage builds with the Docker strategy: supported "
                                         "values: \"Docker\"");
    int error = sw_build_validate_common(spec);
    if (error < 0)
        return error;
    if (sw_str_eq(sw_json_str_at(spec, "source.type"), "Binary"))
        return sw_error_set(SW_EINVALID,
                            "spec.source.type: Unsupported value: \"Binary\": a ManagedImage "
                            "rebuilds on its own, so its source must be one it can fetch again: "
                            "supported values: \"Git\", \"Dockerfile\", \"None\"");
    if ((error = validate_output(obj)) < 0)
        return error;
    static const char *const ints[] = {"verifyIntervalSeconds", "successfulBuildsHistoryLimit",
                                       "failedBuildsHistoryLimit"};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        char path[96];
        snprintf(path, sizeof(path), "policy.%s", ints[i]);
        if (sw_json_int_at(spec, path, &v) && (v < 0 || v > 31536000))
            return sw_error_set(SW_EINVALID,
                                "spec.%s: Invalid value: %lld: must be between 0 and 31536000",
                                path, (long long)v);
    }
    return 0;
}

/* ---- table ---- */

static const json_t *condition(const json_t *obj, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(obj, "status.conditions"), i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), type))
            return c;
    }
    return NULL;
}

static void image_cell(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "status.latestImage", out);
}

static void ready_cell(const json_t *obj, sw_buf *out)
{
    const char *s = sw_json_str_at(condition(obj, "Ready"), "status");
    sw_buf_puts(out, s ? s : "Unknown");
}

static void reason_cell(const json_t *obj, sw_buf *out)
{
    const char *s = sw_json_str_at(condition(obj, "Ready"), "reason");
    sw_buf_puts(out, s ? s : "");
}

static const sw_column mi_columns[] = {
    {"Image", "string", "The image in the registry (repository@digest)", 0, image_cell, NULL, NULL},
    {"Ready", "string", "Whether the image exists and was built from the current inputs", 0,
     ready_cell, NULL, NULL},
    {"Reason", "string", "Why it is (not) ready", 0, reason_cell, NULL, NULL},
};

#define COND                                                                                       \
    "{\"type\":\"string\",\"status\":\"string\",\"reason\":\"string\","                            \
    "\"message\":\"string\",\"lastTransitionTime\":\"string\","                                    \
    "\"observedGeneration\":\"integer\"}"

const sw_kind sw_kind_managedimage = {
    .group = "image.slipway.dev",
    .version = "v1alpha1",
    .kind = SW_MI_KIND,
    .plural = "managedimages",
    .singular = "managedimage",
    .short_names = {"mi"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .docs = sw_docs_managedimage,
    .schema_text = "{\"spec\":{" SW_BUILD_COMMON_SPEC ",\"policy\":{"
                   "\"rebuildOnBaseImageChange\":\"boolean\",\"verifyIntervalSeconds\":"
                   "\"integer\",\"successfulBuildsHistoryLimit\":\"integer\","
                   "\"failedBuildsHistoryLimit\":\"integer\"}},"
                   "\"status\":{\"observedGeneration\":\"integer\",\"conditions\":[" COND "],"
                   "\"latestImage\":\"string\",\"latestBuild\":\"string\",\"inputs\":{"
                   "\"generation\":\"integer\",\"specHash\":\"string\",\"baseImage\":\"string\","
                   "\"sourceRevision\":\"string\"}}}",
    .columns = mi_columns,
    .ncolumns = 3,
    .prepare_create = mi_prepare_create,
    .prepare_update = mi_prepare_update,
    .validate = mi_validate,
};
