/* delete: the one delete pipeline of the generic REST layer. DeleteOptions are read once (from
 * the body when there is one, else from the query; dryRun from either), then one object goes
 * through: preconditions, the kind's prepare_delete, the garbage-collection finalizers the
 * propagation policy asks for (orphan, foregroundDeletion), deletionTimestamp while any
 * finalizer holds the object, removal once none does, and the replies kube-apiserver gives
 * (crd-gc.md §2.3, §2.4). deletecollection deletes item by item through the same path. */
#include "apiserver/rest.h"

#include "apiserver/object.h"
#include "apiserver/selector.h"
#include "meta/ownerref.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

#define CAS_RETRIES 8
#define FAILURES_SHOWN 5 /* failed items named in a deletecollection's error */

/* ---- DeleteOptions ---- */

static int invalid_policy(const char *v)
{
    return sw_error_set(SW_EINVALID,
                        "propagationPolicy: Unsupported value: \"%.64s\": supported values: "
                        "\"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        v);
}

static int opts_from_body(const sw_request *req, sw_delete_opts *o)
{
    json_t *body = NULL, *v;
    int error = sw_json_parse(req->body, req->body_len, 8, 0, &body);
    if (error < 0)
        return error;
    if (!json_is_object(body)) {
        error = sw_error_set(SW_EBADREQUEST, "DeleteOptions must be a JSON object");
        goto done;
    }
    const char *kind = sw_json_str_at(body, "kind");
    if (kind && *kind && strcmp(kind, "DeleteOptions")) {
        error = sw_error_set(SW_EBADREQUEST,
                             "the body of a DELETE must be DeleteOptions, not %.64s", kind);
        goto done;
    }
    if ((v = json_object_get(body, "propagationPolicy")) && !json_is_null(v)) {
        if (!json_is_string(v)) {
            error =
                sw_error_set(SW_EBADREQUEST, "DeleteOptions.propagationPolicy must be a string");
            goto done;
        }
        if (!(o->policy = sw_propagation_parse(json_string_value(v)))) {
            error = invalid_policy(json_string_value(v));
            goto done;
        }
    }
    if ((v = json_object_get(body, "orphanDependents")) && !json_is_null(v)) {
        if (!json_is_boolean(v)) {
            error =
                sw_error_set(SW_EBADREQUEST, "DeleteOptions.orphanDependents must be a boolean");
            goto done;
        }
        o->orphan_dependents = json_is_true(v) ? 1 : 0;
    }
    if ((v = json_object_get(body, "gracePeriodSeconds")) && !json_is_null(v)) {
        if (!json_is_integer(v)) {
            error =
                sw_error_set(SW_EBADREQUEST, "DeleteOptions.gracePeriodSeconds must be an integer");
            goto done;
        }
        o->grace_seconds = json_integer_value(v);
    }
    json_t *pre = json_object_get(body, "preconditions");
    if (pre && !json_is_null(pre) && !json_is_object(pre)) {
        error = sw_error_set(SW_EBADREQUEST, "DeleteOptions.preconditions must be an object");
        goto done;
    }
    json_t *uid = json_object_get(pre, "uid"), *rv = json_object_get(pre, "resourceVersion");
    if ((uid && !json_is_string(uid) && !json_is_null(uid)) ||
        (rv && !json_is_string(rv) && !json_is_null(rv))) {
        error = sw_error_set(SW_EBADREQUEST, "DeleteOptions.preconditions: uid and "
                                             "resourceVersion must be strings");
        goto done;
    }
    if (json_is_string(uid)) {
        o->has_uid = true;
        sw_strlcpy(o->uid, json_string_value(uid), sizeof(o->uid));
    }
    if (json_is_string(rv)) {
        o->has_rv = true;
        sw_strlcpy(o->rv, json_string_value(rv), sizeof(o->rv));
    }
    json_t *dry = json_object_get(body, "dryRun"), *d;
    size_t i;
    if (dry && !json_is_null(dry) && !json_is_array(dry)) {
        error = sw_error_set(SW_EBADREQUEST, "DeleteOptions.dryRun must be a list of strings");
        goto done;
    }
    json_array_foreach(dry, i, d)
    {
        if (!sw_str_eq(json_string_value(d), "All")) {
            error = sw_error_set(SW_EINVALID,
                                 "dryRun: Unsupported value: [\"%.64s\"]: supported values: "
                                 "\"All\"",
                                 json_string_value(d) ? json_string_value(d) : "");
            goto done;
        }
        o->dry_run = true;
    }
done:
    json_decref(body);
    return error;
}

static int opts_from_query(const sw_request *req, sw_delete_opts *o)
{
    const char *p = sw_req_query(req, "propagationPolicy");
    const char *od = sw_req_query(req, "orphanDependents");
    const char *g = sw_req_query(req, "gracePeriodSeconds");
    const char *uid = sw_req_query(req, "preconditions.uid");
    const char *rv = sw_req_query(req, "preconditions.resourceVersion");
    bool b;
    if (p && !(o->policy = sw_propagation_parse(p)))
        return invalid_policy(p);
    if (od) {
        if (sw_str_to_bool(od, &b) < 0)
            return sw_error_set(SW_EBADREQUEST, "orphanDependents: invalid value \"%.64s\"", od);
        o->orphan_dependents = b ? 1 : 0;
    }
    if (g && sw_str_to_i64(g, &o->grace_seconds) < 0)
        return sw_error_set(SW_EBADREQUEST, "gracePeriodSeconds: invalid value \"%.64s\"", g);
    if (uid) {
        o->has_uid = true;
        sw_strlcpy(o->uid, uid, sizeof(o->uid));
    }
    if (rv) {
        o->has_rv = true;
        sw_strlcpy(o->rv, rv, sizeof(o->rv));
    }
    return 0;
}

/* No option given: the kind's default policy, no preconditions, no dry run. */
static void opts_none(sw_delete_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->orphan_dependents = -1;
    o->grace_seconds = -1;
}

int sw_rest_delete_opts(const sw_request *req, sw_delete_opts *o)
{
    opts_none(o);
    /* As kube-apiserver: a body carries the options and the query is not read for them; a
     * dryRun in either is honoured (a dry run asked for must never delete). */
    int error = req->body_len ? opts_from_body(req, o) : opts_from_query(req, o);
    if (sw_rest_dry_run(req))
        o->dry_run = true;
    if (error == 0 && o->orphan_dependents >= 0 && o->policy != SW_PROPAGATE_UNSET)
        error = sw_error_set(SW_EINVALID,
                             "propagationPolicy: Invalid value: \"%s\": orphanDependents and "
                             "deletionPropagation cannot be both set",
                             sw_propagation_name(o->policy));
    return error;
}

/* ---- one object ---- */

/* Whether the dependents are orphaned / deleted first (the apiserver's shouldOrphanDependents
 * and shouldDeleteDependentsInForeground): the legacy option, then the policy, then a GC
 * finalizer the object already has, then the kind's default. */
static bool should_orphan(const sw_kind *k, const json_t *fin, const sw_delete_opts *o)
{
    if (o->orphan_dependents >= 0)
        return o->orphan_dependents == 1;
    if (o->policy != SW_PROPAGATE_UNSET)
        return o->policy == SW_PROPAGATE_ORPHAN;
    if (sw_finalizers_has(fin, SW_FINALIZER_ORPHAN))
        return true;
    if (sw_finalizers_has(fin, SW_FINALIZER_FOREGROUND))
        return false;
    return k->gc_default == SW_PROPAGATE_ORPHAN;
}

static bool should_foreground(const json_t *fin, const sw_delete_opts *o)
{
    if (o->orphan_dependents >= 0)
        return false;
    if (o->policy != SW_PROPAGATE_UNSET)
        return o->policy == SW_PROPAGATE_FOREGROUND;
    if (sw_finalizers_has(fin, SW_FINALIZER_FOREGROUND))
        return true;
    return false;
}

int sw_rest_remove(sw_api *api, const sw_kind *k, const char *key, json_t *obj, int64_t expected,
                   bool dry_run)
{
    int64_t rev = 0;
    int error = dry_run ? 0 : sw_store_delete(api->store, key, expected, &rev);
    if (error == 0 && rev)
        sw_object_set_rv(obj, rev);
    if (error == 0 && rev && k->removed)
        k->removed(&api->kctx, sw_json_str_at(obj, "metadata.namespace"),
                   sw_json_str_at(obj, "metadata.name"));
    return error;
}

/* The Status a removal answers with (kind = the resource, as kube-apiserver sets it). */
static json_t *removed_status(const sw_kind *k, const json_t *obj)
{
    return json_pack("{s:s, s:s, s:{}, s:s, s:{s:s, s:s, s:s, s:s}}", "kind", "Status",
                     "apiVersion", "v1", "metadata", "status", "Success", "details", "name",
                     sw_json_str_at(obj, "metadata.name") ?: "", "group", k->group, "kind",
                     k->plural, "uid", sw_json_str_at(obj, "metadata.uid") ?: "");
}

/* Stores obj over revision cur_rev and gives it the new resourceVersion. */
static int write_back(sw_api *api, const sw_kind *k, const char *key, json_t *obj, int64_t cur_rev,
                      bool dry_run)
{
    if (dry_run)
        return 0;
    size_t len;
    int64_t rev;
    char *val = sw_object_encode(obj, &len);
    int error = sw_store_update(api->store, key, val, len, cur_rev, &rev);
    sw_free(val);
    if (error == 0) {
        sw_object_set_rv(obj, rev);
        if (k->committed)
            k->committed(&api->kctx, obj);
    }
    return error;
}

/* deletionTimestamp (kept when set), deletionGracePeriodSeconds 0, generation + 1 the first
 * time (the apiserver's markAsDeleting). Returns whether anything changed. */
static bool mark_deleting(json_t *obj)
{
    json_t *meta = sw_json_obj_path(obj, "metadata");
    bool changed = false;
    if (!json_object_get(meta, "deletionTimestamp")) {
        char now[32];
        int64_t gen;
        sw_time_format(sw_time_now(), now, sizeof(now));
        json_object_set_new(meta, "deletionTimestamp", json_string(now));
        if (sw_json_int_at(meta, "generation", &gen) && gen > 0)
            json_object_set_new(meta, "generation", json_integer(gen + 1));
        changed = true;
    }
    int64_t grace = -1;
    if (!sw_json_int_at(meta, "deletionGracePeriodSeconds", &grace) || grace != 0) {
        json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0));
        changed = true;
    }
    return changed;
}

