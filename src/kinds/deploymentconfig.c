/* deploymentconfig: the DeploymentConfig kind, its instantiate and rollback subresources and the
 * trigger rules its controller shares (see deploymentconfig.h). */
#include "kinds/docs.h"
#include "kinds/deploymentconfig.h"

#include "kinds/imagestream.h"
#include "kinds/podspec.h"
#include "kinds/workloads.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQUEST (256 * 1024)
#define MAX_TRIGGERS 64

void sw_dc_rc_name(const char *dc, int64_t v, char *out, size_t n)
{
    snprintf(out, n, "%.230s-%lld", dc ? dc : "", (long long)v);
}

static bool is_image_trigger(const json_t *t)
{
    return sw_str_eq(sw_json_str_at(t, "type"), "ImageChange");
}

static bool has_config_trigger(const json_t *dc)
{
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(dc, "spec.triggers"), i, t)
    {
        if (sw_str_eq(sw_json_str_at(t, "type"), "ConfigChange"))
            return true;
    }
    return false;
}

/* ---- defaults and validation ---- */

static void default_strategy(json_t *spec)
{
    sw_json_default(spec, "strategy", json_object());
    json_t *st = json_object_get(spec, "strategy");
    sw_json_default(st, "type", json_string("Rolling"));
    if (sw_str_eq(sw_json_str_at(st, "type"), "Rolling")) {
        sw_json_default(st, "rollingParams", json_object());
        json_t *p = json_object_get(st, "rollingParams");
        sw_json_default(p, "updatePeriodSeconds", json_integer(1));
        sw_json_default(p, "intervalSeconds", json_integer(1));
        sw_json_default(p, "timeoutSeconds", json_integer(600));
        sw_json_default(p, "maxUnavailable", json_string("25%"));
        sw_json_default(p, "maxSurge", json_string("25%"));
    } else if (sw_str_eq(sw_json_str_at(st, "type"), "Recreate")) {
        sw_json_default(st, "recreateParams", json_object());
        sw_json_default(json_object_get(st, "recreateParams"), "timeoutSeconds", json_integer(600));
    }
    sw_json_default(st, "resources", json_object());
    sw_json_default(st, "activeDeadlineSeconds", json_integer(21600));
}

static int dc_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = sw_json_obj_path(obj, "spec");
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    /* triggers: absent (or null) means a ConfigChange trigger; [] means none */
    json_t *triggers = json_object_get(spec, "triggers");
    if (!triggers || json_is_null(triggers))
        json_object_set_new(spec, "triggers", json_pack("[{s:s}]", "type", "ConfigChange"));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "triggers"), i, t)
    {
        json_t *from = sw_json_at(t, "imageChangeParams.from");
        if (!is_image_trigger(t) || !json_is_object(from))
            continue;
        sw_json_default(from, "kind", json_string("ImageStreamTag"));
        if (ns && !*(sw_json_str_at(from, "namespace") ?: ""))
            json_object_set_new(from, "namespace", json_string(ns));
    }
    sw_json_default(spec, "replicas", json_integer(0));
    sw_json_default(spec, "revisionHistoryLimit", json_integer(10));
    const json_t *labels = sw_json_at(obj, "spec.template.metadata.labels");
    if (!json_object_size(json_object_get(spec, "selector")) && json_object_size(labels))
        json_object_set_new(spec, "selector", json_deep_copy(labels));
    default_strategy(spec);
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int dc_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return dc_prepare(ctx, obj);
}

/* `oc deploy --latest` of old clients: an update whose status.latestVersion is one above the
 * stored one starts a new version (OpenShift keeps this; `oc rollout undo` relies on it). */
static void dc_carry_status(json_t *obj, const json_t *sent, const json_t *old)
{
    int64_t now = sw_json_int_or(old, "status.latestVersion", 0);
    if (sw_json_int_or(sent, "latestVersion", -1) != now + 1)
        return;
    sw_dc_bump(obj, json_pack("[{s:s}]", "type", "Manual"));
}

