/* imagestream: image.openshift.io/v1 ImageStream: validation (openshift-api.md §1.1), the spec-tag
 * generation rules of OpenShift's strategy (§1.3), reference tags written to status at once (§1.4),
 * and status.dockerImageRepository computed on every read (§1.2). */
#include "kinds/docs.h"
#include "kinds/imagestream.h"

#include "registry/ref.h"

#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdarg.h>
#include <string.h>

static json_t *find_by(json_t *arr, const char *field, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (sw_str_eq(sw_json_str_at(e, field), value))
            return e;
    }
    return NULL;
}

json_t *sw_imagestream_spec_tag(const json_t *stream, const char *tag)
{
    return find_by(sw_json_at(stream, "spec.tags"), "name", tag);
}

json_t *sw_imagestream_status_tag(const json_t *stream, const char *tag)
{
    return find_by(sw_json_at(stream, "status.tags"), "tag", tag);
}

/* AddTagEventToImageStream: returns true when the stream changed. */
bool sw_imagestream_add_tag_event(json_t *stream, const char *tag, const json_t *event)
{
    json_t *tags = sw_json_at(stream, "status.tags");
    if (!json_is_array(tags)) {
        tags = json_array();
        sw_json_set_path(stream, "status.tags", tags);
    }
    json_t *named = find_by(tags, "tag", tag);
    if (!named) {
        named = json_pack("{s:s, s:[]}", "tag", tag, "items");
        json_array_append_new(tags, named);
    }
    json_t *items = json_object_get(named, "items");
    if (!json_is_array(items)) {
        items = json_array();
        json_object_set_new(named, "items", items);
    }
    json_t *head = json_array_get(items, 0);
    const char *ref = sw_json_str_at(event, "dockerImageReference");
    const char *img = sw_json_str_at(event, "image");
    int64_t gen = 0, hgen = 0;
    sw_json_int_at(event, "generation", &gen);
    if (head) {
        bool same_ref = sw_str_eq(sw_json_str_at(head, "dockerImageReference"), ref);
        bool same_img = sw_str_eq(sw_json_str_at(head, "image"), img);
        sw_json_int_at(head, "generation", &hgen);
        if (same_ref && same_img) {
            /* the same image recorded again (a reproducible rebuild pushed it back after it
             * was deleted): what the conditions said about it is over */
            if (hgen == gen) {
                if (!json_object_get(named, "conditions"))
                    return false;
                json_object_del(named, "conditions");
                return true;
            }
            json_object_set_new(head, "generation", json_integer(gen));
            json_object_del(named, "conditions");
            return true;
        }
        if (same_ref || same_img) { /* updated in place: it keeps when it was first seen */
            json_t *created = json_incref(json_object_get(head, "created"));
            json_object_update(head, (json_t *)event);
            if (created)
                json_object_set_new(head, "created", created);
            json_object_del(named, "conditions");
            return true;
        }
    }
    json_array_insert(items, 0, (json_t *)event);
    json_object_del(named, "conditions");
    return true;
}

int sw_image_ref_check(const char *ref, const char *field_fmt, ...)
{
    sw_ref parsed;
    char field[300];
    if (sw_ref_parse(ref, &parsed) == 0)
        return 0;
    va_list ap;
    va_start(ap, field_fmt);
    vsnprintf(field, sizeof(field), field_fmt, ap);
    va_end(ap);
    return sw_error_set(SW_EINVALID, "%s: Invalid value: \"%.300s\": %s", field, ref,
                        sw_error_msg());
}

bool sw_imagestream_tag_name_ok(const char *name)
{
    if (!name || !*name)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-') ||
            p - name >= 128)
            return false;
    return true;
}

