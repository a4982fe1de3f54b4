/* controller: the scaffold every slipway controller stands on, client-go's controller pattern.
 * A controller is a name, a worker count and a reconcile(key) callback; the scaffold owns the
 * rate-limited work queue, the worker threads, stop and join. Informers come from a shared
 * factory (sw_informers): two controllers that watch one resource share one watch and one
 * cache. sw_retry_on_conflict is the one read-modify-write loop controllers use.
 *
 * Threading: reconcile runs on the workers, at most one call per key at a time (the queue's
 * guarantee); informer handlers run on informer threads and only enqueue. Stop discards the
 * queued keys and joins the workers; a reconcile in progress finishes first. */
#ifndef SW_CLIENT_CONTROLLER_H
#define SW_CLIENT_CONTROLLER_H

#include "client/informer.h"
#include "client/rest.h"
#include "client/workqueue.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sw_controller sw_controller;

/* Reconciles key: 0 when done (the key's failure count is cleared), a positive number of
 * milliseconds to look again after that long (also clears it), SW_RECONCILE_BACKOFF to look
 * again after the key's next backoff without it being an error (a build waiting for its base),
 * or a negative SW_E* code: the key is retried with the queue's per-key backoff and the error
 * logged as a warning (the backoff spaces the lines). */
typedef int (*sw_reconcile_fn)(void *ctx, const char *key);

#define SW_RECONCILE_BACKOFF (-1000)

typedef struct sw_controller_opts {
    const char *name; /* for logs: "garbagecollector" */
    int workers;      /* 0: 1 */
    sw_reconcile_fn reconcile;
    void *ctx;
    sw_workqueue_opts queue; /* the rate limiter; zeros: client-go's defaults */
} sw_controller_opts;

/* Nothing runs until start. */
int sw_controller_new(sw_controller **out, const sw_controller_opts *opts);
int sw_controller_start(sw_controller *c);
/* Queues key (deduplicated while queued). Safe from any thread, also before start and after
 * stop (then ignored). */
void sw_controller_enqueue(sw_controller *c, const char *key);
void sw_controller_enqueue_after(sw_controller *c, const char *key, int64_t delay_ms);
/* Discards queued keys, lets running reconciles finish, joins the workers. Idempotent. */
void sw_controller_stop(sw_controller *c);
/* Stops if needed, then frees. */
void sw_controller_free(sw_controller *c);
/* Keys waiting to be reconciled (tests, metrics). */
size_t sw_controller_pending(sw_controller *c);
bool sw_controller_stopping(sw_controller *c);

/* ---- the shared informer factory ---- */

typedef struct sw_informers sw_informers;

/* c must outlive the factory. */
int sw_informers_new(sw_informers **out, sw_client *c);
/* The factory's informer of r in lean or caching mode (see sw_informer_opts.lean): made on the
 * first call with opts (NULL: defaults), shared by every later call whatever their opts. Add
 * handlers and indexes before sw_informers_start. */
sw_informer *sw_informers_get(sw_informers *f, const sw_resource *r, bool lean,
                              const sw_informer_opts *opts);
/* Starts every informer not started yet (informers made later are started by a later call). */
int sw_informers_start(sw_informers *f);
/* Waits until every started informer listed once, up to timeout_ms: 0 or SW_ETIMEOUT. */
int sw_informers_wait_synced(sw_informers *f, int timeout_ms);
/* Stops every informer (their caches stay readable); call before freeing the controllers that
 * hold handlers on them. */
void sw_informers_stop(sw_informers *f);
void sw_informers_free(sw_informers *f);

/* ---- read-modify-write ---- */

/* Runs fn until it returns anything but SW_ECONFLICT, at most attempts times (0: 10), with a
 * short growing pause between tries: client-go's RetryOnConflict. fn re-reads what it
 * changes. */
int sw_retry_on_conflict(int attempts, int (*fn)(void *ctx), void *ctx);

#endif
