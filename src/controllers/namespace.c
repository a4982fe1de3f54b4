/* namespace: one pass over a terminating namespace per reconcile (see namespace.h; crd-gc.md
 * §2.8). The pass deletes, counts what is left, writes the conditions that changed, and
 * finalizes an empty namespace; content left means another pass soon. */
#include "controllers/namespace.h"

#include "client/discovery.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "namespace-controller"
#define DISCOVERY_MAX_AGE_MS 10000
#define NS_FINALIZER "kubernetes"

struct sw_namespace_controller {
    sw_client *client;
    sw_controller *ctl;
    sw_namespace_controller_opts opts;
    pthread_mutex_t mu; /* res, res_ms */
    sw_api_resources res;
    int64_t res_ms;
    char *root_ca; /* opts.root_ca's copy, or NULL */
};

#define ROOT_CA_CONFIGMAP "kube-root-ca.crt"
#define ROOT_CA_DESCRIPTION                                                                        \
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "      \
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "      \
    "guaranteed across distributions of Kubernetes clusters."
/* Work-queue keys: a namespace's name (a deletion pass), or DEFAULTS_KEY + name (its default
 * objects); no namespace name starts with it. */
#define DEFAULTS_KEY "+"

static void observe(json_t *obj, void *payload)
{
    sw_namespace_controller *nc = payload;
    const char *name = sw_json_str_at(obj, "metadata.name");
    if (name && sw_json_at(obj, "metadata.deletionTimestamp")) {
        sw_controller_enqueue(nc->ctl, name);
    } else if (name) {
        char key[300];
        snprintf(key, sizeof(key), DEFAULTS_KEY "%s", name);
        sw_controller_enqueue(nc->ctl, key);
    }
}

static void on_update(json_t *old, json_t *obj, void *payload)
{
    observe(obj, payload);
}

/* The namespaced resources to empty, from a discovery at most DISCOVERY_MAX_AGE_MS old. */
static int resources(sw_namespace_controller *nc, sw_api_resources *out)
{
    pthread_mutex_lock(&nc->mu);
    bool fresh = nc->res_ms && sw_time_mono_ms() - nc->res_ms < DISCOVERY_MAX_AGE_MS;
    if (fresh)
        sw_api_resources_copy(out, &nc->res);
    pthread_mutex_unlock(&nc->mu);
    if (fresh)
        return 0;
    sw_api_resources r;
    int error = sw_discovery_read(nc->client, &r);
    if (error < 0)
        return error;
    pthread_mutex_lock(&nc->mu);
    sw_api_resources_dispose(&nc->res);
    nc->res = r;
    nc->res_ms = sw_time_mono_ms();
    sw_api_resources_copy(out, &nc->res);
    pthread_mutex_unlock(&nc->mu);
    return 0;
}

/* ---- one pass ---- */

typedef struct pass {
    sw_namespace_controller *nc;
    const char *ns;
    bool partial;       /* discovery missed some group version: the namespace is not finalized */
    json_t *remaining;  /* "plural.group" -> count */
    json_t *finalizers; /* finalizer -> count */
    sw_buf errors;      /* what could not be deleted */
    int nerrors;
} pass;

static void pass_error(pass *p, const sw_api_resource *r, const char *what)
{
    p->nerrors++;
    sw_buf_printf(&p->errors, "%s%s %s.%s: %s", p->nerrors > 1 ? ", " : "", what, r->res.plural,
                  r->res.group, sw_error_msg());
}

static void count(json_t *set, const char *key)
{
    json_int_t n = json_integer_value(json_object_get(set, key));
    json_object_set_new(set, key, json_integer(n + 1));
}

typedef struct counting {
    pass *p;
    const sw_api_resource *r;
    char label[600];
    bool delete_each; /* no deletecollection: each listed object is deleted */
} counting;

static int count_item(const json_t *page, json_t *item, void *payload)
{
    counting *c = payload;
    size_t i;
    json_t *f;
    if (!item) { /* the list starts again: count from zero */
        json_object_del(c->p->remaining, c->label);
        return 0;
    }
    if (c->delete_each) {
        const char *name = sw_json_str_at(item, "metadata.name");
        int error =
            sw_client_delete_opts(c->p->nc->client, &c->r->res, c->p->ns, name, "Background",
                                  sw_json_str_at(item, "metadata.uid"), NULL, NULL);
        if (error == SW_ENOTFOUND)
            return 0; /* gone already */
        if (error < 0 && error != SW_ECONFLICT)
            pass_error(c->p, c->r, "delete");
    }
    count(c->p->remaining, c->label);
    json_array_foreach(sw_json_at(item, "metadata.finalizers"), i, f)
    {
        if (json_is_string(f))
            count(c->p->finalizers, json_string_value(f));
    }
    return 0;
}

