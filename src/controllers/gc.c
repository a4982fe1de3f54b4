/* gc: the collector's workers and its discovery (see gc.h, crd-gc.md §2.7). Work-queue keys
 * are "d:<uid>" (look at the owners of uid: kube's attemptToDelete) and "o:<uid>" (orphan the
 * dependents of uid: attemptToOrphan). Decisions read the graph; an owner the graph has not
 * seen is read live, and every write carries preconditions over the version decided on. */
#include "controllers/gc.h"

#include "client/discovery.h"
#include "controllers/events.h"
#include "controllers/gc_graph.h"
#include "meta/ownerref.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define COMPONENT "garbage-collector"
#define REDISCOVER_MIN_MS 1000 /* discovery runs at most this often on demand */

#define SYNC_WAIT_MS 60000 /* a resource that cannot be listed stops decisions this long */

typedef struct source {
    struct sw_gc *gc;
    int kind;
    sw_resource res; /* strings owned */
    sw_informer *inf;
    int64_t added_ms; /* when it was followed */
    bool given_up;    /* never listed within SYNC_WAIT_MS: decisions go on without it */
} source;

struct sw_gc {
    sw_client *client;
    sw_informers *informers;
    sw_gc_graph *graph;
    sw_controller *ctl;
    sw_gc_opts opts;
    pthread_mutex_t mu; /* res, sources, stopping, rediscover_wanted */
    pthread_cond_t cond;
    sw_api_resources res; /* the last discovery */
    source **sources;
    size_t nsources;
    bool stopping, thread_started;
    bool rediscover_wanted; /* a reference named a kind discovery did not know */
    pthread_t thread;
};

/* ---- graph hooks and informer handlers ---- */

/* Queues "<prefix>:<uid>" (uids in references can be of any length). */
static void enqueue(sw_gc *gc, char prefix, const char *uid)
{
    size_t n = strlen(uid);
    char *key = sw_malloc(n + 3);
    key[0] = prefix;
    key[1] = ':';
    memcpy(key + 2, uid, n + 1);
    sw_controller_enqueue(gc->ctl, key);
    sw_free(key);
}

static void hook_delete(void *ctx, const char *uid)
{
    enqueue(ctx, 'd', uid);
}

static void hook_orphan(void *ctx, const char *uid)
{
    enqueue(ctx, 'o', uid);
}

static void on_add(json_t *obj, void *payload)
{
    source *s = payload;
    sw_gc_graph_upsert(s->gc->graph, s->kind, obj);
}

static void on_delete(json_t *obj, void *payload)
{
    source *s = payload;
    sw_gc_graph_remove(s->gc->graph, sw_json_str_at(obj, "metadata.uid"));
}

static void on_list_start(void *payload)
{
    source *s = payload;
    sw_gc_graph_list_start(s->gc->graph, s->kind);
}

static void on_synced(void *payload)
{
    source *s = payload;
    sw_gc_graph_list_done(s->gc->graph, s->kind);
}

/* ---- resources ---- */

/* The served resource of a kind id, copied into out (strings borrowed from buf storage):
 * false when discovery does not know it. */
typedef struct mapping {
    char group[256], version[128], plural[256], kind[256];
    sw_resource res;
} mapping;

static bool map_kind(sw_gc *gc, int kind, mapping *m)
{
    const char *group, *k;
    sw_gc_graph_kind_name(gc->graph, kind, &group, &k);
    sw_strlcpy(m->group, group, sizeof(m->group));
    sw_strlcpy(m->kind, k, sizeof(m->kind));
    pthread_mutex_lock(&gc->mu);
    const sw_api_resource *r = sw_api_resources_find_kind(&gc->res, group, k);
    if (r) {
        sw_strlcpy(m->version, r->res.version, sizeof(m->version));
        sw_strlcpy(m->plural, r->res.plural, sizeof(m->plural));
        m->res = (sw_resource){m->group, m->version, m->plural, r->res.namespaced};
    }
    if (!r) {
        /* a kind discovery does not know yet (a CRD just created): look again soon */
        gc->rediscover_wanted = true;
        pthread_cond_broadcast(&gc->cond);
    }
    pthread_mutex_unlock(&gc->mu);
    if (!r)
        sw_error_set(SW_ENOTFOUND, "unable to get REST mapping for %s%s%s.", m->group,
                     m->group[0] ? "/" : "", m->kind);
    return r != NULL;
}