static int validate_tag(const json_t *tag, size_t idx)
{
    const char *name = sw_json_str_at(tag, "name");
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "spec.tags[%zu].name: Required value", idx);
    if (!sw_imagestream_tag_name_ok(name))
        return sw_error_set(SW_EINVALID,
                            "spec.tags[%zu].name: Invalid value: \"%.128s\": a tag must "
                            "match [\\w][\\w.-]{0,127}",
                            idx, name);
    json_t *from = json_object_get(tag, "from");
    const char *kind = sw_json_str_at(from, "kind");
    if (from && !json_is_null(from)) {
        if (!kind || (strcmp(kind, "DockerImage") && strcmp(kind, "ImageStreamTag") &&
                      strcmp(kind, "ImageStreamImage")))
            return sw_error_set(SW_EINVALID,
                                "spec.tags[%s].from.kind: Unsupported value: \"%s\": supported "
                                "values: \"DockerImage\", \"ImageStreamImage\", \"ImageStreamTag\"",
                                name, kind ? kind : "");
        const char *fname = sw_json_str_at(from, "name");
        if (!fname || !*fname)
            return sw_error_set(SW_EINVALID, "spec.tags[%s].from.name: Required value", name);
        int error = strcmp(kind, "DockerImage")
                        ? 0
                        : sw_image_ref_check(fname, "spec.tags[%s].from.name", name);
        if (error < 0)
            return error;
        if (!strcmp(kind, "ImageStreamImage") && !strchr(fname, '@'))
            return sw_error_set(SW_EINVALID,
                                "spec.tags[%s].from.name: Invalid value: \"%s\": must be of the "
                                "form <stream>@<digest>",
                                name, fname);
    }
    if (sw_json_bool_at(tag, "importPolicy.scheduled") && !sw_str_eq(kind, "DockerImage"))
        return sw_error_set(
            SW_EINVALID,
            "spec.tags[%s].importPolicy.scheduled: Invalid value: true: only tags "
            "pointing to Docker repositories may be scheduled for background import",
            name);
    const char *mode = sw_json_str_at(tag, "importPolicy.importMode");
    if (mode && *mode && strcmp(mode, "Legacy") && strcmp(mode, "PreserveOriginal"))
        return sw_error_set(SW_EINVALID,
                            "spec.tags[%s].importPolicy.importMode: Unsupported value: \"%s\": "
                            "supported values: \"Legacy\", \"PreserveOriginal\"",
                            name, mode);
    const char *rp = sw_json_str_at(tag, "referencePolicy.type");
    if (rp && *rp && strcmp(rp, "Source") && strcmp(rp, "Local"))
        return sw_error_set(SW_EINVALID,
                            "spec.tags[%s].referencePolicy.type: Unsupported value: \"%s\": "
                            "supported values: \"Local\", \"Source\"",
                            name, rp);
    return 0;
}

/* OpenShift's ValidateImageStreamName: the name is one registry repository name component,
 * [a-z0-9]+(?:[._-][a-z0-9]+)* (so no uppercase, no doubled or trailing separators). */
static bool repo_component_ok(const char *s)
{
    bool need_alnum = true;
    for (; *s; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))
            need_alnum = false;
        else if (!need_alnum && (*s == '.' || *s == '_' || *s == '-'))
            need_alnum = true;
        else
            return false;
    }
    return !need_alnum;
}

static int is_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    const char *name = sw_json_str_at(obj, "metadata.name");
    if (name && !repo_component_ok(name))
        return sw_error_set(SW_EINVALID,
                            "metadata.name: Invalid value: \"%s\": must match "
                            "\"[a-z0-9]+(?:[._-][a-z0-9]+)*\"",
                            name);
    if (ns && name && strlen(ns) + 1 + strlen(name) > 255)
        return sw_error_set(SW_EINVALID,
                            "metadata.name: Invalid value: \"%s\": '<namespace>/<name>' cannot be "
                            "longer than 255 characters",
                            name);
    const char *repo = sw_json_str_at(obj, "spec.dockerImageRepository");
    if (repo && (strchr(repo, '@') || (strrchr(repo, ':') && !strchr(strrchr(repo, ':'), '/'))))
        return sw_error_set(SW_EINVALID,
                            "spec.dockerImageRepository: Invalid value: \"%s\": the repository "
                            "name may not contain a tag or digest",
                            repo);
    if (repo && *repo && sw_image_ref_check(repo, "spec.dockerImageRepository") < 0)
        return SW_EINVALID;
    json_t *tags = sw_json_at(obj, "spec.tags");
    if (tags && !json_is_array(tags) && !json_is_null(tags))
        return sw_error_set(SW_EINVALID, "spec.tags: Invalid value: must be a list");
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        int error = validate_tag(t, i);
        if (error < 0)
            return error;
        for (size_t j = 0; j < i; j++)
            if (sw_str_eq(sw_json_str_at(json_array_get(tags, j), "name"),
                          sw_json_str_at(t, "name")))
                return sw_error_set(SW_EINVALID, "spec.tags[%zu].name: Duplicate value: \"%s\"", i,
                                    sw_json_str_at(t, "name"));
    }
    return 0;
}

static void default_tag(json_t *tag)
{
    if (!sw_json_str_at(tag, "referencePolicy.type"))
        sw_json_set_path(tag, "referencePolicy.type", json_string("Source"));
}

