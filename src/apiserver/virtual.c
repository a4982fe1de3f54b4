/* virtual: serves the virtual kinds (imagestreamtags, imagestreamimages, imagestreamimports,
 * imagestreammappings) through their sw_virtual_ops, and implements sw_objects — the access to
 * stored objects those handlers get — on top of the generic REST pipelines. */
#include "apiserver/rest.h"

#include "apiserver/object.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

typedef struct api_objects {
    sw_objects base;
    sw_api *api;
} api_objects;

static sw_api *api_of(sw_objects *o)
{
    return ((api_objects *)o)->api;
}

static int obj_get(sw_objects *o, const sw_kind *k, const char *ns, const char *name, json_t **out)
{
    char key[SW_API_KEY_MAX];
    sw_kv kv = {0};
    sw_api_key(k, ns, name, key, sizeof(key));
    int error = sw_store_get(api_of(o)->store, key, &kv);
    if (error == 0)
        error = sw_api_decode(api_of(o), k, kv.value, kv.value_len, kv.mod_rev, out);
    else if (error == SW_ENOTFOUND) {
        char res[160];
        sw_error_set(SW_ENOTFOUND, "%s \"%s\" not found", sw_rest_resource(k, res, sizeof(res)),
                     name);
    }
    sw_kv_dispose(&kv);
    return error;
}

static int obj_list(sw_objects *o, const sw_kind *k, const char *ns, json_t **items)
{
    char prefix[SW_API_KEY_MAX];
    sw_kv_list l = {0};
    sw_api_key(k, ns, NULL, prefix, sizeof(prefix));
    sw_store_list_opts opts = {.prefix = prefix};
    int error = sw_store_list(api_of(o)->store, &opts, &l);
    *items = json_array();
    for (size_t i = 0; error == 0 && i < l.count; i++) {
        json_t *obj = NULL;
        error = sw_api_decode(api_of(o), k, l.items[i].value, l.items[i].value_len,
                              l.items[i].mod_rev, &obj);
        if (error == 0)
            json_array_append_new(*items, obj);
    }
    sw_kv_list_dispose(&l);
    return error;
}

static int obj_write(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out, int mode)
{
    json_t *copy = json_deep_copy(obj);
    int error = mode == 0 ? sw_rest_create_obj(api_of(o), k, copy, o->dry_run)
                          : sw_rest_update_obj(api_of(o), k, &copy, mode == 2, o->dry_run);
    if (error < 0 || !out)
        json_decref(copy);
    else
        *out = copy;
    return error;
}

static int obj_create(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out)
{
    return obj_write(o, k, obj, out, 0);
}

static int obj_update(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out)
{
    return obj_write(o, k, obj, out, 1);
}

static int obj_update_status(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out)
{
    return obj_write(o, k, obj, out, 2);
}

static int obj_del(sw_objects *o, const sw_kind *k, const char *ns, const char *name)
{
    return sw_rest_delete_obj(api_of(o), k, ns, name, o->dry_run);
}

static sw_objects *obj_hold(sw_objects *o);
static void obj_release(sw_objects *o);

static void objects_init(api_objects *ao, sw_api *api, bool dry_run)
{
    ao->base.hold = obj_hold;
    ao->base.release = obj_release;
    ao->api = api;
    ao->base.get = obj_get;
    ao->base.list = obj_list;
    ao->base.create = obj_create;
    ao->base.update = obj_update;
    ao->base.update_status = obj_update_status;
    ao->base.del = obj_del;
    ao->base.dry_run = dry_run;
}

static void reply_list(sw_response *resp, const sw_request *req, const sw_kind *k, json_t *items,
                       sw_api *api)
{
    char av[400], kind[128], rv[24];
    snprintf(rv, sizeof(rv), "%lld", (long long)sw_store_current_revision(api->store));
    json_t *out;
    if (sw_table_wanted(req)) {
        out = sw_table_build(k, items, rv, NULL, true);
    } else {
        snprintf(kind, sizeof(kind), "%sList", k->kind);
        out = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", kind, "apiVersion",
                        sw_kind_api_version(k, av, sizeof(av)), "metadata", "resourceVersion", rv,
                        "items", items);
    }
    sw_response_json(resp, 200, out);
    json_decref(out);
}