/* apiVersion of a mapped kind into buf. */
static const char *api_version(const mapping *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", m->group, m->group[0] ? "/" : "", m->version);
    return buf;
}

static bool watchable(const sw_api_resource *r)
{
    unsigned need = SW_VERB_LIST | SW_VERB_WATCH | SW_VERB_DELETE;
    return (r->verbs & need) == need &&
           !(sw_str_eq(r->res.group, "") && sw_str_eq(r->res.plural, "events")) &&
           !(sw_str_eq(r->res.group, "events.k8s.io") && sw_str_eq(r->res.plural, "events"));
}

static bool watched(sw_gc *gc, const sw_api_resource *r)
{
    for (size_t i = 0; i < gc->nsources; i++)
        if (sw_str_eq(gc->sources[i]->res.group, r->res.group) &&
            sw_str_eq(gc->sources[i]->res.plural, r->res.plural))
            return true;
    return false;
}

/* One discovery pass: the resources known, and a lean informer for each new watchable one. */
static int rediscover(sw_gc *gc)
{
    sw_api_resources r;
    int error = sw_discovery_read(gc->client, &r);
    if (error < 0)
        return error;
    pthread_mutex_lock(&gc->mu);
    sw_api_resources_dispose(&gc->res);
    gc->res = r;
    for (size_t i = 0; i < r.count && !gc->stopping; i++) {
        const sw_api_resource *a = &r.items[i];
        if (!watchable(a) || watched(gc, a))
            continue;
        source *s = sw_calloc(1, sizeof(*s));
        s->gc = gc;
        s->kind = sw_gc_graph_kind(gc->graph, a->res.group, a->kind);
        s->res = (sw_resource){sw_strdup(a->res.group), sw_strdup(a->res.version),
                               sw_strdup(a->res.plural), a->res.namespaced};
        s->added_ms = sw_time_mono_ms();
        sw_informer_opts io = {.backoff_max_ms = 30000};
        s->inf = sw_informers_get(gc->informers, &s->res, true, &io);
        sw_informer_handlers h = {.on_add = on_add,
                                  .on_delete = on_delete,
                                  .on_synced = on_synced,
                                  .on_list_start = on_list_start,
                                  .payload = s};
        if (sw_informer_add_handlers(s->inf, &h) < 0)
            sw_log(SW_LOG_WARN, COMPONENT ": cannot follow %s: %s", a->res.plural, sw_error_msg());
        gc->sources = sw_realloc(gc->sources, (gc->nsources + 1) * sizeof(*gc->sources));
        gc->sources[gc->nsources++] = s;
        sw_log(SW_LOG_INFO, COMPONENT ": following %s%s%s", a->res.plural,
               a->res.group[0] ? "." : "", a->res.group);
    }
    bool stopping = gc->stopping;
    pthread_mutex_unlock(&gc->mu);
    return stopping ? 0 : sw_informers_start(gc->informers);
}