static int check_preconditions(const sw_kind *k, const char *name, const json_t *obj, int64_t rev,
                               const sw_delete_opts *o)
{
    char res[160], cur[32];
    const char *uid = sw_json_str_at(obj, "metadata.uid");
    if (o->has_uid && !sw_str_eq(o->uid, uid))
        return sw_error_set(SW_ECONFLICT,
                            "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID "
                            "in precondition: %.64s, UID in object meta: %s",
                            sw_rest_resource(k, res, sizeof(res)), name, o->uid, uid ? uid : "");
    snprintf(cur, sizeof(cur), "%lld", (long long)rev);
    if (o->has_rv && strcmp(o->rv, cur))
        return sw_error_set(SW_ECONFLICT,
                            "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
                            "ResourceVersion in precondition: %.30s, ResourceVersion in object "
                            "meta: %s",
                            sw_rest_resource(k, res, sizeof(res)), name, o->rv, cur);
    return 0;
}

/* One attempt on the stored version cur; *final is set when a conflict is the client's own
 * precondition (no retry helps). */
static int delete_at(sw_api *api, const sw_kind *k, const char *key, const char *name,
                     const sw_kv *cur, const sw_delete_opts *o, json_t **out, int *status,
                     bool *final)
{
    json_t *obj = NULL;
    int error = sw_api_decode(api, k, cur->value, cur->value_len, cur->mod_rev, &obj);
    if (error == 0 && (error = check_preconditions(k, name, obj, cur->mod_rev, o)) < 0)
        *final = true;
    if (error < 0)
        goto fail;
    *status = o->orphan_dependents == 0 ? 202 : 200;
    if (k->prepare_delete) {
        int r = k->prepare_delete(&api->kctx, obj, o);
        if (r < 0 || (r == SW_DELETE_WRITE &&
                      (error = write_back(api, k, key, obj, cur->mod_rev, o->dry_run)) < 0)) {
            error = r < 0 ? r : error;
            goto fail;
        }
        if (r != SW_DELETE_GENERIC) {
            *out = obj;
            return 0;
        }
    }
    json_t *meta = sw_json_obj_path(obj, "metadata");
    json_t *old = json_object_get(meta, "finalizers");
    json_t *fin =
        sw_finalizers_for_delete(old, should_orphan(k, old, o), should_foreground(old, o));
    bool changed = !sw_finalizers_same_set(old, fin);
    if (json_array_size(fin)) {
        /* held by finalizers: marked, answered with the object */
        if (changed)
            json_object_set(meta, "finalizers", fin);
        changed = mark_deleting(obj) || changed;
        json_decref(fin);
        if (changed && (error = write_back(api, k, key, obj, cur->mod_rev, o->dry_run)) < 0)
            goto fail;
        *out = obj;
        return 0;
    }
    json_decref(fin);
    if ((error = sw_rest_remove(api, k, key, obj, cur->mod_rev, o->dry_run)) < 0)
        goto fail;
    *status = 200;
    if (k->return_deleted) {
        *out = obj;
    } else {
        *out = removed_status(k, obj);
        json_decref(obj);
    }
    return 0;
fail:
    json_decref(obj);
    return error;
}