static int check_trigger(const json_t *dc, const json_t *t, size_t i)
{
    static const char *const types[] = {"ConfigChange", "ImageChange", NULL};
    char at[64];
    snprintf(at, sizeof(at), "spec.triggers[%zu]", i);
    int error = sw_kind_check_enum(t, at, "type", types, true);
    if (error < 0 || !is_image_trigger(t))
        return error;
    const json_t *p = json_object_get(t, "imageChangeParams");
    if (!json_is_object(p))
        return sw_error_set(SW_EINVALID, "%s.imageChangeParams: Required value", at);
    static const char *const kinds[] = {"ImageStreamTag", NULL};
    char pat[96];
    snprintf(pat, sizeof(pat), "%s.imageChangeParams", at);
    if ((error = sw_kind_check_enum(p, pat, "from.kind", kinds, true)) < 0)
        return error;
    const char *name = sw_json_str_at(p, "from.name");
    char stream[256], tag[256];
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "%s.from.name: Required value", pat);
    if (sw_imagestream_split_tag_name(name, stream, sizeof(stream), tag, sizeof(tag)) < 0)
        return sw_error_set(SW_EINVALID,
                            "%s.from.name: Invalid value: \"%.200s\": must be of the form "
                            "<stream_name>:<tag>",
                            pat, name);
    const json_t *names = json_object_get(p, "containerNames");
    if (!json_array_size(names))
        return sw_error_set(SW_EINVALID, "%s.containerNames: Required value", pat);
    size_t j;
    json_t *n;
    json_array_foreach(names, j, n)
    {
        bool found = false;
        const char *lists[2] = {"spec.template.spec.containers",
                                "spec.template.spec.initContainers"};
        for (int l = 0; l < 2; l++) {
            size_t k;
            json_t *c;
            json_array_foreach(sw_json_at(dc, lists[l]), k, c)
            {
                if (json_is_string(n) && sw_str_eq(sw_json_str_at(c, "name"), json_string_value(n)))
                    found = true;
            }
        }
        if (!found)
            return sw_error_set(SW_EINVALID,
                                "%s.containerNames[%zu]: Invalid value: \"%.64s\": does not match "
                                "any container",
                                pat, j, json_string_value(n) ?: "");
    }
    return 0;
}

/* Whether container name is one an ImageChange trigger of dc sets (then its image may be
 * empty: the trigger fills it in). */
static bool triggered(const json_t *dc, const char *name)
{
    size_t i, j;
    json_t *t, *n;
    json_array_foreach(sw_json_at(dc, "spec.triggers"), i, t)
    {
        if (!is_image_trigger(t))
            continue;
        json_array_foreach(sw_json_at(t, "imageChangeParams.containerNames"), j, n)
        {
            if (sw_str_eq(json_string_value(n), name))
                return true;
        }
    }
    return false;
}

static int dc_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const always[] = {"Always", NULL};
    static const char *const strategies[] = {"Rolling", "Recreate", "Custom", NULL};
    const json_t *triggers = sw_json_at(obj, "spec.triggers");
    if (json_array_size(triggers) > MAX_TRIGGERS)
        return sw_error_set(SW_EINVALID, "spec.triggers: Too many: %zu: must have at most %d items",
                            json_array_size(triggers), MAX_TRIGGERS);
    size_t i, configs = 0;
    json_t *t;
    int error = 0;
    json_array_foreach(triggers, i, t)
    {
        if ((error = check_trigger(obj, t, i)) < 0)
            return error;
        if (!is_image_trigger(t) && ++configs > 1)
            return sw_error_set(SW_EINVALID,
                                "spec.triggers: Invalid value: only one ConfigChange trigger is "
                                "allowed");
    }
    if (!json_is_object(sw_json_at(obj, "spec.template")))
        return sw_error_set(SW_EINVALID, "spec.template: Required value");
    if ((error = sw_podspec_check_map_selector(obj)) < 0)
        return error;
    const char *nonneg[] = {"spec.replicas", "spec.revisionHistoryLimit", "spec.minReadySeconds"};
    for (size_t k = 0; k < 3; k++) {
        int64_t v;
        if (sw_json_int_at(obj, nonneg[k], &v) && v < 0)
            return sw_error_set(SW_EINVALID,
                                "%s: Invalid value: %lld: must be greater than or equal to 0",
                                nonneg[k], (long long)v);
    }
    if ((error = sw_kind_check_enum(obj, NULL, "spec.strategy.type", strategies, false)) < 0)
        return error;
    /* a container an ImageChange trigger sets may have no image yet */
    json_t *tmpl = json_deep_copy(sw_json_at(obj, "spec.template"));
    const char *lists[2] = {"spec.containers", "spec.initContainers"};
    for (int l = 0; l < 2; l++) {
        json_t *c;
        json_array_foreach(sw_json_at(tmpl, lists[l]), i, c)
        {
            const char *image = sw_json_str_at(c, "image");
            if ((!image || !*image) && triggered(obj, sw_json_str_at(c, "name")))
                json_object_set_new(c, "image", json_string("image-set-by-its-trigger"));
        }
    }
    error = sw_podtemplate_validate(tmpl, "spec.template", always);
    json_decref(tmpl);
    return error;
}