static void *discovery_main(void *arg)
{
    sw_gc *gc = arg;
    int64_t wait_ms = 0, backoff = 500;
    pthread_mutex_lock(&gc->mu);
    int64_t last = 0;
    while (!gc->stopping) {
        /* until the period ends, or sooner when a kind was missing (at most once a second) */
        int64_t until = sw_time_mono_ms() + wait_ms;
        while (!gc->stopping) {
            int64_t now = sw_time_mono_ms(), step = until - now;
            if (step <= 0 || (gc->rediscover_wanted && now - last >= REDISCOVER_MIN_MS))
                break;
            if (gc->rediscover_wanted && REDISCOVER_MIN_MS - (now - last) < step)
                step = REDISCOVER_MIN_MS - (now - last);
            struct timespec ts = sw_time_mono_deadline(step);
            pthread_cond_timedwait(&gc->cond, &gc->mu, &ts);
        }
        if (gc->stopping)
            break;
        gc->rediscover_wanted = false;
        last = sw_time_mono_ms();
        pthread_mutex_unlock(&gc->mu);
        int error = rediscover(gc);
        if (error < 0) {
            sw_log(SW_LOG_INFO, COMPONENT ": discovery failed (again in %lld ms): %s",
                   (long long)backoff, sw_error_msg());
            wait_ms = backoff;
            backoff = backoff * 2 > gc->opts.rediscovery_ms ? gc->opts.rediscovery_ms : backoff * 2;
        } else {
            wait_ms = gc->opts.rediscovery_ms;
            backoff = 500;
        }
        pthread_mutex_lock(&gc->mu);
    }
    pthread_mutex_unlock(&gc->mu);
    return NULL;
}

/* ---- live reads and writes ---- */

/* GET of name (in ns when the resource is namespaced): 0 with *out, SW_ENOTFOUND, or an error. */
static int get_live(sw_gc *gc, const mapping *m, const char *ns, const char *name, json_t **out)
{
    *out = NULL;
    return sw_client_get(gc->client, &m->res, m->res.namespaced ? ns : NULL, name, out);
}

typedef struct edit {
    sw_gc *gc;
    const mapping *m;
    const char *ns, *name, *uid;
    /* what to change: drop these owner uids / unblock these / remove this finalizer */
    char *const *drop;
    size_t ndrop;
    bool unblock;
    const char *finalizer;
    bool changed; /* set when a patch was written */
} edit;

static bool listed(char *const *set, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (sw_str_eq(set[i], s))
            return true;
    return false;
}

/* One read-modify-write of the object's references or finalizers, as a merge patch whose
 * resourceVersion makes it conditional (SW_ECONFLICT on a change in between). */
static int edit_once(void *arg)
{
    edit *e = arg;
    json_t *obj = NULL, *patch = NULL, *meta, *v;
    int error = get_live(e->gc, e->m, e->ns, e->name, &obj);
    if (error == SW_ENOTFOUND)
        return 0;
    if (error < 0)
        return error;
    if (!sw_str_eq(sw_json_str_at(obj, "metadata.uid"), e->uid))
        goto done; /* another object by now */
    json_t *next = json_array();
    bool changed = false;
    size_t i;
    if (e->finalizer) {
        json_array_foreach(sw_json_at(obj, "metadata.finalizers"), i, v)
        {
            if (sw_str_eq(json_string_value(v), e->finalizer))
                changed = true;
            else
                json_array_append(next, v);
        }
    } else {
        json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, v)
        {
            const char *uid = sw_json_str_at(v, "uid");
            if (listed(e->drop, e->ndrop, uid) && !e->unblock) {
                changed = true;
                continue;
            }
            if (listed(e->drop, e->ndrop, uid) && sw_json_bool_at(v, "blockOwnerDeletion")) {
                json_t *copy = json_deep_copy(v);
                json_object_set_new(copy, "blockOwnerDeletion", json_false());
                json_array_append_new(next, copy);
                changed = true;
                continue;
            }
            json_array_append(next, v);
        }
    }
    if (!changed) {
        json_decref(next);
        goto done;
    }
    patch = json_pack("{s:{s:s}}", "metadata", "resourceVersion",
                      sw_json_str_at(obj, "metadata.resourceVersion") ?: "");
    meta = json_object_get(patch, "metadata");
    json_object_set_new(meta, e->finalizer ? "finalizers" : "ownerReferences",
                        json_array_size(next) ? next : json_null());
    if (!json_array_size(next))
        json_decref(next);
    error = sw_client_patch(e->gc->client, &e->m->res, e->m->res.namespaced ? e->ns : NULL, e->name,
                            "merge", patch, NULL);
    if (error == 0)
        e->changed = true;
    if (error == SW_ENOTFOUND)
        error = 0;