int sw_rest_delete_one(sw_api *api, const sw_kind *k, const char *ns, const char *name,
                       const sw_delete_opts *o, json_t **out, int *status)
{
    char key[SW_API_KEY_MAX];
    int error = 0;
    bool final = false;
    sw_api_key(k, ns, name, key, sizeof(key));
    /* a write in between is a store conflict: go again on the new version (preconditions are
     * checked against each version read) */
    for (int attempt = 0; attempt < CAS_RETRIES; attempt++) {
        sw_kv cur = {0};
        error = sw_store_get(api->store, key, &cur);
        if (error == 0)
            error = delete_at(api, k, key, name, &cur, o, out, status, &final);
        sw_kv_dispose(&cur);
        if (error != SW_ECONFLICT || final)
            break;
    }
    if (error == SW_ECONFLICT && !final) {
        char res[160];
        sw_error_set(SW_ECONFLICT,
                     "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                     "please apply your changes to the latest version and try again",
                     sw_rest_resource(k, res, sizeof(res)), name);
    }
    return error;
}

/* What an invalid DeleteOptions is reported as: `DeleteOptions.meta.k8s.io "" is invalid`. */
static const sw_kind delete_options_kind = {
    .group = "meta.k8s.io", .version = "v1", .kind = "DeleteOptions", .plural = "deleteoptions"};