/* ---- triggers ---- */

/* Sets the containers trigger t names in dc to image, and lastTriggeredImage; where the digest
 * is the same already nothing changes. 1 changed, 0 not, SW_EINVALID for a missing container. */
static int apply_image(json_t *dc, json_t *t, const char *image)
{
    int changed = 0;
    size_t i;
    json_t *n;
    json_array_foreach(sw_json_at(t, "imageChangeParams.containerNames"), i, n)
    {
        json_t *hit = NULL;
        const char *lists[2] = {"spec.template.spec.containers",
                                "spec.template.spec.initContainers"};
        for (int l = 0; l < 2 && !hit; l++) {
            size_t k;
            json_t *c;
            json_array_foreach(sw_json_at(dc, lists[l]), k, c)
            {
                if (sw_str_eq(sw_json_str_at(c, "name"), json_string_value(n)))
                    hit = c;
            }
        }
        if (!hit)
            return sw_error_set(SW_EINVALID, "no such container: %.64s",
                                json_string_value(n) ?: "");
        const char *now = sw_json_str_at(hit, "image");
        if (!now || !*now || !sw_ref_same_image(now, image)) {
            json_object_set_new(hit, "image", json_string(image));
            changed = 1;
        }
    }
    json_t *p = json_object_get(t, "imageChangeParams");
    const char *last = sw_json_str_at(p, "lastTriggeredImage");
    if (!last || !*last || !sw_ref_same_image(last, image)) {
        json_object_set_new(p, "lastTriggeredImage", json_string(image));
        changed = 1;
    }
    return changed;
}

int sw_dc_resolve(json_t *dc, bool manual, sw_dc_stream_fn get, void *ctx, bool *changed,
                  bool *unresolved)
{
    *changed = *unresolved = false;
    json_t *work = json_deep_copy(dc);
    int error = 0;
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(work, "spec.triggers"), i, t)
    {
        if (!is_image_trigger(t) || (!manual && !sw_json_bool_at(t, "imageChangeParams.automatic")))
            continue;
        const json_t *from = sw_json_at(t, "imageChangeParams.from");
        const char *ns = sw_json_str_at(from, "namespace");
        if (!ns || !*ns)
            ns = sw_json_str_at(dc, "metadata.namespace") ?: "";
        char stream[256], tag[256], image[1100];
        json_t *s = NULL;
        bool ok = false;
        if (sw_imagestream_split_tag_name(sw_json_str_at(from, "name") ?: "", stream,
                                          sizeof(stream), tag, sizeof(tag)) == 0) {
            int e = get(ctx, ns, stream, &s);
            if (e < 0 && e != SW_ENOTFOUND) {
                error = e;
                break;
            }
            ok = s && sw_imagestream_tag_image(s, tag, image, sizeof(image));
            json_decref(s);
        }
        if (!ok) {
            if (!*(sw_json_str_at(t, "imageChangeParams.lastTriggeredImage") ?: ""))
                *unresolved = true;
            continue;
        }
        int r = apply_image(work, t, image);
        if (r < 0) {
            error = r;
            break;
        }
        if (r > 0)
            *changed = true;
    }
    if (error == 0 && *unresolved)
        *changed = false;
    if (error == 0 && *changed) {
        json_object_set(dc, "spec", json_object_get(work, "spec"));
    }
    json_decref(work);
    return error;
}

/* Whether some container of rc's template runs image (by digest). */
static bool runs(const json_t *rc, const char *image)
{
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(rc, "spec.template.spec.containers"), i, c)
    {
        if (sw_ref_same_image(sw_json_str_at(c, "image"), image))
            return true;
    }
    return false;
}

/* The template rc was made from (its encoded config's), as a new reference, or NULL. */
static json_t *rc_source_template(const json_t *rc)
{
    const char *text = json_string_value(
        json_object_get(sw_json_at(rc, "metadata.annotations"), SW_DC_ENCODED_ANN));
    json_t *dc = NULL, *out = NULL;
    if (text && sw_json_parse(text, strlen(text), SW_JSON_MAX_DEPTH, 0, &dc) == 0)
        out = json_incref(sw_json_at(dc, "spec.template"));
    json_decref(dc);
    return out;
}