done:
    json_decref(patch);
    json_decref(obj);
    return error;
}

static int edit_object(edit *e)
{
    return sw_retry_on_conflict(0, edit_once, e);
}

/* DELETE of the item with preconditions over the version decided on. */
static int delete_item(sw_gc *gc, const mapping *m, const sw_gc_item *it, const char *policy,
                       int64_t rv)
{
    char rvs[24] = "";
    if (rv > 0)
        snprintf(rvs, sizeof(rvs), "%lld", (long long)rv);
    sw_log(SW_LOG_DEBUG, COMPONENT ": deleting %s %s/%s (%s)", m->kind, it->ns, it->name, policy);
    int error = sw_client_delete_opts(gc->client, &m->res, m->res.namespaced ? it->ns : NULL,
                                      it->name, policy, it->uid, rvs, NULL);
    return error == SW_ENOTFOUND ? 0 : error;
}

static void invalid_namespace_event(sw_gc *gc, const mapping *im, const sw_gc_item *it,
                                    const mapping *om, const sw_gc_owner *o)
{
    char av[400], oav[400], msg[1200];
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion",
                            api_version(im, av, sizeof(av)), "kind", im->kind, "metadata", "name",
                            it->name, "namespace", it->ns, "uid", it->uid);
    snprintf(msg, sizeof(msg),
             "ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace "
             "\"%s\"",
             api_version(om, oav, sizeof(oav)), om->kind, it->ns, o->name, o->uid, it->ns);
    sw_event_record(gc->client, obj, "Warning", "OwnerRefInvalidNamespace", COMPONENT, msg);
    json_decref(obj);
}

/* ---- attemptToDelete ---- */

enum { SOLID, DANGLING, WAITING };

/* What one reference of it amounts to (kube's isDangling): SOLID, DANGLING or WAITING, or a
 * negative error (an owner kind nobody serves: retried). *skip is set for a cluster-scoped
 * dependent naming a namespaced owner kind (never collected). */
static int classify(sw_gc *gc, const mapping *im, const sw_gc_item *it, const sw_gc_owner *o,
                    bool *skip)
{
    mapping om;
    if (!map_kind(gc, o->kind, &om))
        return SW_ENOTFOUND; /* message set by map_kind */
    if (om.res.namespaced && !im->res.namespaced) {
        *skip = true; /* before anything else: such a reference never collects */
        return SOLID;
    }
    /* what the graph knows holds only for the reference's own coordinates (kind and name
     * checked by the graph, the namespace here); anything else is read live by them */
    bool same_ns = !om.res.namespaced || sw_str_eq(o->ns, it->ns);
    if (o->state == SW_GC_OWNER_ABSENT && same_ns)
        return DANGLING;
    if (o->state == SW_GC_OWNER_PRESENT && same_ns)
        return SOLID;
    if (o->state == SW_GC_OWNER_WAITING && same_ns)
        return WAITING;
    json_t *owner = NULL;
    int error = get_live(gc, &om, it->ns, o->name, &owner);
    if (error == SW_ENOTFOUND ||
        (error == 0 && !sw_str_eq(sw_json_str_at(owner, "metadata.uid"), o->uid))) {
        json_decref(owner);
        if (o->matches && same_ns) /* the node's own identity was read: gone for everyone */
            sw_gc_graph_mark_absent(gc->graph, o->uid, it->uid);
        if (o->observed && !same_ns)
            invalid_namespace_event(gc, im, it, &om, o); /* the real owner lives elsewhere */
        return DANGLING;
    }
    if (error < 0)
        return error;
    bool waiting =
        sw_json_at(owner, "metadata.deletionTimestamp") &&
        sw_finalizers_has(sw_json_at(owner, "metadata.finalizers"), SW_FINALIZER_FOREGROUND);
    json_decref(owner);
    return waiting ? WAITING : SOLID;
}

