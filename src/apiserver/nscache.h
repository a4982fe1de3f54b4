/* nscache: which namespaces exist and which are terminating, kept in memory from the server's
 * one store watch (the watch cache's, which hands each event on), so a write into a namespace
 * does not cost a store read. On SQLite the cache is updated on the committing writer's thread
 * before that write is acknowledged, so it never answers older than
 * an acknowledged namespace change; on etcd (several servers, events arrive after the write)
 * a namespace the cache does not know is read from the store before it is called absent, as
 * kube-apiserver's namespace lifecycle admission does. */
#ifndef SW_NSCACHE_H
#define SW_NSCACHE_H

#include "store/store.h"

typedef struct sw_nscache sw_nscache;

enum { SW_NS_ABSENT = 0, SW_NS_ACTIVE = 1, SW_NS_TERMINATING = 2 };

/* Lists the stored namespaces; *rev_out is the list's revision: the events after it must be
 * given to sw_nscache_event. */
int sw_nscache_new(sw_nscache **out, sw_store *store, int64_t *rev_out);
/* One store event (any key; those of namespaces count), in revision order, on the watch's
 * thread. */
void sw_nscache_event(sw_nscache *c, const sw_store_event *ev);
/* SW_NS_ABSENT, SW_NS_ACTIVE or SW_NS_TERMINATING. */
int sw_nscache_state(sw_nscache *c, const char *ns);
void sw_nscache_free(sw_nscache *c);

#endif