json_t *sw_dc_causes(const json_t *dc, const json_t *rc, bool force)
{
    json_t *causes = json_array();
    if (force) {
        json_array_append_new(causes, json_pack("{s:s}", "type", "Manual"));
        return causes;
    }
    int64_t version = sw_json_int_or(dc, "status.latestVersion", 0);
    if (version > 0 && !rc)
        return causes; /* the controller makes the latest version's RC first */
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(dc, "spec.triggers"), i, t)
    {
        if (!is_image_trigger(t) || !sw_json_bool_at(t, "imageChangeParams.automatic"))
            continue;
        const char *last = sw_json_str_at(t, "imageChangeParams.lastTriggeredImage");
        if (!last || !*last) {
            if (version == 0) { /* the first version waits for every automatic trigger */
                json_array_clear(causes);
                return causes;
            }
            continue;
        }
        if (version == 0 || !runs(rc, last))
            json_array_append_new(causes, json_pack("{s:s, s:{s:{s:s, s:s}}}", "type",
                                                    "ImageChange", "imageTrigger", "from", "kind",
                                                    "DockerImage", "name", last));
    }
    if (version == 0 && has_config_trigger(dc)) {
        json_array_clear(causes);
        json_array_append_new(causes, json_pack("{s:s}", "type", "ConfigChange"));
        return causes;
    }
    if (version > 0 && !json_array_size(causes) && has_config_trigger(dc)) {
        json_t *was = rc_source_template(rc);
        if (!was || !json_equal(was, sw_json_at(dc, "spec.template")))
            json_array_append_new(causes, json_pack("{s:s}", "type", "ConfigChange"));
        json_decref(was);
    }
    return causes;
}

void sw_dc_bump(json_t *dc, json_t *causes)
{
    const char *type = sw_json_str_at(json_array_get(causes, 0), "type");
    const char *msg = sw_str_eq(type, "ConfigChange")  ? "config change"
                      : sw_str_eq(type, "ImageChange") ? "image change"
                                                       : "manual change";
    json_t *st = sw_json_obj_path(dc, "status");
    json_object_set_new(st, "latestVersion",
                        json_integer(sw_json_int_or(dc, "status.latestVersion", 0) + 1));
    json_object_set_new(st, "details", json_pack("{s:s, s:o}", "message", msg, "causes", causes));
}

/* ---- instantiate ---- */

static int objects_stream(void *ctx, const char *ns, const char *name, json_t **out)
{
    sw_objects *o = ctx;
    return o->get(o, &sw_kind_imagestream, ns, name, out);
}

static bool excluded(const json_t *req, const char *type)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(req, "excludeTriggers"), i, x)
    {
        if (sw_str_eq(json_string_value(x), type))
            return true;
    }
    return false;
}

/* One attempt of an instantiate on the current dc: *out the saved config, or NULL when there
 * was nothing to do. */
static int instantiate_once(sw_objects *o, const char *ns, const char *name, const json_t *req,
                            json_t **out)
{
    json_t *dc = NULL, *rc = NULL, *causes = NULL;
    bool force = sw_json_bool_at(req, "force"), latest = sw_json_bool_at(req, "latest");
    int error = o->get(o, &sw_kind_deploymentconfig, ns, name, &dc);
    if (error < 0)
        goto done;
    if (sw_json_bool_at(dc, "spec.paused")) {
        error = sw_error_set(SW_EINVALID,
                             "deployment config \"%s\" is paused - unpause to request a new "
                             "deployment",
                             name);
        goto done;
    }
    if (latest && !excluded(req, "ImageChange")) {
        bool changed = false, unresolved = false;
        if ((error = sw_dc_resolve(dc, force, objects_stream, o, &changed, &unresolved)) < 0)
            goto done;
        size_t i;
        json_t *t;
        json_array_foreach(sw_json_at(dc, "spec.triggers"), i, t)
        {
            if (is_image_trigger(t) &&
                !*(sw_json_str_at(t, "imageChangeParams.lastTriggeredImage") ?: ""))
                unresolved = true;
        }
        if (unresolved) {
            error = sw_error_set(SW_EBADREQUEST,
                                 "cannot trigger a deployment for \"%s\" because it contains "
                                 "unresolved images",
                                 name);
            goto done;
        }
        if (changed) {
            json_t *saved = NULL;
            if ((error = o->update(o, &sw_kind_deploymentconfig, dc, &saved)) < 0)
                goto done;
            json_decref(dc);
            dc = saved;
        }
    }
    char rcname[256];
    sw_dc_rc_name(name, sw_json_int_or(dc, "status.latestVersion", 0), rcname, sizeof(rcname));
    if (sw_json_int_or(dc, "status.latestVersion", 0) > 0) {
        error = o->get(o, &sw_kind_replicationcontroller, ns, rcname, &rc);
        if (error == SW_ENOTFOUND)
            error = 0;
        if (error < 0)
            goto done;
    }
    causes = sw_dc_causes(dc, rc, force);
    if (!json_array_size(causes)) {
        *out = NULL;
        goto done;
    }
    sw_dc_bump(dc, json_incref(causes));
    error = o->update_status(o, &sw_kind_deploymentconfig, dc, out);
done:
    json_decref(causes);
    json_decref(rc);
    json_decref(dc);
    return error;
}