/* A node only references name: does it exist? Gone: its dependents are looked at. There:
 * looked at again later until an informer sees it (or it goes), as kube requeues unobserved
 * virtual nodes. */
static int check_virtual(sw_gc *gc, const sw_gc_item *it)
{
    mapping m;
    json_t *obj = NULL;
    if (!map_kind(gc, it->kind, &m))
        return SW_ENOTFOUND;
    if (m.res.namespaced && !it->ns[0]) {
        /* first named by a cluster-scoped object: no namespace to read it in; each dependent
         * decides by its own coordinates */
        for (size_t i = 0; i < it->ndependents; i++)
            hook_delete(gc, it->dependents[i]);
        return 0;
    }
    int error = get_live(gc, &m, it->ns, it->name, &obj);
    if (error == SW_ENOTFOUND ||
        (error == 0 && !sw_str_eq(sw_json_str_at(obj, "metadata.uid"), it->uid))) {
        sw_gc_graph_mark_absent(gc->graph, it->uid, NULL);
        error = 0;
    } else if (error == 0) {
        error = SW_RECONCILE_BACKOFF;
    }
    json_decref(obj);
    return error;
}

/* An owner deleting in the foreground: its foregroundDeletion finalizer goes once no
 * dependent blocks it; until then the blocking dependents are looked at. */
static int deleting_dependents(sw_gc *gc, const sw_gc_item *it)
{
    if (it->nblocking_all) {
        for (size_t i = 0; i < it->nblocking; i++)
            hook_delete(gc, it->blocking[i]);
        return 0;
    }
    mapping m;
    if (!map_kind(gc, it->kind, &m))
        return SW_ENOTFOUND;
    edit e = {.gc = gc,
              .m = &m,
              .ns = it->ns,
              .name = it->name,
              .uid = it->uid,
              .finalizer = SW_FINALIZER_FOREGROUND};
    return edit_object(&e);
}

/* The version to make a deletion conditional on: the graph's when it has one, else the live
 * object's when its references are still those the decision saw. */
static int decision_rv(sw_gc *gc, const mapping *m, const sw_gc_item *it, int64_t *rv)
{
    json_t *obj = NULL, *ref;
    size_t i, same = 0;
    *rv = it->rv;
    if (it->rv)
        return 0;
    int error = get_live(gc, m, it->ns, it->name, &obj);
    if (error < 0)
        return error == SW_ENOTFOUND ? SW_ENOTFOUND : error;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, ref)
    {
        for (size_t j = 0; j < it->nowners; j++)
            if (sw_str_eq(sw_json_str_at(ref, "uid"), it->owners[j].uid))
                same++;
    }
    bool ok = sw_str_eq(sw_json_str_at(obj, "metadata.uid"), it->uid) && same == it->nowners &&
              same == json_array_size(sw_json_at(obj, "metadata.ownerReferences"));
    if (ok && sw_str_to_i64(sw_json_str_at(obj, "metadata.resourceVersion") ?: "", rv) < 0)
        *rv = 0;
    json_decref(obj);
    if (!ok || !*rv)
        return sw_error_set(SW_ECONFLICT, "%s/%s changed since it was seen", it->ns, it->name);
    return 0;
}

