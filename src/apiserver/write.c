/* write: the mutating REST verbs but delete (delete.c) — create (generateName, dryRun), update
 * (409 on a stale resourceVersion; finalizer rules of an object being deleted), patch (merge,
 * JSON, strategic, server-side apply as upsert+merge) — and strict field validation. */
#include "apiserver/rest.h"

#include "meta/names.h"
#include "meta/ownerref.h"
#include "apiserver/object.h"
#include "meta/patch.h"
#include "meta/schema.h"
#include "apiserver/selector.h"
#include "kinds/crd.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

#define CAS_RETRIES 8

static bool ctype_is(const sw_request *req, const char *type)
{
    const char *ct = req->content_type;
    size_t n = strlen(type);
    return ct && !strncmp(ct, type, n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* fieldValidation: Strict rejects unknown and duplicate fields; Warn (the default) warns. */
static int field_validation(const sw_request *req)
{
    const char *fv = sw_req_query(req, "fieldValidation");
    if (fv && !strcmp(fv, "Strict"))
        return 2;
    if (fv && !strcmp(fv, "Ignore"))
        return 0;
    return 1;
}

/* A custom resource: its CRD's schema prunes (unknown fields: Strict fails, Warn warns), drops
 * nulls and defaults, in place of a strict schema. */
static int check_cr_fields(const sw_request *req, const sw_kind *k, json_t *obj, sw_response *resp)
{
    int mode = field_validation(req);
    json_t *unknown = json_array();
    sw_cr_normalize(k, obj, unknown);
    sw_buf list = SW_BUF_INIT(64 * 1024); /* the message keeps its first kilobyte */
    size_t i;
    json_t *u;
    json_array_foreach(unknown, i, u)
    {
        if (i < 10)
            sw_buf_printf(&list, "%sunknown field \"%s\"", i ? ", " : "", json_string_value(u));
    }
    int error = 0;
    if (json_array_size(unknown) && mode == 2)
        error = sw_error_set(SW_EBADREQUEST,
                             "%s in version \"%s\" cannot be handled as a %s: strict decoding "
                             "error: %s",
                             k->kind, k->version, k->kind, sw_buf_cstr(&list));
    else if (json_array_size(unknown) && mode == 1 && resp)
        sw_strlcpy(resp->warning, sw_buf_cstr(&list), sizeof(resp->warning));
    sw_buf_dispose(&list);
    json_decref(unknown);
    return error;
}

static int check_fields(const sw_request *req, const sw_kind *k, json_t *obj, sw_response *resp)
{
    if (k->dynamic)
        return check_cr_fields(req, k, obj, resp);
    int mode = field_validation(req);
    static const char strict_prefix[] = "strict decoding error: ";
    int error = sw_schema_check(sw_kind_schema(k), obj);
    if (error < 0 && mode != 2 && sw_str_prefix(sw_error_msg(), strict_prefix)) {
        /* Unknown fields: Strict fails; Warn warns; both Warn and Ignore drop them. */
        if (mode == 1 && resp)
            sw_strlcpy(resp->warning, sw_error_msg() + strlen(strict_prefix),
                       sizeof(resp->warning));
        sw_schema_prune(sw_kind_schema(k), obj);
        return 0;
    }
    return error;
}

static int parse_body(const sw_request *req, sw_response *resp, json_t **out)
{
    if (req->content_type && !ctype_is(req, "application/json") &&
        !ctype_is(req, "application/merge-patch+json") &&
        !ctype_is(req, "application/json-patch+json") &&
        !ctype_is(req, "application/strategic-merge-patch+json") &&
        !ctype_is(req, "application/apply-patch+yaml") && !ctype_is(req, "*/*"))
        return sw_error_set(SW_EUNSUPPORTED,
                            "the body of the request was in an unknown format - accepted media "
                            "types include: application/json, application/merge-patch+json, "
                            "application/json-patch+json, application/strategic-merge-patch+json");
    if (!req->body_len)
        return sw_error_set(SW_EBADREQUEST, "the request body is empty");
    int mode = field_validation(req);
    if (mode != 1 || !resp)
        return sw_json_parse(req->body, req->body_len, SW_JSON_MAX_DEPTH,
                             mode == 2 ? SW_JSON_STRICT_DUPLICATES : 0, out);
    /* Warn, the default: a duplicate key is taken (the last value wins) with a Warning */
    char dup[200];
    int error =
        sw_json_parse_warn(req->body, req->body_len, SW_JSON_MAX_DEPTH, out, dup, sizeof(dup));
    if (error == 0 && dup[0])
        snprintf(resp->warning, sizeof(resp->warning), "duplicate field: %s", dup);
    return error;
}

/* apiVersion/kind must match the URL; absent ones are filled in. */
static int check_type(const sw_kind *k, json_t *obj)
{
    char av[400];
    sw_kind_api_version(k, av, sizeof(av));
    if (!json_is_object(obj))
        return sw_error_set(SW_EBADREQUEST, "the request body must be a JSON object");
    const char *kind = sw_json_str_at(obj, "kind");
    const char *ver = sw_json_str_at(obj, "apiVersion");
    static const char *const typed[] = {"kind", "apiVersion"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(obj, typed[i]);
        if (v && !json_is_string(v) && !json_is_null(v))
            return sw_error_set(SW_EBADREQUEST,
                                "%s in the request body must be a string, not a JSON %s", typed[i],
                                sw_json_type_name(v));
    }
    if (kind && *kind && strcmp(kind, k->kind))
        return sw_error_set(SW_EBADREQUEST,
                            "the kind in the request body (%.64s) does not match the resource "
                            "(%s, kind %s)",
                            kind, k->plural, k->kind);
    if (ver && *ver && strcmp(ver, av))
        return sw_error_set(SW_EBADREQUEST,
                            "the API version in the data (%.64s) does not match the expected API "
                            "version (%s)",
                            ver, av);
    json_object_set_new(obj, "kind", json_string(k->kind));
    json_object_set_new(obj, "apiVersion", json_string(av));
    json_t *meta = json_object_get(obj, "metadata");
    if (meta && !json_is_object(meta))
        return sw_error_set(SW_EBADREQUEST, "metadata must be an object");
    return 0;
}

/* Namespace in the body must match the URL's; it is filled in when absent. */
static int check_namespace(const sw_route *rt, json_t *obj)
{
    if (!rt->kind->namespaced)
        return 0;
    json_t *meta = sw_json_obj_path(obj, "metadata");
    const char *ns = sw_json_str_at(meta, "namespace");
    if (ns && *ns && strcmp(ns, rt->ns))
        return sw_error_set(SW_EBADREQUEST,
                            "the namespace of the provided object does not match the namespace "
                            "sent on the request");
    json_object_set_new(meta, "namespace", json_string(rt->ns));
    return 0;
}

static int validate_object(sw_api *api, const sw_kind *k, const json_t *obj, const json_t *old)
{
    const json_t *meta = json_object_get(obj, "metadata");
    int error = sw_names_check_meta(meta);
    if (error == 0)
        error = sw_ownerref_validate(json_object_get(meta, "ownerReferences"));
    if (error == 0)
        error = sw_finalizers_check_gc(json_object_get(meta, "finalizers"));
    /* once deletion began, finalizers may go but none may come */
    if (error == 0 && old && sw_json_at(old, "metadata.deletionTimestamp"))
        error = sw_finalizers_check_no_new(json_object_get(meta, "finalizers"),
                                           sw_json_at(old, "metadata.finalizers"));
    if (error == 0 && k->validate)
        error = k->validate(&api->kctx, obj, old);
    if (error == 0 && k->dynamic)
        error = sw_cr_validate(k, obj, old);
    if (error == SW_EBADREQUEST)
        error = SW_EINVALID;
    return error;
}

static void conflict_message(const sw_kind *k, const char *name)
{
    char res[160];
    sw_error_set(SW_ECONFLICT,
                 "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please "
                 "apply your changes to the latest version and try again",
                 sw_rest_resource(k, res, sizeof(res)), name);
}

/* Create path shared by POST and server-side apply of an absent object. */
/* The bytes a write stored, kept so the reply is rendered from them exactly as a later GET
 * would be, instead of encoding the object a second time. */
typedef struct stored {
    char *text; /* sw_malloc'd; NULL when nothing was written (dry run, no change, delete) */
    size_t len;
    int64_t rev;
    char key[SW_API_KEY_MAX];
} stored;

/* Stores val (taken) and its revision in st when the caller wants them, else frees val. */
static void keep_stored(stored *st, const char *key, char *val, size_t len, int64_t rev)
{
    if (!st || !rev) {
        sw_free(val);
        return;
    }
    sw_free(st->text);
    st->text = val;
    st->len = len;
    st->rev = rev;
    sw_strlcpy(st->key, key, sizeof(st->key));
}

/* The kind's admission, with read access to other objects. */
static int admit(sw_api *api, const sw_kind *k, json_t *obj)
{
    sw_objects *o = sw_api_objects_new(api);
    int error = k->admit(&api->kctx, o, obj);
    sw_api_objects_free(o);
    return error;
}

/* Replies with the stored text when there is one (and no Table was asked for), else with obj. */
static void reply_stored(sw_api *api, sw_response *resp, const sw_request *req, const sw_kind *k,
                         int status, const json_t *obj, stored *st)
{
    if (st->text && !sw_table_wanted(req)) {
        sw_buf_clear(&resp->body);
        sw_buf_reserve(&resp->body, st->len + 64);
        if (sw_api_render_written(api, k, st->key, st->text, st->len, st->rev, &resp->body) == 0) {
            sw_buf_putc(&resp->body, '\n');
            resp->status = status;
            resp->content_type = "application/json";
            return;
        }
        sw_buf_clear(&resp->body);
    }
    sw_rest_reply_object(resp, req, k, status, obj);
}

static int create_object(sw_api *api, const sw_request *req, const sw_route *rt, json_t *obj,
                         stored *st)
{
    const sw_kind *k = rt->kind;
    json_t *meta = sw_json_obj_path(obj, "metadata");
    const char *name = sw_json_str_at(meta, "name");
    const char *gen = sw_json_str_at(meta, "generateName");
    char genbuf[64], key[600];
    int64_t rev = 0;
    int error = 0;
    if ((!name || !*name) && gen && *gen) {
        sw_names_generate(gen, genbuf, sizeof(genbuf));
        json_object_set_new(meta, "name", json_string(genbuf));
        name = genbuf;
    }
    error = sw_object_check_name(k, name);
    if (error == 0 && k->dynamic)
        error = sw_cr_check_create(k, name);
    if (error == 0 && k->namespaced)
        error = sw_rest_check_namespace(api, rt->ns, true);
    if (error == SW_EFORBIDDEN) {
        /* as the NamespaceLifecycle admission plugin words it */
        char res[160], msg[600];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        return sw_error_set(SW_EFORBIDDEN, "%s \"%s\" is forbidden: %s",
                            sw_rest_resource(k, res, sizeof(res)), name, msg);
    }
    if (error < 0)
        return error;
    sw_object_init_meta(k, obj);
    if (k->has_status)
        json_object_del(obj, "status");
    if (k->prepare_create && (error = k->prepare_create(&api->kctx, obj)) < 0)
        return error;
    if (k->admit && (error = admit(api, k, obj)) < 0)
        return error;
    if ((error = validate_object(api, k, obj, NULL)) < 0)
        return error;
    name = sw_json_str_at(obj, "metadata.name");
    sw_api_key(k, rt->ns, name, key, sizeof(key));
    if (!sw_rest_dry_run(req)) {
        size_t len;
        char *val = sw_object_encode(obj, &len);
        error = sw_store_create(api->store, key, val, len, &rev);
        keep_stored(st, key, val, error == 0 ? len : 0, error == 0 ? rev : 0);
    }
    if (error == SW_EEXISTS) {
        char res[160];
        return sw_error_set(SW_EEXISTS, "%s \"%s\" already exists",
                            sw_rest_resource(k, res, sizeof(res)), name);
    }
    if (error < 0)
        return error;
    if (rev)
        sw_object_set_rv(obj, rev);
    if (rev && k->committed)
        k->committed(&api->kctx, obj);
    sw_object_decorate(api, k, obj);
    return 0;
}

/* The 403 for a create into a terminating namespace, with the cause controllers test for
 * (apierrors.HasStatusCause(err, NamespaceTerminatingCause)). */
static void terminating_reply(sw_response *resp, const sw_route *rt, const char *name)
{
    char msg[300];
    json_t *st = sw_status_failure(SW_EFORBIDDEN, sw_error_msg(), rt->kind, name);
    snprintf(msg, sizeof(msg), "namespace %s is being terminated", rt->ns);
    json_t *details = json_object_get(st, "details");
    if (!details) {
        details = json_object();
        json_object_set_new(st, "details", details);
    }
    json_object_set_new(details, "causes",
                        json_pack("[{s:s, s:s, s:s}]", "reason", "NamespaceTerminating", "message",
                                  msg, "field", "metadata.namespace"));
    sw_response_json(resp, 403, st);
    json_decref(st);
}

void sw_rest_create(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    json_t *obj = NULL;
    stored st = {0};
    int error = sw_rest_read_body(req, rt, resp, &obj);
    if (error == 0)
        error = create_object(api, req, rt, obj, &st);
    if (error == SW_EFORBIDDEN && rt->kind->namespaced &&
        sw_rest_namespace_terminating(api, rt->ns)) {
        terminating_reply(resp, rt, obj ? sw_json_str_at(obj, "metadata.name") : NULL);
    } else if (error < 0) {
        const char *name = obj ? sw_json_str_at(obj, "metadata.name") : NULL;
        sw_response_error(resp, error, sw_error_msg(), rt->kind, name);
    } else {
        reply_stored(api, resp, req, rt->kind, 201, obj, &st);
    }
    sw_free(st.text);
    json_decref(obj);
}

static bool finalizers_empty(const json_t *obj)
{
    return json_array_size(sw_json_at(obj, "metadata.finalizers")) == 0;
}

/* Turns the decoded current object `old` plus the client's `obj` into the stored result.
 * status: a /status write (only .status is taken from obj). */
static int merge_update(sw_api *api, const sw_kind *k, json_t **objp, const json_t *old,
                        bool status, const char *sub)
{
    json_t *obj = *objp;
    int error = 0;
    if (status) {
        json_t *next = json_deep_copy(old);
        json_t *st = json_object_get(obj, "status");
        if (st)
            json_object_set(next, "status", st);
        else
            json_object_del(next, "status");
        json_decref(obj);
        *objp = obj = next;
        if (k->prepare_status_update)
            error = k->prepare_status_update(&api->kctx, obj, old);
        return error;
    }
    /* the uid names the object: an update that carries another is refused (an empty one is
     * filled in), so a client can make a write conditional on the object not being re-created */
    const char *uid = sw_json_str_at(obj, "metadata.uid");
    if (uid && *uid && !sw_str_eq(uid, sw_json_str_at(old, "metadata.uid")))
        return sw_names_invalid(SW_EINVALID, "metadata.uid", uid, "field is immutable");
    /* deletionTimestamp is the server's: never set through an update, silently kept once set */
    const char *dts = sw_json_str_at(obj, "metadata.deletionTimestamp");
    if (dts && !sw_json_at(old, "metadata.deletionTimestamp"))
        return sw_names_invalid(SW_EINVALID, "metadata.deletionTimestamp", dts,
                                "field is immutable");
    sw_object_keep_meta(k, obj, old);
    if (k->spec_subresource && !sw_str_eq(sub, k->spec_subresource)) {
        json_t *spec = json_object_get(old, "spec");
        if (spec)
            json_object_set(obj, "spec", spec);
        else
            json_object_del(obj, "spec");
    }
    if (k->has_status) {
        json_t *sent = json_incref(json_object_get(obj, "status"));
        json_t *st = json_object_get(old, "status");
        /* a copy: admit and prepare_update may change it (a CRD's conditions), and an update
         * that only changes status there must not read as "nothing changed" */
        if (st)
            json_object_set_new(obj, "status", json_deep_copy(st));
        else
            json_object_del(obj, "status");
        if (k->carry_status)
            k->carry_status(obj, sent, old);
        json_decref(sent);
    }
    if (k->prepare_update && (error = k->prepare_update(&api->kctx, obj, old)) < 0)
        return error;
    if (!status && k->admit && (error = admit(api, k, obj)) < 0)
        return error;
    sw_object_bump_generation(k, obj, old);
    return 0;
}

/* The update pipeline on a fetched current version; *objp is replaced by the result. With
 * recent (cur is the store's recent copy, maybe stale) only a write whose compare succeeds is an
 * answer: anything else fails (SW_ECONFLICT where it would not write) and the caller reads the
 * current version and runs the pipeline again. */
static int update_object(sw_api *api, const sw_request *req, const sw_route *rt, json_t **objp,
                         const sw_kv *cur, bool status, stored *st, bool recent)
{
    const sw_kind *k = rt->kind;
    json_t *old = NULL;
    char key[SW_API_KEY_MAX];
    int64_t rev = 0;
    int error = sw_api_decode(api, k, cur->value, cur->value_len, cur->mod_rev, &old);
    if (error < 0)
        return error;
    int64_t want = sw_object_rv(*objp), parsed;
    const char *rvs = sw_json_str_at(*objp, "metadata.resourceVersion");
    if (rvs && *rvs && (sw_str_to_i64(rvs, &parsed) < 0 || parsed < 0)) {
        error = sw_error_set(SW_EBADREQUEST,
                             "metadata.resourceVersion: Invalid value: \"%.64s\": must be an "
                             "unsigned integer",
                             rvs);
        goto done;
    }
    if (want && want != cur->mod_rev) {
        conflict_message(k, rt->name);
        error = SW_ECONFLICT;
        goto done;
    }
    if ((error = merge_update(api, k, objp, old, status, rt->sub)) < 0)
        goto done;
    if ((error = validate_object(api, k, *objp, old)) < 0)
        goto done;
    sw_object_set_rv(*objp, cur->mod_rev);
    sw_object_decorate(api, k, *objp);
    sw_api_key(k, rt->ns, rt->name, key, sizeof(key));
    /* an update that leaves an object being deleted without finalizers deletes it */
    if (sw_json_at(*objp, "metadata.deletionTimestamp") && finalizers_empty(*objp) &&
        (!k->removable || k->removable(*objp))) {
        error = recent ? SW_ECONFLICT
                       : sw_rest_remove(api, k, key, *objp, cur->mod_rev, sw_rest_dry_run(req));
        goto done;
    }
    if (json_equal(*objp, old) || sw_rest_dry_run(req)) {
        error = recent ? SW_ECONFLICT : 0; /* nothing changed: no write, same resourceVersion */
        goto done;
    }
    size_t len;
    char *val = sw_object_encode(*objp, &len);
    error = sw_store_update(api->store, key, val, len, cur->mod_rev, &rev);
    keep_stored(st, key, val, error == 0 ? len : 0, error == 0 ? rev : 0);
    if (error == 0)
        sw_object_set_rv(*objp, rev);
    if (error == 0 && k->committed)
        k->committed(&api->kctx, *objp);
done:
    json_decref(old);
    return error;
}

static int fetch(sw_api *api, const sw_route *rt, sw_kv *kv)
{
    char key[SW_API_KEY_MAX];
    sw_api_key(rt->kind, rt->ns, rt->name, key, sizeof(key));
    return sw_store_get(api->store, key, kv);
}

/* The version an update starts from: with *recent, the store's recent copy if it keeps one
 * (*recent stays true: see update_object), else, and without, a read (*recent = false). An
 * update then costs one store round trip, not two, as kube-apiserver's that starts from its
 * watch cache. A dry run always reads. */
static int fetch_current(sw_api *api, const sw_route *rt, sw_kv *kv, bool *recent)
{
    char key[SW_API_KEY_MAX];
    bool verified = true;
    sw_api_key(rt->kind, rt->ns, rt->name, key, sizeof(key));
    int error = *recent ? sw_store_get_recent(api->store, key, kv, &verified)
                        : sw_store_get(api->store, key, kv);
    *recent = !verified;
    return error;
}

void sw_rest_update(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    json_t *body = NULL, *obj = NULL;
    stored st = {0};
    bool status = !strcmp(rt->sub, "status");
    int error = parse_body(req, resp, &body);
    if (error == 0)
        error = check_type(rt->kind, body);
    if (error == 0)
        error = check_fields(req, rt->kind, body, resp);
    if (error == 0)
        error = check_namespace(rt, body);
    const char *bname = body ? sw_json_str_at(body, "metadata.name") : NULL;
    if (error == 0 && (!bname || strcmp(bname, rt->name)))
        error = sw_error_set(SW_EBADREQUEST,
                             "the name of the object (%.253s) does not match the name on the URL "
                             "(%s)",
                             bname ? bname : "", rt->name);
    bool try_recent = !sw_rest_dry_run(req);
    for (int attempt = 0; error == 0 && attempt < CAS_RETRIES; attempt++) {
        sw_kv cur = {0};
        bool recent = try_recent;
        json_decref(obj);
        /* update_object consumes its input; only a retry needs the body again */
        obj = try_recent || (attempt + 1 < CAS_RETRIES && !sw_object_rv(body))
                  ? json_deep_copy(body)
                  : json_incref(body);
        error = fetch_current(api, rt, &cur, &recent);
        if (error == 0)
            error = update_object(api, req, rt, &obj, &cur, status, &st, recent);
        sw_kv_dispose(&cur);
        try_recent = false;
        if (recent && error < 0) {
            attempt--; /* the recent copy was not current: read it, and that is the attempt */
            error = 0;
            continue;
        }
        if (error != SW_ECONFLICT || sw_object_rv(body))
            break;
        error = 0;
    }
    if (error == SW_ECONFLICT)
        conflict_message(rt->kind, rt->name);
    if (error < 0)
        sw_rest_fail(resp, error, rt);
    else
        reply_stored(api, resp, req, rt->kind, 200, obj, &st);
    sw_free(st.text);
    json_decref(body);
    json_decref(obj);
}

static int apply_patch(const sw_request *req, const sw_kind *k, const json_t *cur,
                       const json_t *patch, json_t **out)
{
    if (ctype_is(req, "application/json-patch+json"))
        return sw_patch_json(cur, patch, out);
    if (!json_is_object(patch))
        return sw_error_set(SW_EBADREQUEST, "a merge or strategic patch must be a JSON object");
    if (ctype_is(req, "application/strategic-merge-patch+json") && k->dynamic)
        return sw_error_set(SW_EUNSUPPORTED,
                            "the body of the request was in an unknown format - accepted media "
                            "types include: application/json-patch+json, "
                            "application/merge-patch+json, application/apply-patch+yaml");
    if (ctype_is(req, "application/strategic-merge-patch+json"))
        return sw_patch_strategic(cur, patch, k->smp ? k->smp() : NULL, out);
    return sw_patch_merge(cur, patch, out);
}

/* One patch attempt; *recent as for fetch_current (on return: the attempt started from the
 * store's recent copy, so its failure is no answer). */
static int patch_once(sw_api *api, const sw_request *req, const sw_route *rt, const json_t *patch,
                      json_t **result, sw_response *resp, stored *st, bool *recent)
{
    sw_kv cur = {0};
    json_t *old = NULL;
    int error = fetch_current(api, rt, &cur, recent);
    if (error == SW_ENOTFOUND && ctype_is(req, "application/apply-patch+yaml")) {
        /* Server-side apply of an absent object creates it, checked as a POST body is. */
        *result = json_deep_copy(patch);
        error = check_type(rt->kind, *result);
        if (error == 0)
            error = check_fields(req, rt->kind, *result, resp);
        if (error == 0)
            error = check_namespace(rt, *result);
        if (error == 0)
            error = create_object(api, req, rt, *result, st);
        if (error == 0)
            resp->status = 201;
        return error;
    }
    if (error == 0)
        error = sw_api_decode(api, rt->kind, cur.value, cur.value_len, cur.mod_rev, &old);
    if (error == 0)
        error = apply_patch(req, rt->kind, old, patch, result);
    if (error == 0)
        error = check_type(rt->kind, *result);
    if (error == 0)
        error = check_fields(req, rt->kind, *result, resp);
    if (error == 0 && !sw_str_eq(sw_json_str_at(*result, "metadata.name"), rt->name))
        error = sw_error_set(SW_EBADREQUEST, "metadata.name: the name of a patched object cannot "
                                             "change");
    if (error == 0)
        error = check_namespace(rt, *result);
    if (error == 0)
        error = update_object(api, req, rt, result, &cur, !strcmp(rt->sub, "status"), st, *recent);
    json_decref(old);
    sw_kv_dispose(&cur);
    return error;
}

void sw_rest_patch(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    json_t *patch = NULL, *result = NULL;
    stored st = {0};
    int error = 0;
    if (!req->content_type || (!ctype_is(req, "application/json-patch+json") &&
                               !ctype_is(req, "application/merge-patch+json") &&
                               !ctype_is(req, "application/strategic-merge-patch+json") &&
                               !ctype_is(req, "application/apply-patch+yaml")))
        error = sw_error_set(SW_EUNSUPPORTED,
                             "the body of the request was in an unknown format - accepted media "
                             "types include: application/json-patch+json, "
                             "application/merge-patch+json, application/apply-patch+yaml, "
                             "application/strategic-merge-patch+json");
    if (error == 0)
        error = parse_body(req, resp, &patch);
    bool pinned =
        error == 0 && json_is_object(patch) && sw_json_str_at(patch, "metadata.resourceVersion");
    resp->status = 200;
    bool try_recent = !sw_rest_dry_run(req);
    for (int attempt = 0; error == 0 && attempt < CAS_RETRIES; attempt++) {
        bool recent = try_recent;
        json_decref(result);
        result = NULL;
        error = patch_once(api, req, rt, patch, &result, resp, &st, &recent);
        try_recent = false;
        if (recent && error < 0) {
            attempt--; /* as in sw_rest_update */
            error = 0;
            continue;
        }
        if (error != SW_ECONFLICT || pinned)
            break;
        error = 0;
    }
    if (error == SW_ECONFLICT)
        conflict_message(rt->kind, rt->name);
    if (error == SW_EBADREQUEST && sw_str_prefix(sw_error_msg(), "json patch"))
        error = SW_EINVALID;
    if (error < 0)
        sw_rest_fail(resp, error, rt);
    else
        reply_stored(api, resp, req, rt->kind, resp->status, result, &st);
    sw_free(st.text);
    json_decref(patch);
    json_decref(result);
}

/* ---- entry points for virtual kinds (objects.c) ---- */

static const char *dry_run_query(void *conn, const char *key)
{
    return conn && !strcmp(key, "dryRun") ? "All" : NULL;
}

static void internal_request(sw_request *req, bool dry_run)
{
    memset(req, 0, sizeof(*req));
    req->method = "POST";
    req->path = "";
    req->query = dry_run_query;
    req->conn = dry_run ? (void *)1 : NULL;
}

static void route_of(const sw_kind *k, const json_t *obj, sw_route *rt)
{
    memset(rt, 0, sizeof(*rt));
    rt->kind = k;
    rt->has_ns = k->namespaced;
    rt->has_name = true;
    sw_strlcpy(rt->ns, sw_json_str_at(obj, "metadata.namespace") ?: "", sizeof(rt->ns));
    sw_strlcpy(rt->name, sw_json_str_at(obj, "metadata.name") ?: "", sizeof(rt->name));
}

int sw_rest_create_obj(sw_api *api, const sw_kind *k, json_t *obj, bool dry_run)
{
    sw_request req;
    sw_route rt;
    internal_request(&req, dry_run);
    route_of(k, obj, &rt);
    /* Server-side writers (build details, instantiate, webhooks) carry client input too: the
     * same schema check as a request body (wrong types fail, unknown fields are dropped). */
    int error = check_type(k, obj);
    if (error == 0)
        error = check_fields(&req, k, obj, NULL);
    return error < 0 ? error : create_object(api, &req, &rt, obj, NULL);
}

int sw_rest_update_obj(sw_api *api, const sw_kind *k, json_t **objp, bool status, bool dry_run)
{
    sw_request req;
    sw_route rt;
    sw_kv cur = {0};
    internal_request(&req, dry_run);
    route_of(k, *objp, &rt);
    int error = check_type(k, *objp);
    if (error == 0)
        error = check_fields(&req, k, *objp, NULL);
    if (error == 0)
        error = fetch(api, &rt, &cur);
    if (error == 0)
        error = update_object(api, &req, &rt, objp, &cur, status, NULL, false);
    if (error == SW_ECONFLICT)
        conflict_message(k, rt.name);
    sw_kv_dispose(&cur);
    return error;
}

int sw_rest_read_body(const sw_request *req, const sw_route *rt, sw_response *resp, json_t **out)
{
    json_t *obj = NULL;
    int error = parse_body(req, resp, &obj);
    if (error == 0)
        error = check_type(rt->kind, obj);
    if (error == 0)
        error = check_fields(req, rt->kind, obj, resp);
    if (error == 0)
        error = check_namespace(rt, obj);
    if (error < 0)
        json_decref(obj);
    else
        *out = obj;
    return error;
}
