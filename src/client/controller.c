/* controller: work queue + workers around a reconcile callback, the shared informer factory,
 * and the retry-on-conflict loop (see controller.h). */
#include "client/controller.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <string.h>

struct sw_controller {
    char *name;
    sw_reconcile_fn reconcile;
    void *ctx;
    sw_workqueue *queue;
    pthread_t *threads;
    int nworkers, started;
    pthread_mutex_t mu;
    bool stopping;
};

int sw_controller_new(sw_controller **out, const sw_controller_opts *opts)
{
    sw_controller *c = sw_calloc(1, sizeof(*c));
    c->name = sw_strdup(opts->name ? opts->name : "controller");
    c->reconcile = opts->reconcile;
    c->ctx = opts->ctx;
    c->nworkers = opts->workers > 0 ? opts->workers : 1;
    pthread_mutex_init(&c->mu, NULL);
    sw_workqueue_opts qo = opts->queue;
    if (!qo.name)
        qo.name = c->name; /* freed after the queue */
    int error = sw_workqueue_new(&c->queue, &qo);
    if (error < 0) {
        sw_controller_free(c);
        return error;
    }
    *out = c;
    return 0;
}

static void run_one(sw_controller *c, const char *key)
{
    int r = c->reconcile(c->ctx, key);
    if (r == SW_RECONCILE_BACKOFF) {
        sw_workqueue_add_rate_limited(c->queue, key);
        return;
    }
    if (r < 0) {
        /* every failure is worth a line at the default level: the backoff spaces them */
        sw_log(SW_LOG_WARN, "%s: %s: %s (retrying)", c->name, key, sw_error_msg());
        sw_workqueue_add_rate_limited(c->queue, key);
        return;
    }
    sw_workqueue_forget(c->queue, key);
    if (r > 0)
        sw_workqueue_add_after(c->queue, key, r);
}

static void *worker_main(void *arg)
{
    sw_controller *c = arg;
    char *key;
    while (sw_workqueue_get(c->queue, &key) == 0) {
        run_one(c, key);
        sw_workqueue_done(c->queue, key);
        sw_free(key);
    }
    return NULL;
}

int sw_controller_start(sw_controller *c)
{
    pthread_mutex_lock(&c->mu);
    bool again = c->threads || c->stopping;
    if (!again)
        c->threads = sw_calloc((size_t)c->nworkers, sizeof(*c->threads));
    pthread_mutex_unlock(&c->mu);
    if (again)
        return sw_error_set(SW_EINVALID, "%s: started twice", c->name);
    for (; c->started < c->nworkers; c->started++)
        if (pthread_create(&c->threads[c->started], NULL, worker_main, c) != 0)
            return sw_error_set(SW_ERROR, "%s: cannot start its workers", c->name);
    return 0;
}

void sw_controller_enqueue(sw_controller *c, const char *key)
{
    sw_workqueue_add(c->queue, key);
}

void sw_controller_enqueue_after(sw_controller *c, const char *key, int64_t delay_ms)
{
    if (delay_ms <= 0)
        sw_workqueue_add(c->queue, key);
    else
        sw_workqueue_add_after(c->queue, key, delay_ms);
}

size_t sw_controller_pending(sw_controller *c)
{
    return sw_workqueue_len(c->queue);
}

bool sw_controller_stopping(sw_controller *c)
{
    pthread_mutex_lock(&c->mu);
    bool s = c->stopping;
    pthread_mutex_unlock(&c->mu);
    return s;
}

void sw_controller_stop(sw_controller *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    bool join = !c->stopping;
    c->stopping = true;
    pthread_mutex_unlock(&c->mu);
    if (!join)
        return;
    sw_workqueue_discard(c->queue);
    for (int i = 0; i < c->started; i++)
        pthread_join(c->threads[i], NULL);
}

