/* gc: the garbage collector, kube-controller-manager's, as a pure API client. It watches every
 * resource discovery lists with list, watch and delete (events excepted; rediscovered every
 * 30 s, so kinds added later join without code changes) through lean informers into a compact
 * graph (gc_graph.h), and acts on ownerReferences: a dependent whose owners are all gone is
 * deleted (gone = a live read answers 404 or another uid), a dependent of an owner deleting in
 * the foreground goes first and the owner's foregroundDeletion finalizer is removed once no
 * blocking dependent is left, an orphaning owner's uid is removed from its dependents and then
 * its orphan finalizer. Nothing whose owner exists is deleted: every deletion carries uid and
 * resourceVersion preconditions over the state the decision was made on. docs/garbage-
 * collection.md says more. */
#ifndef SW_CONTROLLERS_GC_H
#define SW_CONTROLLERS_GC_H

#include "client/controller.h"
#include "client/rest.h"

typedef struct sw_gc sw_gc;

typedef struct sw_gc_opts {
    int workers;        /* concurrent syncs; 0: 20 (kube's --concurrent-gc-syncs) */
    int rediscovery_ms; /* 0: 30000 */
} sw_gc_opts;

/* c and f must outlive the collector; f's lean informers carry its handlers. */
int sw_gc_new(sw_gc **out, sw_client *c, sw_informers *f, const sw_gc_opts *opts);
int sw_gc_start(sw_gc *gc);
/* Stops the workers and the rediscovery (stop the informer factory first). */
void sw_gc_free(sw_gc *gc);
/* Objects tracked (tests, benchmarks). */
size_t sw_gc_tracked(sw_gc *gc);

#endif