/* An ImageStreamImage reference <this stream>@<digest or prefix>: the event in this stream's
 * history with that image is copied (tagReferenceToTagEvent); another stream's is left to the
 * client that wrote it. As OpenShift's ResolveImageID, the prefix must name exactly one image:
 * none or several make the write invalid. */
static int copy_stream_image(json_t *obj, const char *tag, const char *ref, int64_t gen)
{
    const char *at = strchr(ref, '@');
    const char *sname = sw_json_str_at(obj, "metadata.name");
    const char *found = NULL;
    json_t *match = NULL;
    size_t i, j;
    json_t *st, *ev;
    if (!at || !sname || strlen(sname) != (size_t)(at - ref) || strncmp(ref, sname, strlen(sname)))
        return 0;
    json_array_foreach(sw_json_at(obj, "status.tags"), i, st)
    {
        json_array_foreach(json_object_get(st, "items"), j, ev)
        {
            const char *img = sw_json_str_at(ev, "image");
            if (!img || !*img || !sw_str_prefix(img, at + 1))
                continue;
            if (found && strcmp(found, img))
                return sw_error_set(SW_EINVALID,
                                    "spec.tags[%s].from.name: Invalid value: \"%.300s\": error "
                                    "generating tag event: multiple images match the prefix",
                                    tag, ref);
            found = img;
            match = match ? match : ev;
        }
    }
    if (!match)
        return sw_error_set(SW_EINVALID,
                            "spec.tags[%s].from.name: Invalid value: \"%.300s\": error generating "
                            "tag event: no image of the stream matches",
                            tag, ref);
    json_t *copy = json_deep_copy(match);
    json_object_set_new(copy, "generation", json_integer(gen));
    sw_imagestream_add_tag_event(obj, tag, copy);
    json_decref(copy);
    return 0;
}

/* OpenShift's tagRefChanged: from (namespace defaulted), reference and importMode, or a
 * generation reset to 0. Fields a tag does not have compare equal. */
static bool tag_ref_changed(const json_t *tag, const json_t *prev, const char *ns)
{
    if (!prev)
        return true;
    const char *ons = sw_json_str_at(prev, "from.namespace");
    const char *nns = sw_json_str_at(tag, "from.namespace");
    if (!sw_str_eq(sw_json_str_at(tag, "from.name"), sw_json_str_at(prev, "from.name")) ||
        !sw_str_eq(nns && *nns ? nns : ns, ons && *ons ? ons : ns) ||
        sw_json_bool_at(tag, "reference") != sw_json_bool_at(prev, "reference") ||
        !sw_str_eq(sw_json_str_at(tag, "importPolicy.importMode"),
                   sw_json_str_at(prev, "importPolicy.importMode")))
        return true;
    json_t *g = json_object_get(tag, "generation");
    return json_is_integer(g) && json_integer_value(g) == 0;
}

/* updateChangedTrackingTags: every status tag whose newest event is not the one it had before
 * passes it on to the tags that follow it (one level, as OpenShift does), whatever the order
 * of spec.tags. */
static void update_changed_tracking(json_t *obj, const json_t *old)
{
    json_t *names = json_array();
    size_t i;
    json_t *st;
    json_array_foreach(sw_json_at(obj, "status.tags"), i, st)
    {
        const char *tag = sw_json_str_at(st, "tag");
        json_t *head = json_array_get(json_object_get(st, "items"), 0);
        json_t *was =
            old ? json_array_get(json_object_get(sw_imagestream_status_tag(old, tag), "items"), 0)
                : NULL;
        if (tag && head && !json_equal(head, was))
            json_array_append_new(names, json_string(tag));
    }
    json_array_foreach(names, i, st) /* names first: following adds status tags */
        sw_imagestream_update_tracking_tags(obj, json_string_value(st));
    json_decref(names);
}

/* tagsChanged: a new or changed reference tag gets its status at once. Same-stream ImageStreamTag
 * references copy the target's newest event; DockerImage references record the pull spec. */