void sw_controller_free(sw_controller *c)
{
    if (!c)
        return;
    if (c->queue)
        sw_controller_stop(c);
    sw_workqueue_free(c->queue);
    pthread_mutex_destroy(&c->mu);
    sw_free(c->threads);
    sw_free(c->name);
    sw_free(c);
}

/* ---- informer factory ---- */

typedef struct entry {
    struct entry *next;
    char *group, *version, *plural;
    bool lean, started;
    sw_informer *inf;
} entry;

struct sw_informers {
    sw_client *client;
    pthread_mutex_t mu;
    entry *list;
    bool stopped;
};

int sw_informers_new(sw_informers **out, sw_client *c)
{
    sw_informers *f = sw_calloc(1, sizeof(*f));
    f->client = c;
    pthread_mutex_init(&f->mu, NULL);
    *out = f;
    return 0;
}

sw_informer *sw_informers_get(sw_informers *f, const sw_resource *r, bool lean,
                              const sw_informer_opts *opts)
{
    const char *g = r->group ? r->group : "";
    pthread_mutex_lock(&f->mu);
    entry *e;
    for (e = f->list; e; e = e->next)
        if (e->lean == lean && !strcmp(e->group, g) && !strcmp(e->version, r->version) &&
            !strcmp(e->plural, r->plural))
            break;
    if (!e) {
        sw_informer_opts o = opts ? *opts : (sw_informer_opts){0};
        o.lean = lean;
        e = sw_calloc(1, sizeof(*e));
        e->group = sw_strdup(g);
        e->version = sw_strdup(r->version);
        e->plural = sw_strdup(r->plural);
        e->lean = lean;
        sw_informer_new(&e->inf, f->client, r, &o, NULL);
        e->next = f->list;
        f->list = e;
    }
    pthread_mutex_unlock(&f->mu);
    return e->inf;
}

int sw_informers_start(sw_informers *f)
{
    int error = 0;
    pthread_mutex_lock(&f->mu);
    for (entry *e = f->list; e && error == 0 && !f->stopped; e = e->next) {
        if (e->started)
            continue;
        error = sw_informer_start(e->inf);
        e->started = error == 0;
    }
    pthread_mutex_unlock(&f->mu);
    return error;
}

int sw_informers_wait_synced(sw_informers *f, int timeout_ms)
{
    int64_t deadline = sw_time_mono_ms() + timeout_ms;
    pthread_mutex_lock(&f->mu);
    entry *list = f->list; /* entries are only ever prepended, never freed before free() */
    pthread_mutex_unlock(&f->mu);
    for (entry *e = list; e; e = e->next) {
        int64_t left = deadline - sw_time_mono_ms();
        if (e->started && sw_informer_wait_synced(e->inf, left > 0 ? (int)left : 0) < 0)
            return SW_ETIMEOUT;
    }
    return 0;
}

void sw_informers_stop(sw_informers *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopped = true;
    entry *list = f->list;
    pthread_mutex_unlock(&f->mu);
    for (entry *e = list; e; e = e->next)
        sw_informer_stop(e->inf);
}

void sw_informers_free(sw_informers *f)
{
    if (!f)
        return;
    sw_informers_stop(f);
    for (entry *e = f->list, *next; e; e = next) {
        next = e->next;
        sw_informer_free(e->inf);
        sw_free(e->group);
        sw_free(e->version);
        sw_free(e->plural);
        sw_free(e);
    }
    pthread_mutex_destroy(&f->mu);
    sw_free(f);
}

/* ---- read-modify-write ---- */

int sw_retry_on_conflict(int attempts, int (*fn)(void *ctx), void *ctx)
{
    int error = 0, pause_ms = 10;
    if (attempts <= 0)
        attempts = 10;
    for (int i = 0; i < attempts; i++) {
        if ((error = fn(ctx)) != SW_ECONFLICT)
            return error;
        if (i + 1 < attempts) {
            sw_time_sleep_ms(pause_ms);
            pause_ms = pause_ms < 200 ? pause_ms * 2 : 200;
        }
    }
    return error;
}
