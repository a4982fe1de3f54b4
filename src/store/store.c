/* store: backend-independent dispatch and result disposal (see store.h). */
#include "store/store.h"

#include "util/alloc.h"

int sw_store_get(sw_store *s, const char *key, sw_kv *out)
{
    return s->ops->get(s, key, out);
}

int sw_store_get_recent(sw_store *s, const char *key, sw_kv *out, bool *verified)
{
    *verified = false;
    if (s->ops->version >= 3 && s->ops->get_recent && s->ops->get_recent(s, key, out) == 0)
        return 0;
    *verified = true;
    return s->ops->get(s, key, out);
}

int sw_store_list(sw_store *s, const sw_store_list_opts *opts, sw_kv_list *out)
{
    return s->ops->list(s, opts, out);
}

int sw_store_create(sw_store *s, const char *key, const char *value, size_t len, int64_t *rev_out)
{
    return s->ops->create(s, key, value, len, rev_out);
}

int sw_store_update(sw_store *s, const char *key, const char *value, size_t len,
                    int64_t expected_rev, int64_t *rev_out)
{
    return s->ops->update(s, key, value, len, expected_rev, rev_out);
}

int sw_store_delete(sw_store *s, const char *key, int64_t expected_rev, int64_t *rev_out)
{
    return s->ops->del(s, key, expected_rev, rev_out);
}

int sw_store_watch(sw_store *s, const char *prefix, int64_t after_rev, sw_store_event_fn fn,
                   void *payload, sw_store_watcher **out)
{
    return s->ops->watch(s, prefix, after_rev, fn, payload, out);
}

int64_t sw_store_watch_cancel(sw_store *s, sw_store_watcher *w)
{
    return w ? s->ops->watch_cancel(s, w) : 0;
}

int sw_store_compact(sw_store *s, int64_t target_rev)
{
    return s->ops->compact(s, target_rev);
}

int sw_store_compact_round(sw_store *s, int64_t target_rev)
{
    return s->ops->compact_round(s, target_rev);
}

int sw_store_health(sw_store *s)
{
    return s->ops->health(s);
}

int64_t sw_store_current_revision(sw_store *s)
{
    return s->ops->current_revision(s);
}

int64_t sw_store_compacted_revision(sw_store *s)
{
    return s->ops->compacted_revision(s);
}

void sw_store_close(sw_store *s)
{
    if (s)
        s->ops->close(s);
}

void sw_kv_dispose(sw_kv *kv)
{
    sw_free(kv->key);
    sw_free(kv->value);
    kv->key = kv->value = NULL;
}

void sw_kv_list_dispose(sw_kv_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        sw_kv_dispose(&l->items[i]);
    sw_free(l->items);
    l->items = NULL;
    l->count = 0;
}
