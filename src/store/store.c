/* store: backend-independent dispatch and result disposal (see store.h). */
#include "store/store.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/metric.h"
#include "util/time.h"

/* Every write is timed here, whichever backend commits it: from the call to its
 * acknowledgement (SQLite's group commit and fsync, or etcd's Txn round trip). */
static const sw_metric_desc write_seconds = {
    "slipway_store_write_duration_seconds",
    "Store write latency in seconds, from the call to the acknowledged commit, by operation and "
    "result.",
    SW_METRIC_HISTOGRAM,
    {"operation", "result"},
    sw_metric_fast_buckets,
    8,
};
static const sw_metric_desc compactions = {
    "slipway_store_compactions_total",
    "Store compactions, by result (skipped: another server compacted this round).",
    SW_METRIC_COUNTER,
    {"result"},
    NULL,
    0};
static const sw_metric_desc compacted = {"slipway_store_compacted_revision",
                                         "The newest revision compacted away.",
                                         SW_METRIC_GAUGE,
                                         {NULL},
                                         NULL,
                                         0};

static int timed(const char *op, double t0, int error)
{
    /* a refused compare-and-swap or create is an answer, not a failure of the store */
    const char *result = error == 0 ? "ok"
                         : error == SW_ECONFLICT || error == SW_EEXISTS || error == SW_ENOTFOUND
                             ? "conflict"
                             : "error";
    const char *labels[] = {op, result};
    sw_metric_observe(&write_seconds, labels, sw_time_mono_s() - t0);
    return error;
}

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
    double t0 = sw_time_mono_s();
    return timed("create", t0, s->ops->create(s, key, value, len, rev_out));
}

int sw_store_update(sw_store *s, const char *key, const char *value, size_t len,
                    int64_t expected_rev, int64_t *rev_out)
{
    double t0 = sw_time_mono_s();
    return timed("update", t0, s->ops->update(s, key, value, len, expected_rev, rev_out));
}

int sw_store_delete(sw_store *s, const char *key, int64_t expected_rev, int64_t *rev_out)
{
    double t0 = sw_time_mono_s();
    return timed("delete", t0, s->ops->del(s, key, expected_rev, rev_out));
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

static int counted(sw_store *s, int error)
{
    const char *result[] = {error < 0 ? "error" : error == 1 ? "ok" : "skipped"};
    sw_metric_add(&compactions, result, 1);
    if (error >= 0)
        sw_metric_set(&compacted, NULL, (double)s->ops->compacted_revision(s));
    return error;
}

int sw_store_compact(sw_store *s, int64_t target_rev)
{
    int error = s->ops->compact(s, target_rev);
    counted(s, error < 0 ? error : 1);
    return error;
}

int sw_store_compact_round(sw_store *s, int64_t target_rev)
{
    return counted(s, s->ops->compact_round(s, target_rev));
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
