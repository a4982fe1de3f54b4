/* gc_graph: the garbage collector's graph of owners and dependents (kube-controller-manager's
 * GraphBuilder), kept compact — a few hundred bytes per object — from lean informers' events,
 * and the view of one object the collector decides on. Pure: no HTTP. The collector (gc.c)
 * feeds it events and gets back, through hooks, the uids to look at again.
 *
 * Nodes are keyed by uid. An owner named by a reference but not (or no longer) seen is a
 * virtual node with the identity the reference gives it; once a live read proved it gone it is
 * marked absent, and every dependent that still names it sees that without another read (the
 * absent-owner cache). A virtual node lives while references to it do.
 *
 * Thread-safe: one mutex; hooks run under it and must only queue work. */
#ifndef SW_CONTROLLERS_GC_GRAPH_H
#define SW_CONTROLLERS_GC_GRAPH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_gc_graph sw_gc_graph;

typedef struct sw_gc_graph_hooks {
    void (*attempt_delete)(void *ctx, const char *uid); /* look at uid's owners */
    void (*attempt_orphan)(void *ctx, const char *uid); /* orphan uid's dependents */
    void *ctx;
} sw_gc_graph_hooks;

/* hooks is copied. */
sw_gc_graph *sw_gc_graph_new(const sw_gc_graph_hooks *hooks);
void sw_gc_graph_free(sw_gc_graph *g);

/* The id of (group, kind), interned: ids are small, stable, and shared by every object and
 * reference of that kind. Thread-safe. */
int sw_gc_graph_kind(sw_gc_graph *g, const char *group, const char *kind);
/* The group and kind of an id (borrowed, valid as long as the graph). */
void sw_gc_graph_kind_name(sw_gc_graph *g, int kind, const char **group, const char **kind_out);

/* An object of kind seen (listed, added or modified): obj has metadata (name, namespace, uid,
 * resourceVersion, ownerReferences, finalizers, deletionTimestamp). */
void sw_gc_graph_upsert(sw_gc_graph *g, int kind, const json_t *obj);
/* An object deleted (its uid). With dependents left it turns virtual and is itself looked at
 * (a live read proves it gone, then its dependents are looked at). */
void sw_gc_graph_remove(sw_gc_graph *g, const char *uid);
/* A list of kind starts / ended: the objects of kind that list did not hold are removed as if
 * deleted. */
void sw_gc_graph_list_start(sw_gc_graph *g, int kind);
void sw_gc_graph_list_done(sw_gc_graph *g, int kind);
/* A live read proved uid gone (404, or its name holds another uid): its node turns absent and
 * every dependent but except (the one deciding now, or NULL) is looked at again. */
void sw_gc_graph_mark_absent(sw_gc_graph *g, const char *uid, const char *except);

/* ---- the view the collector decides on ---- */

enum {
    SW_GC_OWNER_UNKNOWN = 0, /* not seen: a live read must tell */
    SW_GC_OWNER_PRESENT,     /* seen, not deleting its dependents */
    SW_GC_OWNER_WAITING,     /* seen deleting with foregroundDeletion */
    SW_GC_OWNER_ABSENT,      /* proved gone */
};

/* Strings of the view are owned by it (sw_gc_item_dispose frees them). */
typedef struct sw_gc_owner {
    char *uid;
    int kind;        /* the reference's kind */
    char *name;      /* the reference's name */
    char *ns;        /* the namespace the owner node holds ("" cluster-scoped) */
    int state;       /* SW_GC_OWNER_*: UNKNOWN whenever the reference's kind or name are not
                      * the owner node's (then only a live read by them can tell) */
    bool block;      /* the reference has blockOwnerDeletion */
    bool controller; /* the reference has controller */
    bool matches;    /* the reference's kind and name are the owner node's */
    bool observed;   /* the owner node was seen by an informer (not only named) */
} sw_gc_owner;

typedef struct sw_gc_item {
    char *uid;
    int kind;
    char *ns; /* "" for a cluster-scoped object */
    char *name;
    int64_t rv;               /* resourceVersion seen, 0 when not a number */
    bool virtual_node;        /* never seen itself: only named by references */
    bool absent;              /* proved gone */
    bool deleting;            /* has deletionTimestamp */
    bool deleting_dependents; /* deleting with foregroundDeletion */
    bool orphan_finalizer;    /* has the orphan finalizer */
    bool foreground_finalizer;
    sw_gc_owner *owners; /* the references as last seen */
    size_t nowners;
    char **dependents; /* uids of every dependent */
    size_t ndependents;
    size_t nblocking_all; /* dependents whose reference blocks this one's deletion */
    char **blocking;      /* those of them to look at: not itself, not deleting their own */
    size_t nblocking;
    bool dependent_deleting_dependents; /* some dependent is itself deleting its dependents */
} sw_gc_item;

/* A copy of what the graph knows of uid: 0, or SW_ENOTFOUND when it holds no such node.
 * Dispose with sw_gc_item_dispose (also after a failure). */
int sw_gc_graph_item(sw_gc_graph *g, const char *uid, sw_gc_item *out);
void sw_gc_item_dispose(sw_gc_item *it);
/* Nodes held, virtual ones included. */
size_t sw_gc_graph_size(sw_gc_graph *g);

#endif
