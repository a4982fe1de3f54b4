/* nscache: namespace existence and termination from the server's store watch (see nscache.h).
 * The set is a jansson object used as a string-keyed hash map ("ns" -> true when terminating),
 * guarded by one mutex; it is filled by a list and kept by the events after the list. */
#include "apiserver/nscache.h"

#include "apiserver/object.h"

#include "kinds/core.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <jansson.h>
#include <pthread.h>
#include <string.h>

struct sw_nscache {
    pthread_mutex_t mu;
    json_t *names; /* name -> json_true() when terminating, json_false() when active */
    sw_store *store;
    char prefix[64]; /* the namespaces' keys */
    size_t prefix_len;
};

/* True when the stored namespace carries a deletionTimestamp. */
static bool terminating(const char *value, size_t len)
{
    json_t *obj = NULL;
    if (sw_json_parse(value, len, SW_JSON_MAX_DEPTH, 0, &obj) < 0)
        return false;
    bool t = sw_json_at(obj, "metadata.deletionTimestamp") != NULL;
    json_decref(obj);
    return t;
}

static void put(sw_nscache *c, const char *key, const char *value, size_t len, bool gone)
{
    if (strncmp(key, c->prefix, c->prefix_len))
        return;
    const char *name = key + c->prefix_len;
    if (!*name || strchr(name, '/'))
        return;
    pthread_mutex_lock(&c->mu);
    if (gone)
        json_object_del(c->names, name);
    else
        json_object_set_new(c->names, name, json_boolean(terminating(value, len)));
    pthread_mutex_unlock(&c->mu);
}

/* Runs on the committing writer's thread, before the write is acknowledged (SQLite), or on the
 * store's watch thread (etcd). After SW_STORE_GONE the entries may be stale: the set is dropped
 * and every lookup then reads the store until the watch has refilled it. */
void sw_nscache_event(sw_nscache *c, const sw_store_event *ev)
{
    if (ev->type == SW_STORE_GONE) {
        pthread_mutex_lock(&c->mu);
        json_object_clear(c->names);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    put(c, ev->key, ev->value, ev->value_len, ev->type == SW_STORE_DELETE);
}

int sw_nscache_new(sw_nscache **out, sw_store *store, int64_t *rev_out)
{
    sw_nscache *c = sw_calloc(1, sizeof(*c));
    sw_kv_list l = {0};
    pthread_mutex_init(&c->mu, NULL);
    c->names = json_object();
    c->store = store;
    sw_api_key(&sw_kind_namespace, NULL, "", c->prefix, sizeof(c->prefix));
    c->prefix_len = strlen(c->prefix);
    sw_store_list_opts lo = {.prefix = c->prefix};
    int error = sw_store_list(store, &lo, &l);
    for (size_t i = 0; error == 0 && i < l.count; i++)
        put(c, l.items[i].key, l.items[i].value, l.items[i].value_len, false);
    *rev_out = l.rev;
    sw_kv_list_dispose(&l);
    if (error < 0) {
        sw_nscache_free(c);
        return error;
    }
    *out = c;
    return 0;
}

int sw_nscache_state(sw_nscache *c, const char *ns)
{
    pthread_mutex_lock(&c->mu);
    json_t *v = json_object_get(c->names, ns);
    int state = !v ? SW_NS_ABSENT : json_is_true(v) ? SW_NS_TERMINATING : SW_NS_ACTIVE;
    pthread_mutex_unlock(&c->mu);
    if (state == SW_NS_ABSENT) {
        /* created through another server, or just now: the store decides */
        char key[SW_API_KEY_MAX];
        sw_kv kv = {0};
        sw_api_key(&sw_kind_namespace, NULL, ns, key, sizeof(key));
        if (sw_store_get(c->store, key, &kv) == 0)
            state = terminating(kv.value, kv.value_len) ? SW_NS_TERMINATING : SW_NS_ACTIVE;
        sw_kv_dispose(&kv);
    }
    return state;
}

void sw_nscache_free(sw_nscache *c)
{
    if (!c)
        return;
    json_decref(c->names);
    pthread_mutex_destroy(&c->mu);
    sw_free(c);
}