static void fail_opts(sw_response *resp, int error, const sw_route *rt)
{
    if (error == SW_EINVALID)
        sw_response_error(resp, error, sw_error_msg(), &delete_options_kind, "");
    else
        sw_rest_fail(resp, error, rt);
}

void sw_rest_delete(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    sw_delete_opts o;
    json_t *out = NULL;
    int status = 200;
    int error = sw_rest_delete_opts(req, &o);
    if (error < 0)
        fail_opts(resp, error, rt);
    else if ((error = sw_rest_delete_one(api, rt->kind, rt->ns, rt->name, &o, &out, &status)) < 0)
        sw_rest_fail(resp, error, rt);
    else if (sw_str_eq(sw_json_str_at(out, "kind"), "Status"))
        sw_response_json(resp, status, out);
    else
        sw_rest_reply_object(resp, req, rt->kind, status, out);
    json_decref(out);
}

int sw_rest_delete_obj(sw_api *api, const sw_kind *k, const char *ns, const char *name,
                       bool dry_run)
{
    sw_delete_opts o;
    opts_none(&o);
    o.dry_run = dry_run;
    json_t *out = NULL;
    int status;
    int error = sw_rest_delete_one(api, k, ns, name, &o, &out, &status);
    json_decref(out);
    return error;
}