static int apply_tag_references(json_t *obj, const json_t *old)
{
    size_t i;
    json_t *tag;
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_array_foreach(sw_json_at(obj, "spec.tags"), i, tag)
    {
        const char *name = sw_json_str_at(tag, "name");
        const char *ns = sw_json_str_at(obj, "metadata.namespace");
        json_t *prev = old ? sw_imagestream_spec_tag(old, name) : NULL;
        if (prev && !tag_ref_changed(tag, prev, ns))
            continue; /* an annotation or a label changed, not where the tag points */
        const char *kind = sw_json_str_at(tag, "from.kind");
        const char *fname = sw_json_str_at(tag, "from.name");
        const char *fns = sw_json_str_at(tag, "from.namespace");
        if (!name || !fname)
            continue; /* runs before validation, which refuses such a tag */
        int64_t gen = 0;
        sw_json_int_at(tag, "generation", &gen);
        if (sw_str_eq(kind, "DockerImage") && sw_json_bool_at(tag, "reference")) {
            json_t *ev = json_pack("{s:s, s:s, s:s, s:I}", "created", now, "dockerImageReference",
                                   fname, "image", "", "generation", (json_int_t)gen);
            sw_imagestream_add_tag_event(obj, name, ev);
            json_decref(ev);
        } else if (sw_str_eq(kind, "ImageStreamTag") && (!fns || !*fns || sw_str_eq(fns, ns))) {
            const char *target = fname;
            const char *colon = strchr(fname, ':');
            const char *sname = sw_json_str_at(obj, "metadata.name");
            if (colon) {
                if (strncmp(fname, sname, (size_t)(colon - fname)) ||
                    strlen(sname) != (size_t)(colon - fname))
                    continue; /* another stream's tag: not resolved (docs/imagestreams.md) */
                target = colon + 1;
            }
            json_t *st = sw_imagestream_status_tag(obj, target);
            json_t *head = json_array_get(json_object_get(st, "items"), 0);
            if (head && strcmp(target, name)) {
                json_t *ev = json_deep_copy(head);
                /* tagReferenceToTagEvent: the copy carries this tag's generation, so the
                 * reference does not look like an import still pending */
                json_object_set_new(ev, "generation", json_integer(gen));
                sw_imagestream_add_tag_event(obj, name, ev);
                json_decref(ev);
            }
        } else if (sw_str_eq(kind, "ImageStreamImage") && (!fns || !*fns || sw_str_eq(fns, ns))) {
            int error = copy_stream_image(obj, name, fname, gen);
            if (error < 0)
                return error;
        }
    }
    update_changed_tracking(obj, old);
    return 0;
}

/* status.dockerImageRepository is <internal registry>/<ns>/<name>, computed on read; without
 * a registry it falls back to spec.dockerImageRepository, which depends on the object alone and
 * is therefore kept in the stored status (always as its first key, so reads can replace it). */
static bool is_computed_status(const sw_kind_ctx *ctx, const char *ns, const char *name, char *out,
                               size_t n)
{
    if (!ctx->image_registry || !*ctx->image_registry)
        return false;
    snprintf(out, n, "%s/%s/%s", ctx->image_registry, ns ? ns : "", name ? name : "");
    return true;
}

static void store_repository_fallback(json_t *obj)
{
    /* computed on read by OpenShift from its external registry hostname, which slipway does
     * not have: never stored from a client */
    json_object_del(json_object_get(obj, "status"), "publicDockerImageRepository");
    const char *spec = sw_json_str_at(obj, "spec.dockerImageRepository");
    json_t *status = json_object_get(obj, "status");
    json_t *next = json_object();
    const char *key;
    json_t *v;
    if (spec && *spec)
        json_object_set_new(next, "dockerImageRepository", json_string(spec));
    json_object_foreach(status, key, v)
    {
        if (strcmp(key, "dockerImageRepository"))
            json_object_set(next, key, v);
    }
    if (json_object_size(next))
        json_object_set_new(obj, "status", next);
    else {
        json_decref(next);
        json_object_del(obj, "status");
    }
}

static int is_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    size_t i;
    json_t *tag;
    json_array_foreach(sw_json_at(obj, "spec.tags"), i, tag)
    {
        json_object_set_new(tag, "generation", json_integer(1));
        default_tag(tag);
    }
    int error = apply_tag_references(obj, NULL);
    store_repository_fallback(obj);
    return error;
}

