/* store/recent: a bounded, direct-mapped cache of the latest version a backend has seen of each
 * key (from its own reads, its writes, a failed compare and its watch), so that an update can
 * start from it without a read first, as kube-apiserver starts from its watch cache. It may be
 * stale (another server wrote since): callers must write with a compare on mod_rev, which
 * catches that. One mutex; one slot per hash, a colliding key replaces the slot's; values over
 * max_value and any beyond max_bytes in all are not kept. Thread-safe. */
#ifndef SW_STORE_RECENT_H
#define SW_STORE_RECENT_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sw_recent sw_recent;

sw_recent *sw_recent_new(size_t slots, size_t max_value, size_t max_bytes);
void sw_recent_free(sw_recent *r);
/* Keeps this version of key unless the slot holds a newer one of the same key; create_rev 0
 * keeps the slot's (an update's reply does not carry it). */
void sw_recent_put(sw_recent *r, const char *key, const char *value, size_t len, int64_t mod_rev,
                   int64_t create_rev);
/* Like put, but only when the slot already holds key (the watch refreshes, never fills). */
void sw_recent_refresh(sw_recent *r, const char *key, const char *value, size_t len,
                       int64_t mod_rev, int64_t create_rev);
/* Forgets key (deleted) when its slot holds a version at or below mod_rev (0: any). */
void sw_recent_drop(sw_recent *r, const char *key, int64_t mod_rev);
/* 0 and a copy in out (the caller disposes it), or SW_ENOTFOUND when not kept. */
int sw_recent_get(sw_recent *r, const char *key, sw_kv *out);

#endif