static int attempt_delete(sw_gc *gc, const char *uid)
{
    sw_gc_item it;
    mapping m;
    int error = sw_gc_graph_item(gc->graph, uid, &it), nsolid = 0, nwaiting = 0;
    char **drop = NULL;
    size_t ndrop = 0;
    bool skip = false;
    if (error == SW_ENOTFOUND) {
        error = 0;
        goto done;
    }
    if (it.virtual_node) {
        error = it.absent ? 0 : check_virtual(gc, &it);
        goto done;
    }
    if (it.deleting_dependents) {
        error = deleting_dependents(gc, &it);
        goto done;
    }
    if (it.deleting || !it.nowners)
        goto done; /* its finalizers decide, or nothing owns it */
    if (!map_kind(gc, it.kind, &m)) {
        error = SW_ENOTFOUND;
        goto done;
    }
    drop = sw_calloc(it.nowners, sizeof(*drop));
    for (size_t i = 0; i < it.nowners; i++) {
        int c = classify(gc, &m, &it, &it.owners[i], &skip);
        if (c < 0) {
            error = c;
            goto done;
        }
        if (c == SOLID)
            nsolid++;
        else
            drop[ndrop++] = it.owners[i].uid;
        nwaiting += c == WAITING;
    }
    if (skip)
        goto done; /* a cluster-scoped object with a namespaced owner kind: never collected */
    if (nsolid) {
        /* a live owner keeps it; references to owners gone or going are removed */
        edit e = {.gc = gc,
                  .m = &m,
                  .ns = it.ns,
                  .name = it.name,
                  .uid = it.uid,
                  .drop = drop,
                  .ndrop = ndrop};
        error = ndrop ? edit_object(&e) : 0;
        goto done;
    }
    int64_t rv = 0;
    if ((error = decision_rv(gc, &m, &it, &rv)) < 0) {
        error = error == SW_ENOTFOUND ? 0 : error;
        goto done;
    }
    if (nwaiting && it.ndependents) {
        if (it.dependent_deleting_dependents) {
            /* a cycle through foreground deletions would wait forever: unblock first, then
             * decide again on the version that write made (never delete without one) */
            edit e = {.gc = gc,
                      .m = &m,
                      .ns = it.ns,
                      .name = it.name,
                      .uid = it.uid,
                      .drop = drop,
                      .ndrop = ndrop,
                      .unblock = true};
            if ((error = edit_object(&e)) == 0 && e.changed)
                error = 200;
            if (error != 0)
                goto done;
        }
        error = delete_item(gc, &m, &it, "Foreground", rv);
        goto done;
    }
    const char *policy = it.orphan_finalizer       ? "Orphan"
                         : it.foreground_finalizer ? "Foreground"
                                                   : "Background";
    error = delete_item(gc, &m, &it, policy, rv);
done:
    sw_free(drop);
    sw_gc_item_dispose(&it);
    return error;
}

/* ---- attemptToOrphan ---- */

static int attempt_orphan(sw_gc *gc, const char *uid)
{
    sw_gc_item it;
    mapping m;
    int error = sw_gc_graph_item(gc->graph, uid, &it);
    if (error == SW_ENOTFOUND) {
        sw_gc_item_dispose(&it);
        return 0;
    }
    char *owner_uid = it.uid;
    for (size_t i = 0; error == 0 && i < it.ndependents; i++) {
        sw_gc_item dep;
        mapping dm;
        if (sw_gc_graph_item(gc->graph, it.dependents[i], &dep) == 0 && !dep.virtual_node) {
            if (!map_kind(gc, dep.kind, &dm)) {
                error = SW_ENOTFOUND;
            } else {
                edit e = {.gc = gc,
                          .m = &dm,
                          .ns = dep.ns,
                          .name = dep.name,
                          .uid = dep.uid,
                          .drop = &owner_uid,
                          .ndrop = 1};
                error = edit_object(&e);
            }
        }
        sw_gc_item_dispose(&dep);
    }
    if (error == 0 && !it.virtual_node) {
        if (!map_kind(gc, it.kind, &m)) {
            error = SW_ENOTFOUND;
        } else {
            edit e = {.gc = gc,
                      .m = &m,
                      .ns = it.ns,
                      .name = it.name,
                      .uid = it.uid,
                      .finalizer = SW_FINALIZER_ORPHAN};
            error = edit_object(&e);
        }
    }
    sw_gc_item_dispose(&it);
    return error;
}