/* ---- deletecollection ---- */

/* The names of the matching objects under prefix, listed at one revision. */
static int matching_names(sw_api *api, const sw_kind *k, const char *prefix, sw_selector *labels,
                          sw_selector *fields, json_t *names)
{
    sw_kv_list l = {0};
    sw_store_list_opts lo = {.prefix = prefix};
    int error = sw_store_list(api->store, &lo, &l);
    for (size_t i = 0; error == 0 && i < l.count; i++) {
        json_t *obj = NULL;
        error =
            sw_api_decode(api, k, l.items[i].value, l.items[i].value_len, l.items[i].mod_rev, &obj);
        if (error == 0 && sw_selector_match_labels(labels, sw_json_at(obj, "metadata.labels")) &&
            sw_selector_match_fields(fields, obj))
            json_array_append_new(names, json_pack("[s,s]",
                                                   sw_json_str_at(obj, "metadata.namespace") ?: "",
                                                   sw_json_str_at(obj, "metadata.name") ?: ""));
        json_decref(obj);
    }
    sw_kv_list_dispose(&l);
    return error;
}

void sw_rest_delete_collection(sw_api *api, const sw_request *req, const sw_route *rt,
                               sw_response *resp)
{
    sw_selector *labels = NULL, *fields = NULL;
    sw_delete_opts o;
    char prefix[SW_API_KEY_MAX];
    json_t *names = json_array(), *item;
    sw_buf failures = SW_BUF_INIT(8192);
    size_t failed = 0, i;
    int first = 0;
    int error = sw_rest_parse_selectors(rt->kind, req, &labels, &fields);
    if (error == 0 && (error = sw_rest_delete_opts(req, &o)) < 0) {
        fail_opts(resp, error, rt);
        goto done;
    }
    sw_api_key(rt->kind, rt->has_ns ? rt->ns : NULL, NULL, prefix, sizeof(prefix));
    if (error == 0)
        error = matching_names(api, rt->kind, prefix, labels, fields, names);
    json_array_foreach(error == 0 ? names : NULL, i, item)
    {
        const char *ns = json_string_value(json_array_get(item, 0));
        const char *name = json_string_value(json_array_get(item, 1));
        json_t *out = NULL;
        int status, e = sw_rest_delete_one(api, rt->kind, ns, name, &o, &out, &status);
        json_decref(out);
        if (e == 0 || e == SW_ENOTFOUND)
            continue;
        if (!failed++)
            first = e;
        if (failed <= FAILURES_SHOWN)
            sw_buf_printf(&failures, "%s%s%s%s: %s", failed > 1 ? "; " : "", *ns ? ns : "",
                          *ns ? "/" : "", name, sw_error_msg());
    }
    char res[160];
    if (error == 0 && failed)
        error = sw_error_set(first, "%zu of %zu %s could not be deleted: %s%s", failed,
                             json_array_size(names), sw_rest_resource(rt->kind, res, sizeof(res)),
                             sw_buf_cstr(&failures), failed > FAILURES_SHOWN ? "; ..." : "");
    if (error < 0) {
        sw_response_error(resp, error, sw_error_msg(), rt->kind, NULL);
    } else {
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s}", "kind", "Status", "apiVersion", "v1",
                               "metadata", "status", "Success");
        sw_response_json(resp, 200, st);
        json_decref(st);
    }
done:
    sw_buf_dispose(&failures);
    json_decref(names);
    sw_selector_free(labels);
    sw_selector_free(fields);
}