static int is_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    size_t i;
    json_t *tag;
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    /* Users cannot set a tag generation: a non-zero value becomes the stored one. */
    json_array_foreach(sw_json_at(obj, "spec.tags"), i, tag)
    {
        default_tag(tag);
        json_t *prev = sw_imagestream_spec_tag(old, sw_json_str_at(tag, "name"));
        json_t *g = json_object_get(tag, "generation");
        bool reset = json_is_integer(g) && json_integer_value(g) == 0;
        if (reset)
            continue;
        json_t *pg = prev ? json_object_get(prev, "generation") : NULL;
        if (json_is_integer(pg))
            json_object_set_new(tag, "generation", json_integer(json_integer_value(pg)));
        else
            json_object_del(tag, "generation");
    }
    int64_t gen = 1;
    sw_json_int_at(old, "metadata.generation", &gen);
    if (!sw_json_same(sw_json_at(obj, "spec"), sw_json_at(old, "spec")))
        gen++;
    json_array_foreach(sw_json_at(obj, "spec.tags"), i, tag)
    {
        json_t *prev = sw_imagestream_spec_tag(old, sw_json_str_at(tag, "name"));
        json_t *g = json_object_get(tag, "generation");
        if (tag_ref_changed(tag, prev, ns) || !json_is_integer(g) || json_integer_value(g) == 0)
            json_object_set_new(tag, "generation", json_integer(gen));
    }
    int error = apply_tag_references(obj, old);
    store_repository_fallback(obj);
    return error;
}

/* updateObservedGenerationForStatusUpdate: a new items[0] without a generation gets the spec
 * tag's generation, or the stream's. */
static int is_prepare_status_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    size_t i;
    json_t *st;
    int64_t sgen = 1;
    sw_json_int_at(obj, "metadata.generation", &sgen);
    json_array_foreach(sw_json_at(obj, "status.tags"), i, st)
    {
        json_t *head = json_array_get(json_object_get(st, "items"), 0);
        int64_t g = 0;
        if (!head || (sw_json_int_at(head, "generation", &g) && g != 0))
            continue;
        json_t *spec = sw_imagestream_spec_tag(obj, sw_json_str_at(st, "tag"));
        int64_t tg = sgen;
        if (spec)
            sw_json_int_at(spec, "generation", &tg);
        json_object_set_new(head, "generation", json_integer(tg));
    }
    store_repository_fallback(obj);
    return 0;
}

static void is_repo(const json_t *obj, sw_buf *out)
{
    const char *r = sw_json_str_at(obj, "status.dockerImageRepository");
    sw_buf_puts(out, r ? r : "");
}

static void is_tags(const json_t *obj, sw_buf *out)
{
    size_t i;
    json_t *st;
    json_array_foreach(sw_json_at(obj, "status.tags"), i, st)
    {
        if (i)
            sw_buf_putc(out, ',');
        sw_buf_puts(out, sw_json_str_at(st, "tag") ?: "");
    }
}

static void is_updated(const json_t *obj, sw_buf *out)
{
    size_t i;
    json_t *st;
    int64_t newest = 0, t;
    json_array_foreach(sw_json_at(obj, "status.tags"), i, st)
    {
        const char *c = sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "created");
        if (c && sw_time_parse(c, &t) == 0 && t > newest)
            newest = t;
    }
    if (newest) {
        char age[32];
        sw_time_human(sw_time_now() - newest, age, sizeof(age));
        sw_buf_puts(out, age);
    }
}

static const sw_column is_columns[] = {
    {"Image Repository", "string", "Where the stream's images are pushed", 0, is_repo, NULL, NULL},
    {"Tags", "string", "The tags with images", 0, is_tags, NULL, NULL},
    {"Updated", "string", "When the newest tag changed", 0, is_updated, NULL, NULL},
};

const sw_kind sw_kind_imagestream = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "ImageStream",
    .plural = "imagestreams",
    .singular = "imagestream",
    .short_names = {"is"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_PATH_SEGMENT,
    .docs = sw_docs_imagestream,
    .schema_text =
        "{\"spec\":{\"lookupPolicy\":{\"local\":\"boolean\"},\"dockerImageRepository\":\"string\","
        "\"tags\":[{\"name\":\"string\",\"annotations\":\"map\",\"from\":{\"kind\":\"string\","
        "\"namespace\":\"string\",\"name\":\"string\",\"uid\":\"string\",\"apiVersion\":\"string\","
        "\"resourceVersion\":\"string\",\"fieldPath\":\"string\"},\"reference\":\"boolean\","
        "\"generation\":\"integer\",\"importPolicy\":{\"insecure\":\"boolean\","
        "\"scheduled\":\"boolean\",\"importMode\":\"string\"},"
        "\"referencePolicy\":{\"type\":\"string\"}}]},"
        "\"status\":{\"dockerImageRepository\":\"string\",\"publicDockerImageRepository\":"
        "\"string\","
        "\"tags\":[{\"tag\":\"string\",\"items\":[{\"created\":\"string\","
        "\"dockerImageReference\":\"string\",\"image\":\"string\",\"generation\":\"integer\"}],"
        "\"conditions\":[{\"type\":\"string\",\"status\":\"string\",\"lastTransitionTime\":"
        "\"string\","
        "\"reason\":\"string\",\"message\":\"string\",\"generation\":\"integer\"}]}]}}",
    .columns = is_columns,
    .ncolumns = 3,
    .prepare_create = is_prepare_create,
    .prepare_update = is_prepare_update,
    .prepare_status_update = is_prepare_status_update,
    .validate = is_validate,
    .computed_status_key = "dockerImageRepository",
    .computed_status = is_computed_status,
};

