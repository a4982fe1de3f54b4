/* store: the versioned key-value backend behind the API server.
 * One global revision counts every write; it becomes metadata.resourceVersion. Backends (SQLite,
 * etcd) implement struct sw_store_ops and must pass tests/store/test_contract.c.
 * Keys are opaque byte strings chosen by the API server ("/<group>/<resource>/<ns>/<name>");
 * prefixes select ranges. Values are opaque bytes (JSON objects without resourceVersion). */
#ifndef SW_STORE_H
#define SW_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_store sw_store;
typedef struct sw_store_watcher sw_store_watcher;

typedef struct sw_kv {
    char *key;
    char *value; /* NUL-terminated for convenience; value_len excludes the NUL */
    size_t value_len;
    int64_t mod_rev;    /* revision that wrote this version */
    int64_t create_rev; /* revision that created the key */
} sw_kv;

typedef struct sw_kv_list {
    sw_kv *items;
    size_t count;
    int64_t rev; /* the revision the list is consistent at */
    bool more;   /* further keys exist after the last item (limit reached) */
} sw_kv_list;

typedef struct sw_store_list_opts {
    const char *prefix;      /* required; "" for every key */
    const char *start_after; /* exclusive lower bound (continue); NULL for none */
    int64_t rev;             /* 0: latest; else the state at rev (SW_EGONE if compacted) */
    size_t limit;            /* 0: no limit */
} sw_store_list_opts;

/* SW_STORE_GONE (etcd only, after a long disconnect): the events after the last one delivered
 * were compacted away; ev->rev is the compaction, live events follow from there, and the
 * consumer must start over from a list (key is "", no values). */
enum { SW_STORE_CREATE = 1, SW_STORE_UPDATE = 2, SW_STORE_DELETE = 3, SW_STORE_GONE = 4 };

typedef struct sw_store_event {
    int type;
    int64_t rev;        /* revision of this write */
    int64_t create_rev; /* revision that created the key */
    int64_t prev_rev;   /* revision of the version replaced (0 for create) */
    const char *key;
    const char *value; /* new value; for DELETE the value that was deleted */
    size_t value_len;
    const char *prev_value; /* replaced value (NULL for CREATE) */
    size_t prev_value_len;
} sw_store_event;

/* Called for each event, serially per watch, in strictly increasing revision order, exactly once.
 * It runs on a backend thread (for SQLite: the committing writer's, before the write is
 * acknowledged; for etcd: the watch's own, after) and must not call the store. */
typedef void (*sw_store_event_fn)(const sw_store_event *ev, void *payload);

struct sw_store_ops {
    unsigned version; /* SW_STORE_OPS_VERSION */
    int (*get)(sw_store *s, const char *key, sw_kv *out);
    int (*list)(sw_store *s, const sw_store_list_opts *opts, sw_kv_list *out);
    /* SW_EEXISTS if the key exists. */
    int (*create)(sw_store *s, const char *key, const char *value, size_t len, int64_t *rev_out);
    /* Compare-and-swap: SW_ECONFLICT unless the key's mod_rev == expected_rev (0: any);
     * SW_ENOTFOUND if absent. */
    int (*update)(sw_store *s, const char *key, const char *value, size_t len, int64_t expected_rev,
                  int64_t *rev_out);
    /* SW_ECONFLICT unless mod_rev == expected_rev (0: any); SW_ENOTFOUND if absent. */
    int (*del)(sw_store *s, const char *key, int64_t expected_rev, int64_t *rev_out);
    /* Events with rev > after_rev for keys under prefix: first the history from the backend, then
     * live ones. SW_EGONE if after_rev < the compacted revision. SQLite delivers the history
     * before returning; etcd delivers it (like everything) from its watch thread. */
    int (*watch)(sw_store *s, const char *prefix, int64_t after_rev, sw_store_event_fn fn,
                 void *payload, sw_store_watcher **out);
    /* Stops the watcher (fn never runs again); returns a revision through which it was given
     * every event under its prefix, at least the last one delivered (SQLite: the head when it
     * stopped): a caller that continues from another source must continue after exactly that
     * revision. */
    int64_t (*watch_cancel)(sw_store *s, sw_store_watcher *w);
    /* Drops history at or below target (superseded versions, tombstones); watches and lists at
     * revisions below target then get SW_EGONE. */
    int (*compact)(sw_store *s, int64_t target_rev);
    /* One round of the periodic compaction several servers of one store share: 1 when this
     * call compacted to target, 0 when another server took this round (kube-apiserver's
     * compact_rev_key transaction on etcd; SQLite has one server and always compacts). */
    int (*compact_round)(sw_store *s, int64_t target_rev);
    int64_t (*current_revision)(sw_store *s);
    int64_t (*compacted_revision)(sw_store *s);
    /* 0 when the store takes writes now; else why not (SW_EUNAVAILABLE: etcd has no quorum
     * or cannot be reached; SQLite: its last write failed on the disk). Cheap: cached ~1 s. */
    int (*health)(sw_store *s);
    void (*close)(sw_store *s);
    /* Since version 3, optional (NULL: none). The latest version of key this process has seen,
     * without a read: it may be stale (another server wrote since), so it is only a starting
     * point for an update or delete that compares on its mod_rev. SW_ENOTFOUND when none is
     * kept (the caller reads with get). */
    int (*get_recent)(sw_store *s, const char *key, sw_kv *out);
};