/* Deletes what resource r holds in the namespace, then counts what is left. */
static void empty_resource(pass *p, const sw_api_resource *r)
{
    counting c = {.p = p, .r = r};
    snprintf(c.label, sizeof(c.label), "%s.%s", r->res.plural, r->res.group);
    if (r->verbs & SW_VERB_DELETECOLLECTION) {
        sw_buf path = SW_BUF_INIT(2048);
        json_t *opts = json_pack("{s:s}", "propagationPolicy", "Background");
        int error = sw_client_path(&path, &r->res, p->ns, NULL, NULL);
        if (error == 0)
            error = sw_client_request(p->nc->client, "DELETE", sw_buf_cstr(&path), opts, NULL, NULL,
                                      NULL);
        json_decref(opts);
        sw_buf_dispose(&path);
        if (error == SW_EMETHOD)
            c.delete_each = true;
        else if (error < 0 && error != SW_ENOTFOUND)
            pass_error(p, r, "deletecollection");
    } else {
        c.delete_each = true;
    }
    sw_list_opts lo = {.limit = 500};
    int error = sw_client_list_each(p->nc->client, &r->res, p->ns, &lo, count_item, &c, NULL, 0);
    if (error < 0 && error != SW_ENOTFOUND && error != SW_EMETHOD)
        pass_error(p, r, "list");
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a has 3 resource instances, b has 1 resource instances" (sorted, as kube prints it). */
static void describe(const json_t *set, const char *verb, sw_buf *out)
{
    size_t n = json_object_size(set), i = 0;
    const char **keys = sw_calloc(n ? n : 1, sizeof(*keys));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)set, k, v) keys[i++] = k;
    qsort(keys, n, sizeof(*keys), by_string);
    for (i = 0; i < n; i++)
        sw_buf_printf(out, "%s%s %s %lld resource instances", i ? ", " : "", keys[i], verb,
                      (long long)json_integer_value(json_object_get(set, keys[i])));
    sw_free(keys);
}

static json_t *condition(const char *type, bool problem, const char *reason, const char *message)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", problem ? "True" : "False",
                     "reason", reason, "message", message);
}

static json_t *conditions(const pass *p)
{
    json_t *out = json_array();
    sw_buf b = SW_BUF_INIT(16384);
    json_array_append_new(
        out, p->partial
                 ? condition("NamespaceDeletionDiscoveryFailure", true, "DiscoveryFailed",
                             "Discovery failed for some groups; their content "
                             "is not deleted yet")
                 : condition("NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered",
                             "All resources successfully discovered"));
    json_array_append_new(out, condition("NamespaceDeletionGroupVersionParsingFailure", false,
                                         "ParsedGroupVersions",
                                         "All legacy kube types successfully parsed"));
    if (p->nerrors) {
        sw_buf_printf(&b, "Failed to delete all resource types, %d remaining: %s", p->nerrors,
                      sw_buf_cstr((sw_buf *)&p->errors));
        json_array_append_new(out, condition("NamespaceDeletionContentFailure", true,
                                             "ContentDeletionFailed", sw_buf_cstr(&b)));
    } else {
        json_array_append_new(out,
                              condition("NamespaceDeletionContentFailure", false, "ContentDeleted",
                                        "All content successfully deleted, may be waiting "
                                        "on finalization"));
    }
    sw_buf_clear(&b);
    if (json_object_size(p->remaining)) {
        sw_buf_puts(&b, "Some resources are remaining: ");
        describe(p->remaining, "has", &b);
        json_array_append_new(out, condition("NamespaceContentRemaining", true,
                                             "SomeResourcesRemain", sw_buf_cstr(&b)));
    } else {
        json_array_append_new(out, condition("NamespaceContentRemaining", false, "ContentRemoved",
                                             "All content successfully removed"));
    }
    sw_buf_clear(&b);
    if (json_object_size(p->finalizers)) {
        sw_buf_puts(&b, "Some content in the namespace has finalizers remaining: ");
        describe(p->finalizers, "in", &b);
        json_array_append_new(out, condition("NamespaceFinalizersRemaining", true,
                                             "SomeFinalizersRemain", sw_buf_cstr(&b)));
    } else {
        json_array_append_new(out, condition("NamespaceFinalizersRemaining", false,
                                             "ContentHasNoFinalizers",
                                             "All content-preserving finalizers finished"));
    }
    sw_buf_dispose(&b);
    return out;
}