/* The tag a same-stream ImageStreamTag reference points at, or NULL. */
static const char *tracked_tag(const json_t *stream, const json_t *spec_tag)
{
    const char *kind = sw_json_str_at(spec_tag, "from.kind");
    const char *fname = sw_json_str_at(spec_tag, "from.name");
    const char *fns = sw_json_str_at(spec_tag, "from.namespace");
    const char *ns = sw_json_str_at(stream, "metadata.namespace");
    const char *sname = sw_json_str_at(stream, "metadata.name");
    if (!sw_str_eq(kind, "ImageStreamTag") || !fname || (fns && *fns && !sw_str_eq(fns, ns)))
        return NULL;
    const char *colon = strchr(fname, ':');
    if (!colon)
        return fname;
    if (!sname || strlen(sname) != (size_t)(colon - fname) || strncmp(fname, sname, strlen(sname)))
        return NULL;
    return colon + 1;
}

/* UpdateTrackingTags: every spec tag following `tag` in this stream gets its newest event. */
bool sw_imagestream_update_tracking_tags(json_t *stream, const char *tag)
{
    json_t *head =
        json_array_get(json_object_get(sw_imagestream_status_tag(stream, tag), "items"), 0);
    bool changed = false;
    size_t i;
    json_t *spec;
    if (!head)
        return false;
    json_t *ev = json_deep_copy(head);
    json_array_foreach(sw_json_at(stream, "spec.tags"), i, spec)
    {
        const char *name = sw_json_str_at(spec, "name");
        const char *target = tracked_tag(stream, spec);
        if (target && name && !strcmp(target, tag) && strcmp(name, tag))
            changed |= sw_imagestream_add_tag_event(stream, name, ev);
    }
    json_decref(ev);
    return changed;
}

void sw_imagestream_pull_spec(const json_t *stream, const char *tag, const json_t *event, char *out,
                              size_t n)
{
    const char *ref = sw_json_str_at(event, "dockerImageReference");
    const char *image = sw_json_str_at(event, "image");
    const char *repo = sw_json_str_at(stream, "status.dockerImageRepository");
    const char *policy =
        sw_json_str_at(sw_imagestream_spec_tag(stream, tag), "referencePolicy.type");
    if (sw_str_eq(policy, "Local") && repo && *repo && image && *image)
        snprintf(out, n, "%s@%s", repo, image);
    else
        sw_strlcpy(out, ref ? ref : "", n);
}

bool sw_imagestream_tag_image(const json_t *stream, const char *tag, char *out, size_t n)
{
    const json_t *head =
        json_array_get(json_object_get(sw_imagestream_status_tag(stream, tag), "items"), 0);
    const char *digest = sw_json_str_at(head, "image");
    char spec[1024];
    sw_ref ref;
    if (!head || !sw_ref_digest_valid(digest))
        return false;
    sw_imagestream_pull_spec(stream, tag, head, spec, sizeof(spec));
    if (sw_ref_parse(spec, &ref) < 0)
        return false;
    snprintf(out, n, "%s/%s@%s", ref.registry, ref.repository, digest);
    return true;
}

int sw_imagestream_split_tag_name(const char *name, char *stream, size_t sn, char *tag, size_t tn)
{
    const char *colon = strchr(name, ':');
    if (!colon || colon == name || !colon[1] || strchr(colon + 1, ':') ||
        (size_t)(colon - name) >= sn || strlen(colon + 1) >= tn)
        return sw_error_set(SW_EBADREQUEST,
                            "\"%.300s\" is not a valid name: must be <stream>:<tag>", name);
    memcpy(stream, name, (size_t)(colon - name));
    stream[colon - name] = '\0';
    sw_strlcpy(tag, colon + 1, tn);
    return 0;
}