void sw_rest_virtual(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    const sw_virtual_ops *v = rt->kind->virt;
    const char *m = req->method;
    const char *ns = rt->has_ns ? rt->ns : NULL;
    api_objects ao;
    json_t *body = NULL, *out = NULL;
    int error = SW_EMETHOD, status = 200;
    bool dry_run = sw_rest_dry_run(req);
    sw_delete_opts dopts;
    if (!strcmp(m, "DELETE")) {
        /* a DELETE's dryRun may come in its body (kubectl's --dry-run=server) */
        if ((error = sw_rest_delete_opts(req, &dopts)) < 0) {
            sw_rest_fail(resp, error, rt);
            return;
        }
        dry_run = dry_run || dopts.dry_run;
        error = SW_EMETHOD;
    }
    objects_init(&ao, api, dry_run);
    sw_error_set(SW_EMETHOD, "the server does not allow this method on the requested resource");
    if (!strcmp(m, "GET") && rt->has_name && v->get) {
        error = v->get(&api->kctx, &ao.base, ns, rt->name, &out);
    } else if (!strcmp(m, "GET") && !rt->has_name && v->list) {
        error = v->list(&api->kctx, &ao.base, ns, &out);
        if (error == 0) {
            reply_list(resp, req, rt->kind, out, api);
            json_decref(out);
            return;
        }
    } else if (!strcmp(m, "POST") && !rt->has_name && v->create) {
        error = sw_rest_read_body(req, rt, resp, &body);
        if (error == 0)
            error = v->create(&api->kctx, &ao.base, ns, body, &out);
        status = 201;
    } else if (!strcmp(m, "PUT") && rt->has_name && v->update) {
        error = sw_rest_read_body(req, rt, resp, &body);
        if (error == 0)
            error = v->update(&api->kctx, &ao.base, ns, rt->name, body, &out);
    } else if (!strcmp(m, "DELETE") && rt->has_name && v->del) {
        error = v->del(&api->kctx, &ao.base, ns, rt->name, &out);
    }
    if (error < 0)
        sw_rest_fail(resp, error, rt);
    else if (out)
        sw_rest_reply_object(resp, req, rt->kind, status, out);
    else {
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s}", "kind", "Status", "apiVersion", "v1",
                               "metadata", "status", "Success");
        sw_response_json(resp, status, st);
        json_decref(st);
    }
    json_decref(body);
    json_decref(out);
}

void sw_rest_subresource(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    api_objects ao;
    sw_subresp out = {0};
    sw_subreq sr = {.kind = rt->kind,
                    .method = req->method,
                    .ns = rt->has_ns ? rt->ns : NULL,
                    .name = rt->name,
                    .rest = rt->rest,
                    .content_type = req->content_type,
                    .body = req->body,
                    .body_len = req->body_len,
                    .body_file = req->body_file,
                    .query = req->query,
                    .header = req->header,
                    .conn = req->conn};
    objects_init(&ao, api, sw_rest_dry_run(req));
    int error = rt->subres->handle(&api->kctx, &ao.base, &sr, &out);
    if (error < 0) {
        sw_response_error(resp, error, sw_error_msg(), rt->kind, rt->name);
        if (out.free)
            out.free(out.state);
    } else if (out.next) {
        resp->status = out.status ? out.status : 200;
        resp->content_type = out.content_type ? out.content_type : "text/plain";
        resp->stream.next = out.next;
        resp->stream.free = out.free;
        resp->stream.state = out.state;
    } else if (out.text) {
        resp->status = out.status ? out.status : 200;
        resp->content_type = out.content_type ? out.content_type : "text/plain";
        sw_buf_put(&resp->body, out.text, out.text_len);
    } else if (out.obj) {
        sw_response_json(resp, out.status ? out.status : 200, out.obj);
    } else {
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s}", "kind", "Status", "apiVersion", "v1",
                               "metadata", "status", "Success");
        sw_response_json(resp, out.status ? out.status : 200, st);
        json_decref(st);
    }
    json_decref(out.obj);
    sw_free(out.text);
}

static sw_objects *obj_hold(sw_objects *o)
{
    api_objects *copy = sw_calloc(1, sizeof(*copy));
    objects_init(copy, api_of(o), o->dry_run);
    return &copy->base;
}

static void obj_release(sw_objects *o)
{
    sw_free(o);
}

sw_objects *sw_api_objects_new(sw_api *api)
{
    api_objects *ao = sw_calloc(1, sizeof(*ao));
    objects_init(ao, api, false);
    return &ao->base;
}

void sw_api_objects_free(sw_objects *o)
{
    sw_free(o);
}