/* Whether every followed resource has been listed once: until then the graph lacks objects
 * (an orphaning pass would miss dependents, a foreground owner would lose its finalizer before
 * blocking dependents are known), so no decision is made, as kube's collector waits for its
 * graph to sync. */
static bool synced(sw_gc *gc)
{
    pthread_mutex_lock(&gc->mu);
    bool ok = gc->nsources > 0;
    int64_t now = sw_time_mono_ms();
    for (size_t i = 0; ok && i < gc->nsources; i++) {
        source *src = gc->sources[i];
        if (src->given_up || sw_informer_has_synced(src->inf))
            continue;
        if (now - src->added_ms < SYNC_WAIT_MS) {
            ok = false;
        } else {
            /* one resource nobody can list must not stop the collector for good */
            src->given_up = true;
            sw_log(SW_LOG_WARN, COMPONENT ": %s not listed after %d s; deciding without it",
                   src->res.plural, SYNC_WAIT_MS / 1000);
        }
    }
    pthread_mutex_unlock(&gc->mu);
    return ok;
}

static int reconcile(void *ctx, const char *key)
{
    sw_gc *gc = ctx;
    if (!synced(gc))
        return 200; /* look again once the informers have listed */
    if (sw_str_prefix(key, "d:"))
        return attempt_delete(gc, key + 2);
    if (sw_str_prefix(key, "o:"))
        return attempt_orphan(gc, key + 2);
    return 0;
}

/* ---- lifecycle ---- */

int sw_gc_new(sw_gc **out, sw_client *c, sw_informers *f, const sw_gc_opts *opts)
{
    sw_gc *gc = sw_calloc(1, sizeof(*gc));
    gc->client = c;
    gc->informers = f;
    if (opts)
        gc->opts = *opts;
    if (gc->opts.workers <= 0)
        gc->opts.workers = 20;
    if (gc->opts.rediscovery_ms <= 0)
        gc->opts.rediscovery_ms = 30000;
    pthread_mutex_init(&gc->mu, NULL);
    sw_time_cond_init(&gc->cond);
    sw_gc_graph_hooks hooks = {hook_delete, hook_orphan, gc};
    gc->graph = sw_gc_graph_new(&hooks);
    sw_controller_opts co = {.name = COMPONENT,
                             .workers = gc->opts.workers,
                             .reconcile = reconcile,
                             .ctx = gc,
                             .queue = {.base_delay_ms = 50, .max_delay_ms = 300000}};
    int error = sw_controller_new(&gc->ctl, &co);
    if (error < 0) {
        sw_gc_free(gc);
        return error;
    }
    *out = gc;
    return 0;
}

int sw_gc_start(sw_gc *gc)
{
    int error = sw_controller_start(gc->ctl);
    if (error < 0)
        return error;
    if (pthread_create(&gc->thread, NULL, discovery_main, gc) != 0)
        return sw_error_set(SW_ERROR, COMPONENT ": cannot start its discovery thread");
    gc->thread_started = true;
    return 0;
}

size_t sw_gc_tracked(sw_gc *gc)
{
    return sw_gc_graph_size(gc->graph);
}

void sw_gc_free(sw_gc *gc)
{
    if (!gc)
        return;
    pthread_mutex_lock(&gc->mu);
    gc->stopping = true;
    pthread_cond_broadcast(&gc->cond);
    pthread_mutex_unlock(&gc->mu);
    if (gc->thread_started)
        pthread_join(gc->thread, NULL);
    sw_controller_free(gc->ctl);
    for (size_t i = 0; i < gc->nsources; i++) {
        sw_free((char *)gc->sources[i]->res.group);
        sw_free((char *)gc->sources[i]->res.version);
        sw_free((char *)gc->sources[i]->res.plural);
        sw_free(gc->sources[i]);
    }
    sw_free(gc->sources);
    sw_api_resources_dispose(&gc->res);
    sw_gc_graph_free(gc->graph);
    pthread_cond_destroy(&gc->cond);
    pthread_mutex_destroy(&gc->mu);
    sw_free(gc);
}