/* The conditions a pass computed, carrying lastTransitionTime over where nothing moved. */
static json_t *merge_conditions(const json_t *old, json_t *next, bool *changed)
{
    char now[32];
    size_t i, j;
    json_t *c, *o;
    sw_time_format(sw_time_now(), now, sizeof(now));
    *changed = json_array_size(old) != json_array_size(next);
    json_array_foreach(next, i, c)
    {
        const json_t *same = NULL;
        json_array_foreach(old, j, o)
        {
            if (sw_str_eq(sw_json_str_at(o, "type"), sw_json_str_at(c, "type")))
                same = o;
        }
        bool moved =
            !same || !sw_str_eq(sw_json_str_at(same, "status"), sw_json_str_at(c, "status"));
        const char *t = same && !moved ? sw_json_str_at(same, "lastTransitionTime") : NULL;
        json_object_set_new(c, "lastTransitionTime", json_string(t ? t : now));
        if (!same || moved ||
            !sw_str_eq(sw_json_str_at(same, "reason"), sw_json_str_at(c, "reason")) ||
            !sw_str_eq(sw_json_str_at(same, "message"), sw_json_str_at(c, "message")))
            *changed = true;
    }
    return next;
}

typedef struct status_write {
    sw_namespace_controller *nc;
    const char *name;
    const pass *p;
    bool finalize; /* remove `kubernetes` through /finalize instead */
} status_write;

static int write_once(void *arg)
{
    status_write *w = arg;
    json_t *ns = NULL;
    int error = sw_client_get(w->nc->client, &sw_res_namespaces, NULL, w->name, &ns);
    if (error == SW_ENOTFOUND)
        return 0;
    if (error < 0)
        return error;
    if (!sw_json_at(ns, "metadata.deletionTimestamp"))
        goto done;
    if (w->finalize) {
        json_t *fin = json_array(), *f;
        size_t i;
        bool had = false;
        json_array_foreach(sw_json_at(ns, "spec.finalizers"), i, f)
        {
            if (sw_str_eq(json_string_value(f), NS_FINALIZER))
                had = true;
            else
                json_array_append(fin, f);
        }
        sw_json_set_path(ns, "spec.finalizers", fin);
        if (had) {
            char path[400];
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/finalize", w->name);
            error = sw_client_request(w->nc->client, "PUT", path, ns, NULL, NULL, NULL);
        }
    } else {
        bool changed;
        json_t *next =
            merge_conditions(sw_json_at(ns, "status.conditions"), conditions(w->p), &changed);
        sw_json_set_path(ns, "status.conditions", next);
        if (changed)
            error = sw_client_update_status(w->nc->client, &sw_res_namespaces, NULL, ns, NULL);
    }
    if (error == SW_ENOTFOUND)
        error = 0;
done:
    json_decref(ns);
    return error;
}

/* Whether the namespace is terminating and still waits for this controller. */
static bool terminating(const json_t *ns)
{
    size_t i;
    json_t *f;
    if (!sw_json_at(ns, "metadata.deletionTimestamp"))
        return false;
    json_array_foreach(sw_json_at(ns, "spec.finalizers"), i, f)
    {
        if (sw_str_eq(json_string_value(f), NS_FINALIZER))
            return true;
    }
    return false;
}

/* The default ServiceAccount and the root CA ConfigMap of active namespace name. */
static int ensure_defaults(sw_namespace_controller *nc, const char *name)
{
    json_t *ns = NULL, *cm = NULL;
    int error = sw_client_get(nc->client, &sw_res_namespaces, NULL, name, &ns);
    if (error < 0 || sw_json_at(ns, "metadata.deletionTimestamp"))
        goto done;
    error = sw_client_get(nc->client, &sw_res_serviceaccounts, name, "default", NULL);
    if (error == SW_ENOTFOUND) {
        json_t *sa = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind",
                               "ServiceAccount", "metadata", "name", "default", "namespace", name);
        error = sw_client_create(nc->client, &sw_res_serviceaccounts, name, sa, NULL);
        json_decref(sa);
        if (error == SW_EEXISTS)
            error = 0;
        if (error == SW_ENOTFOUND) /* the namespace went meanwhile, or is not seen yet: again */
            error = SW_ECONFLICT;
    }
    if (error < 0 || !nc->root_ca)
        goto done;
    error = sw_client_get(nc->client, &sw_res_configmaps, name, ROOT_CA_CONFIGMAP, &cm);
    if (error == SW_ENOTFOUND) {
        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1",
                                "kind", "ConfigMap", "metadata", "name", ROOT_CA_CONFIGMAP,
                                "namespace", name, "annotations", "kubernetes.io/description",
                                ROOT_CA_DESCRIPTION, "data", "ca.crt", nc->root_ca);
        error = sw_client_create(nc->client, &sw_res_configmaps, name, obj, NULL);
        json_decref(obj);
        if (error == SW_EEXISTS || error == SW_ENOTFOUND)
            error = SW_ECONFLICT; /* made meanwhile, or the namespace not seen yet: again */
    } else if (error == 0 &&
               !sw_str_eq(json_string_value(json_object_get(json_object_get(cm, "data"), "ca.crt")),
                          nc->root_ca)) {
        json_object_set_new(sw_json_obj_path(cm, "data"), "ca.crt", json_string(nc->root_ca));
        error = sw_client_update(nc->client, &sw_res_configmaps, name, cm, NULL);
    }