static int dc_instantiate(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                          sw_subresp *out)
{
    json_t *req = NULL;
    int error = strcmp(r->method, "POST")
                    ? sw_error_set(SW_EMETHOD, "instantiate takes a POSTed DeploymentRequest")
                    : sw_subreq_json(r, "a DeploymentRequest", MAX_REQUEST, &req);
    const char *name = sw_json_str_at(req, "name");
    if (error == 0 && name && *name && strcmp(name, r->name))
        error = sw_error_set(SW_EBADREQUEST,
                             "name: Invalid value: \"%.64s\": must be the deployment config's "
                             "(\"%s\")",
                             name, r->name);
    for (int attempt = 0; error == 0 && attempt < 5; attempt++) {
        error = instantiate_once(o, r->ns, r->name, req, &out->obj);
        if (error != SW_ECONFLICT)
            break;
        if (attempt < 4)
            error = 0;
    }
    if (error == 0 && !out->obj) { /* nothing to do: OpenShift's Status 204 */
        out->status = 204;
        out->text = sw_strdup("");
        out->text_len = 0;
    } else if (error == 0) {
        out->status = 201;
    }
    json_decref(req);
    return error;
}

/* ---- rollback ---- */

static int dc_rollback(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    json_t *req = NULL, *dc = NULL, *rc = NULL, *from = NULL;
    int error = strcmp(r->method, "POST")
                    ? sw_error_set(SW_EMETHOD, "rollback takes a POSTed DeploymentConfigRollback")
                    : sw_subreq_json(r, "a DeploymentConfigRollback", MAX_REQUEST, &req);
    if (error == 0)
        error = o->get(o, &sw_kind_deploymentconfig, r->ns, r->name, &dc);
    if (error < 0)
        goto done;
    int64_t latest = sw_json_int_or(dc, "status.latestVersion", 0);
    int64_t rev = sw_json_int_or(req, "spec.revision", 0);
    if (latest == 0) {
        error = sw_error_set(SW_EINVALID, "cannot rollback an undeployed config");
        goto done;
    }
    if (rev < 0) {
        error = sw_error_set(SW_EINVALID,
                             "spec.revision: Invalid value: %lld: must be greater than or equal "
                             "to 0",
                             (long long)rev);
        goto done;
    }
    if (rev == 0)
        rev = latest - 1;
    if (rev <= 0) {
        error = sw_error_set(SW_EINVALID, "no previous deployment exists for \"%s/%s\"", r->ns,
                             r->name);
        goto done;
    }
    if (rev == latest) {
        error = sw_error_set(SW_EINVALID, "version %lld is already the latest", (long long)rev);
        goto done;
    }
    char rcname[256];
    sw_dc_rc_name(r->name, rev, rcname, sizeof(rcname));
    error = o->get(o, &sw_kind_replicationcontroller, r->ns, rcname, &rc);
    if (error == SW_ENOTFOUND)
        error = sw_error_set(SW_EINVALID,
                             "couldn't find deployment for rollback: revision %lld "
                             "of \"%s/%s\" does not exist",
                             (long long)rev, r->ns, r->name);
    if (error < 0)
        goto done;
    const char *text = json_string_value(
        json_object_get(sw_json_at(rc, "metadata.annotations"), SW_DC_ENCODED_ANN));
    if (!text || sw_json_parse(text, strlen(text), SW_JSON_MAX_DEPTH, 0, &from) < 0 ||
        !json_is_object(sw_json_at(from, "spec"))) {
        error = sw_error_set(SW_EINVALID, "couldn't decode the deployment config of %s", rcname);
        goto done;
    }
    json_t *spec = json_object_get(dc, "spec"), *was = json_object_get(from, "spec");
    const struct {
        const char *flag;
        const char *fields[2];
    } parts[] = {{"includeTemplate", {"template", NULL}},
                 {"includeTriggers", {"triggers", NULL}},
                 {"includeReplicationMeta", {"replicas", "selector"}},
                 {"includeStrategy", {"strategy", NULL}}};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "spec.%s", parts[i].flag);
        if (!sw_json_bool_at(req, path))
            continue;
        for (size_t j = 0; j < 2 && parts[i].fields[j]; j++) {
            json_t *v = json_object_get(was, parts[i].fields[j]);
            if (v)
                json_object_set_new(spec, parts[i].fields[j], json_deep_copy(v));
        }
    }
    /* the image triggers would roll it forward again at once: they become manual */
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "triggers"), i, t)
    {
        if (is_image_trigger(t))
            json_object_set_new(sw_json_obj_path(t, "imageChangeParams"), "automatic",
                                json_false());
    }
    json_object_set_new(sw_json_obj_path(dc, "status"), "latestVersion", json_integer(latest + 1));
    out->obj = json_incref(dc);
