/* repoindex: streams by the registry repositories they name (see repoindex.h). One thread
 * lists the streams, then tails the watch cache from the revision it saw before listing (an
 * event replayed over a newer list is undone by the events after it), and lists again when it
 * falls out of the ring. */
#include "apiserver/repoindex.h"

#include "apiserver/watchcache.h"
#include "kinds/imagestream.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TAKE_BATCH 64

struct sw_repoindex {
    sw_api *api;
    pthread_t thread;
    pthread_mutex_t mu;
    json_t *by_repo;   /* "<registry>/<repository>" → {"<ns>/<name>": true} */
    json_t *by_stream; /* "<ns>/<name>" → ["<registry>/<repository>", ...] */
    _Atomic bool stopping;
};

static void add_ref(json_t *repos, const char *ref)
{
    sw_ref r;
    char key[600];
    if (!ref || sw_ref_parse(ref, &r) < 0)
        return;
    snprintf(key, sizeof(key), "%s/%s", r.registry, r.repository);
    json_object_set_new(repos, key, json_true());
}

/* The repositories obj names, as a set. */
static json_t *repos_of(const json_t *obj)
{
    json_t *repos = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(obj, "spec.tags"), i, t)
    {
        if (sw_str_eq(sw_json_str_at(t, "from.kind"), "DockerImage"))
            add_ref(repos, sw_json_str_at(t, "from.name"));
    }
    json_array_foreach(sw_json_at(obj, "status.tags"), i, t)
        add_ref(repos, sw_json_str_at(json_array_get(json_object_get(t, "items"), 0),
                                      "dockerImageReference"));
    return repos;
}

/* Under mu: the stream's entries go; obj's (NULL: none) come. */
static void set_stream(sw_repoindex *x, const char *key, const json_t *obj)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(x->by_stream, key), i, r)
    {
        json_t *set = json_object_get(x->by_repo, json_string_value(r));
        json_object_del(set, key);
        if (set && !json_object_size(set))
            json_object_del(x->by_repo, json_string_value(r));
    }
    json_object_del(x->by_stream, key);
    if (!obj)
        return;
    json_t *repos = repos_of(obj), *list = json_array();
    const char *repo;
    json_t *v;
    json_object_foreach(repos, repo, v)
    {
        json_t *set = json_object_get(x->by_repo, repo);
        if (!set) {
            set = json_object();
            json_object_set_new(x->by_repo, repo, set);
        }
        json_object_set_new(set, key, json_true());
        json_array_append_new(list, json_string(repo));
    }
    json_decref(repos);
    if (json_array_size(list))
        json_object_set_new(x->by_stream, key, list);
    else
        json_decref(list);
}

static char *key_of(const json_t *obj)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
             sw_json_str_at(obj, "metadata.name") ?: "");
    return sw_strdup(key);
}

/* Lists every stream into fresh maps; *rev gets the cache's revision from before the list. */
static int relist(sw_repoindex *x, int64_t *rev)
{
    *rev = sw_watchcache_revision(x->api->cache);
    sw_objects *o = sw_api_objects_new(x->api);
    json_t *items = NULL;
    int error = o->list(o, &sw_kind_imagestream, NULL, &items);
    sw_api_objects_free(o);
    if (error < 0)
        return error;
    pthread_mutex_lock(&x->mu);
    json_object_clear(x->by_repo);
    json_object_clear(x->by_stream);
    size_t i;
    json_t *s;
    json_array_foreach(items, i, s)
    {
        char *key = key_of(s);
        set_stream(x, key, s);
        sw_free(key);
    }
    pthread_mutex_unlock(&x->mu);
    json_decref(items);
    return 0;
}

static void apply(sw_repoindex *x, sw_wevent *e)
{
    if (e->kind != &sw_kind_imagestream || sw_wevent_render(x->api, e) < 0)
        return;
    json_t *obj = sw_wevent_object(e);
    if (!obj)
        return;
    char *key = key_of(obj);
    pthread_mutex_lock(&x->mu);
    set_stream(x, key, e->type == SW_STORE_DELETE ? NULL : obj);
    pthread_mutex_unlock(&x->mu);
    sw_free(key);
    json_decref(obj);
}

static void *index_main(void *arg)
{
    sw_repoindex *x = arg;
    sw_wcursor cur;
    bool listed = false;
    while (!x->stopping) {
        if (!listed) {
            int64_t rev = 0, floor = 0;
            if (relist(x, &rev) < 0 || sw_watchcache_seek(x->api->cache, rev, &cur, &floor) < 0) {
                sw_log(SW_LOG_WARN, "registry notification index: cannot list the streams: %s",
                       sw_error_msg());
                struct timespec ts = {1, 0};
                nanosleep(&ts, NULL);
                continue;
            }
            listed = true;
        }
        sw_wevent *evs[TAKE_BATCH];
        int n = sw_watchcache_take(x->api->cache, &cur, evs, TAKE_BATCH, 500);
        if (n == SW_EGONE) {
            listed = false; /* fell out of the ring: list again */
            continue;
        }
        if (n < 0)
            break; /* the cache is closing */
        for (int i = 0; i < n; i++) {
            apply(x, evs[i]);
            sw_wevent_unref(evs[i]);
        }
    }
    return NULL;
}

int sw_repoindex_new(sw_repoindex **out, sw_api *api)
{
    sw_repoindex *x = sw_calloc(1, sizeof(*x));
    x->api = api;
    x->by_repo = json_object();
    x->by_stream = json_object();
    pthread_mutex_init(&x->mu, NULL);
    if (pthread_create(&x->thread, NULL, index_main, x) != 0) {
        json_decref(x->by_repo);
        json_decref(x->by_stream);
        pthread_mutex_destroy(&x->mu);
        sw_free(x);
        return sw_error_set(SW_ERROR, "cannot start the registry notification index");
    }
    *out = x;
    return 0;
}

void sw_repoindex_free(sw_repoindex *x)
{
    if (!x)
        return;
    x->stopping = true;
    pthread_join(x->thread, NULL);
    json_decref(x->by_repo);
    json_decref(x->by_stream);
    pthread_mutex_destroy(&x->mu);
    sw_free(x);
}

json_t *sw_repoindex_lookup(sw_repoindex *x, const char *registry, const char *repository)
{
    char key[600];
    json_t *out = json_array();
    snprintf(key, sizeof(key), "%s/%s", registry, repository);
    pthread_mutex_lock(&x->mu);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(x->by_repo, key), k, v)
        json_array_append_new(out, json_string(k));
    pthread_mutex_unlock(&x->mu);
    return out;
}