done:
    json_decref(cm);
    json_decref(ns);
    return error == SW_ENOTFOUND ? 0 : error;
}

static int reconcile(void *ctx, const char *name)
{
    sw_namespace_controller *nc = ctx;
    if (sw_str_prefix(name, DEFAULTS_KEY))
        return ensure_defaults(nc, name + strlen(DEFAULTS_KEY));
    json_t *ns = NULL;
    int error = sw_client_get(nc->client, &sw_res_namespaces, NULL, name, &ns);
    bool ours = error == 0 && terminating(ns);
    json_decref(ns);
    if (error == SW_ENOTFOUND)
        return 0;
    if (error < 0 || !ours)
        return error;
    sw_api_resources res;
    if ((error = resources(nc, &res)) < 0)
        return error;
    pass p = {.nc = nc,
              .ns = name,
              .remaining = json_object(),
              .finalizers = json_object(),
              .errors = SW_BUF_INIT(8192),
              .partial = res.partial};
    for (size_t k = 0; k < res.count; k++) {
        const sw_api_resource *r = &res.items[k];
        unsigned need = SW_VERB_LIST | SW_VERB_DELETE;
        if (r->res.namespaced && (r->verbs & need) == need)
            empty_resource(&p, r);
    }
    /* what discovery could not see may still hold content: never finalized past it */
    bool empty = !json_object_size(p.remaining) && !p.nerrors && !p.partial;
    status_write w = {nc, name, &p, false};
    error = sw_retry_on_conflict(0, write_once, &w);
    if (error == 0 && empty) {
        w.finalize = true;
        error = sw_retry_on_conflict(0, write_once, &w);
    }
    if (error == 0 && !empty)
        error = nc->opts.recheck_ms; /* content left: look again soon */
    sw_log(SW_LOG_DEBUG, COMPONENT ": %s: %zu kinds left, %d errors", name,
           json_object_size(p.remaining), p.nerrors);
    json_decref(p.remaining);
    json_decref(p.finalizers);
    sw_buf_dispose(&p.errors);
    sw_api_resources_dispose(&res);
    return error;
}

int sw_namespace_controller_new(sw_namespace_controller **out, sw_client *c, sw_informers *f,
                                const sw_namespace_controller_opts *opts)
{
    sw_namespace_controller *nc = sw_calloc(1, sizeof(*nc));
    nc->client = c;
    if (opts)
        nc->opts = *opts;
    if (nc->opts.workers <= 0)
        nc->opts.workers = 5;
    if (nc->opts.recheck_ms <= 0)
        nc->opts.recheck_ms = 1000;
    if (nc->opts.root_ca && nc->opts.root_ca_len) {
        nc->root_ca = sw_malloc(nc->opts.root_ca_len + 1);
        memcpy(nc->root_ca, nc->opts.root_ca, nc->opts.root_ca_len);
        nc->root_ca[nc->opts.root_ca_len] = '\0';
    }
    nc->opts.root_ca = NULL;
    pthread_mutex_init(&nc->mu, NULL);
    sw_controller_opts co = {.name = COMPONENT,
                             .workers = nc->opts.workers,
                             .reconcile = reconcile,
                             .ctx = nc,
                             .queue = {.base_delay_ms = 100, .max_delay_ms = 60000}};
    int error = sw_controller_new(&nc->ctl, &co);
    sw_informer_handlers h = {.on_add = observe, .on_update = on_update, .payload = nc};
    if (error == 0)
        error = sw_informer_add_handlers(sw_informers_get(f, &sw_res_namespaces, false, NULL), &h);
    if (error < 0) {
        sw_namespace_controller_free(nc);
        return error;
    }
    *out = nc;
    return 0;
}

int sw_namespace_controller_start(sw_namespace_controller *nc)
{
    return sw_controller_start(nc->ctl);
}

void sw_namespace_controller_free(sw_namespace_controller *nc)
{
    if (!nc)
        return;
    sw_controller_free(nc->ctl);
    sw_api_resources_dispose(&nc->res);
    pthread_mutex_destroy(&nc->mu);
    sw_free(nc->root_ca);
    sw_free(nc);
}