done:
    json_decref(from);
    json_decref(rc);
    json_decref(dc);
    json_decref(req);
    return error;
}

/* ---- the kind ---- */

static void revision_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.latestVersion", 0));
}

static void triggered_by_cell(const json_t *obj, sw_buf *out)
{
    size_t i, n = 0;
    json_t *t;
    json_array_foreach(sw_json_at(obj, "spec.triggers"), i, t)
    {
        if (is_image_trigger(t))
            sw_buf_printf(out, "%simage(%s)", n++ ? "," : "",
                          sw_json_str_at(t, "imageChangeParams.from.name") ?: "");
        else
            sw_buf_printf(out, "%sconfig", n++ ? "," : "");
    }
}

static const sw_column dc_columns[] = {
    {"Revision", "integer", "The latest version", 0, revision_cell, NULL, NULL},
    {"Desired", "integer", "Desired replicas", 0, sw_workload_desired_cell, NULL, NULL},
    {"Current", "integer", "Current replicas", 0, sw_workload_current_cell, NULL, NULL},
    {"Triggered By", "string", "What starts a new version", 0, triggered_by_cell, NULL, NULL},
};

static const char *const post_verbs[] = {"create", NULL};
static const sw_subresource dc_subresources[] = {
    {"instantiate", "DeploymentRequest", post_verbs, false, dc_instantiate},
    {"rollback", "DeploymentConfigRollback", post_verbs, false, dc_rollback},
};

const sw_kind sw_kind_deploymentconfig = {
    .group = "apps.openshift.io",
    .version = "v1",
    .kind = "DeploymentConfig",
    .plural = "deploymentconfigs",
    .singular = "deploymentconfig",
    .short_names = {"dc"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .docs = sw_docs_deploymentconfig,
    .schema_text =
        "{\"spec\":{\"strategy\":\"any\",\"minReadySeconds\":\"integer\",\"triggers\":[{"
        "\"type\":\"string\",\"imageChangeParams\":{\"automatic\":\"boolean\","
        "\"containerNames\":[\"string\"],\"from\":{\"kind\":\"string\",\"namespace\":\"string\","
        "\"name\":\"string\",\"apiVersion\":\"string\",\"uid\":\"string\","
        "\"resourceVersion\":\"string\",\"fieldPath\":\"string\"},"
        "\"lastTriggeredImage\":\"string\"}}],\"replicas\":\"integer\","
        "\"revisionHistoryLimit\":\"integer\",\"test\":\"boolean\",\"paused\":\"boolean\","
        "\"selector\":\"map\",\"template\":" SW_POD_TEMPLATE_SCHEMA "},"
        "\"status\":{\"latestVersion\":\"integer\",\"observedGeneration\":\"integer\","
        "\"replicas\":\"integer\",\"updatedReplicas\":\"integer\",\"availableReplicas\":"
        "\"integer\",\"unavailableReplicas\":\"integer\",\"readyReplicas\":\"integer\","
        "\"details\":\"any\",\"conditions\":[\"any\"]}}",
    .smp = sw_smp_schema_core,
    .columns = dc_columns,
    .ncolumns = 4,
    .prepare_create = dc_prepare,
    .prepare_update = dc_update,
    .carry_status = dc_carry_status,
    .validate = dc_validate,
    .subresources = dc_subresources,
    .nsubresources = 2,
};