#define SW_STORE_OPS_VERSION 3

/* Every backend's handle starts with this header. */
struct sw_store {
    const struct sw_store_ops *ops;
};

typedef struct sw_sqlite_opts {
    bool sync_full; /* true: fsync every commit (etcd's durability); false: synchronous=NORMAL */
} sw_sqlite_opts;

/* Opens (creating if needed) the SQLite store at path. */
int sw_store_sqlite_open(sw_store **out, const char *path, const sw_sqlite_opts *opts);

typedef struct sw_etcd_opts {
    const char *endpoints; /* "HOST:PORT[,HOST:PORT...]" or URLs; tried in turn on failure */
    const char *prefix;    /* every key under it; NULL: "/registry" */
    const char *cafile, *certfile, *keyfile; /* client TLS (any of them: https) */
} sw_etcd_opts;

/* Connects to etcd (one successful request), reading where it was compacted. */
int sw_store_etcd_open(sw_store **out, const sw_etcd_opts *opts);

/* Thin dispatchers so callers write sw_store_get(s, ...). */
int sw_store_get(sw_store *s, const char *key, sw_kv *out);
/* get_recent when the backend has it and keeps key (*verified = false: compare on mod_rev and
 * read again with get before trusting anything but a successful compare), else get (*verified
 * = true). */
int sw_store_get_recent(sw_store *s, const char *key, sw_kv *out, bool *verified);
int sw_store_list(sw_store *s, const sw_store_list_opts *opts, sw_kv_list *out);
int sw_store_create(sw_store *s, const char *key, const char *value, size_t len, int64_t *rev_out);
int sw_store_update(sw_store *s, const char *key, const char *value, size_t len,
                    int64_t expected_rev, int64_t *rev_out);
int sw_store_delete(sw_store *s, const char *key, int64_t expected_rev, int64_t *rev_out);
int sw_store_watch(sw_store *s, const char *prefix, int64_t after_rev, sw_store_event_fn fn,
                   void *payload, sw_store_watcher **out);
int64_t sw_store_watch_cancel(sw_store *s, sw_store_watcher *w); /* 0 for NULL */
int sw_store_compact(sw_store *s, int64_t target_rev);
int sw_store_compact_round(sw_store *s, int64_t target_rev);
int sw_store_health(sw_store *s);
int64_t sw_store_current_revision(sw_store *s);
int64_t sw_store_compacted_revision(sw_store *s);
void sw_store_close(sw_store *s);

void sw_kv_dispose(sw_kv *kv);
void sw_kv_list_dispose(sw_kv_list *l);

#endif
