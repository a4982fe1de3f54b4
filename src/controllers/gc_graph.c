/* gc_graph: nodes in a chained hash by uid (seeded FNV-1a), owner edges as pointers to owner
 * nodes, dependent lists as pointer arrays, namespaces and kinds interned (see gc_graph.h). */
#include "controllers/gc_graph.h"

#include "meta/ownerref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <pthread.h>
#include <string.h>

enum {
    N_VIRTUAL = 1 << 0,  /* only named by references */
    N_ABSENT = 1 << 1,   /* proved gone by a live read */
    N_DELETING = 1 << 2, /* deletionTimestamp */
    N_DEL_DEPS = 1 << 3, /* deleting with foregroundDeletion */
    N_ORPHAN = 1 << 4,   /* orphan finalizer */
    N_FG = 1 << 5,       /* foregroundDeletion finalizer */
};

enum { REF_BLOCK = 1, REF_CONTROLLER = 2 };

typedef struct gnode gnode;

/* One reference: the owner node (by uid) and the coordinates the reference itself gives
 * (kind, name), which may differ from the node's: a reference is only as good as all of them. */
typedef struct gref {
    gnode *owner;
    char *name;
    uint16_t kind;
    uint8_t flags;
} gref;

struct gnode {
    gnode *next; /* hash chain */
    char *uid;
    char *name;
    const char *ns; /* interned */
    int64_t rv;
    uint32_t gen; /* the list generation of its kind it was last seen in */
    uint16_t kind;
    uint8_t flags;
    uint32_t nowners;
    gref *owners;
    gnode **deps;
    uint32_t ndeps, capdeps;
};

typedef struct gkind {
    char *group, *kind;
    uint32_t gen;
} gkind;

#define MAX_KINDS 4096    /* kinds named by references; past it they count as unknown */
#define MAX_KIND_NAME 316 /* group (253) + kind (63): a longer one is no kind any server serves */

struct sw_gc_graph {
    pthread_mutex_t mu;
    sw_gc_graph_hooks hooks;
    gnode **buckets;
    size_t nbuckets, count;
    uint64_t seed;
    json_t *namespaces; /* interned namespace strings (keys) */
    gkind *kinds;
    size_t nkinds, capkinds;
    json_t *kind_ids; /* "group/kind" -> id */
};

/* ---- tables ---- */

static size_t bucket_of(const sw_gc_graph *g, const char *uid)
{
    return (size_t)(sw_fnv1a(g->seed, uid, strlen(uid)) & (g->nbuckets - 1));
}

static gnode *find(const sw_gc_graph *g, const char *uid)
{
    for (gnode *n = g->buckets[bucket_of(g, uid)]; n; n = n->next)
        if (!strcmp(n->uid, uid))
            return n;
    return NULL;
}

static void grow(sw_gc_graph *g)
{
    size_t nb = g->nbuckets * 2;
    gnode **b = sw_calloc(nb, sizeof(*b));
    for (size_t i = 0; i < g->nbuckets; i++) {
        for (gnode *n = g->buckets[i], *next; n; n = next) {
            next = n->next;
            size_t at = (size_t)(sw_fnv1a(g->seed, n->uid, strlen(n->uid)) & (nb - 1));
            n->next = b[at];
            b[at] = n;
        }
    }
    sw_free(g->buckets);
    g->buckets = b;
    g->nbuckets = nb;
}

static const char *intern_ns(sw_gc_graph *g, const char *ns)
{
    if (!ns)
        ns = "";
    void *it = json_object_iter_at(g->namespaces, ns);
    if (!it) {
        json_object_set_new(g->namespaces, ns, json_true());
        it = json_object_iter_at(g->namespaces, ns);
    }
    return json_object_iter_key(it);
}

/* The id of (group, kind); 0 (no kind: never mapped, so never collected for) once MAX_KINDS
 * are known or for names no server could serve: references from clients cannot grow the
 * table without bound. */
static int kind_id(sw_gc_graph *g, const char *group, const char *kind)
{
    char key[MAX_KIND_NAME + 2];
    group = group ? group : "";
    kind = kind ? kind : "";
    if (strlen(group) + strlen(kind) > MAX_KIND_NAME)
        return 0;
    snprintf(key, sizeof(key), "%s/%s", group, kind);
    json_t *id = json_object_get(g->kind_ids, key);
    if (id)
        return (int)json_integer_value(id);
    if (g->nkinds >= MAX_KINDS)
        return 0;
    if (g->nkinds == g->capkinds) {
        g->capkinds = g->capkinds ? g->capkinds * 2 : 16;
        g->kinds = sw_realloc(g->kinds, g->capkinds * sizeof(*g->kinds));
    }
    g->kinds[g->nkinds] = (gkind){sw_strdup(group), sw_strdup(kind), 0};
    json_object_set_new(g->kind_ids, key, json_integer((json_int_t)g->nkinds));
    return (int)g->nkinds++;
}

sw_gc_graph *sw_gc_graph_new(const sw_gc_graph_hooks *hooks)
{
    sw_gc_graph *g = sw_calloc(1, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    g->hooks = *hooks;
    g->nbuckets = 1024;
    g->buckets = sw_calloc(g->nbuckets, sizeof(*g->buckets));
    sw_random_bytes(&g->seed, sizeof(g->seed));
    g->namespaces = json_object();
    g->kind_ids = json_object();
    kind_id(g, "", ""); /* id 0: no kind */
    return g;
}

static void refs_free(gref *refs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        sw_free(refs[i].name);
    sw_free(refs);
}

static void node_free(gnode *n)
{
    sw_free(n->uid);
    sw_free(n->name);
    refs_free(n->owners, n->nowners);
    sw_free(n->deps);
    sw_free(n);
}

void sw_gc_graph_free(sw_gc_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nbuckets; i++)
        for (gnode *n = g->buckets[i], *next; n; n = next) {
            next = n->next;
            node_free(n);
        }
    for (size_t i = 0; i < g->nkinds; i++) {
        sw_free(g->kinds[i].group);
        sw_free(g->kinds[i].kind);
    }
    sw_free(g->kinds);
    sw_free(g->buckets);
    json_decref(g->namespaces);
    json_decref(g->kind_ids);
    pthread_mutex_destroy(&g->mu);
    sw_free(g);
}

int sw_gc_graph_kind(sw_gc_graph *g, const char *group, const char *kind)
{
    pthread_mutex_lock(&g->mu);
    int id = kind_id(g, group, kind);
    pthread_mutex_unlock(&g->mu);
    return id;
}

void sw_gc_graph_kind_name(sw_gc_graph *g, int kind, const char **group, const char **kind_out)
{
    pthread_mutex_lock(&g->mu);
    bool ok = kind >= 0 && (size_t)kind < g->nkinds;
    *group = ok ? g->kinds[kind].group : "";
    *kind_out = ok ? g->kinds[kind].kind : "";
    pthread_mutex_unlock(&g->mu);
}

size_t sw_gc_graph_size(sw_gc_graph *g)
{
    pthread_mutex_lock(&g->mu);
    size_t n = g->count;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* ---- nodes and edges (under mu) ---- */

static gnode *node_new(sw_gc_graph *g, const char *uid)
{
    if (g->count >= g->nbuckets)
        grow(g);
    gnode *n = sw_calloc(1, sizeof(*n));
    n->uid = sw_strdup(uid);
    n->ns = intern_ns(g, "");
    size_t at = bucket_of(g, uid);
    n->next = g->buckets[at];
    g->buckets[at] = n;
    g->count++;
    return n;
}

static void node_unhash(sw_gc_graph *g, gnode *n)
{
    for (gnode **p = &g->buckets[bucket_of(g, n->uid)]; *p; p = &(*p)->next) {
        if (*p == n) {
            *p = n->next;
            g->count--;
            return;
        }
    }
}

static void set_name(gnode *n, const char *name)
{
    if (n->name && !strcmp(n->name, name ? name : ""))
        return;
    sw_free(n->name);
    n->name = sw_strdup(name ? name : "");
}

static void add_dep(gnode *owner, gnode *dep)
{
    if (owner->ndeps == owner->capdeps) {
        owner->capdeps = owner->capdeps ? owner->capdeps * 2 : 2;
        owner->deps = sw_realloc(owner->deps, owner->capdeps * sizeof(*owner->deps));
    }
    owner->deps[owner->ndeps++] = dep;
}

static void drop_dep(gnode *owner, gnode *dep)
{
    for (uint32_t i = 0; i < owner->ndeps; i++) {
        if (owner->deps[i] == dep) {
            owner->deps[i] = owner->deps[--owner->ndeps];
            break;
        }
    }
    if (!owner->ndeps) {
        sw_free(owner->deps);
        owner->deps = NULL;
        owner->capdeps = 0;
    }
}

/* A virtual node no reference names any more goes. */
static void release(sw_gc_graph *g, gnode *n)
{
    if ((n->flags & N_VIRTUAL) && !n->ndeps) {
        node_unhash(g, n);
        node_free(n);
    }
}

static void attempt_delete(sw_gc_graph *g, const gnode *n)
{
    g->hooks.attempt_delete(g->hooks.ctx, n->uid);
}

static void attempt_dependents(sw_gc_graph *g, const gnode *n)
{
    for (uint32_t i = 0; i < n->ndeps; i++)
        attempt_delete(g, n->deps[i]);
}

static gref *find_ref(gnode *n, const gnode *owner)
{
    for (uint32_t i = 0; i < n->nowners; i++)
        if (n->owners[i].owner == owner)
            return &n->owners[i];
    return NULL;
}

/* Whether a reference's coordinates (kind, name) are the owner node's own. */
static bool ref_matches(const gref *r)
{
    return r->kind == r->owner->kind && r->owner->name && !strcmp(r->name, r->owner->name);
}

/* The reference list of obj replaces n's: edges come and go, and what they change is looked at
 * again (a new unknown owner, an owner already gone, a reference that does not match the owner
 * it names, a foreground owner losing a block). */
static void set_owners(sw_gc_graph *g, gnode *n, const json_t *refs)
{
    size_t count = json_array_size(refs), i;
    gref *next = count ? sw_calloc(count, sizeof(*next)) : NULL;
    uint32_t nnext = 0;
    json_t *ref;
    json_array_foreach(refs, i, ref)
    {
        const char *uid = sw_json_str_at(ref, "uid");
        char group[256], version[128];
        if (!uid || !*uid ||
            sw_ownerref_split_api_version(sw_json_str_at(ref, "apiVersion"), group, sizeof(group),
                                          version, sizeof(version)) < 0)
            continue; /* the server refuses such references; nothing to follow */
        gnode *o = find(g, uid);
        bool dup = false;
        for (uint32_t j = 0; o && j < nnext; j++)
            dup = dup || next[j].owner == o;
        if (dup)
            continue;
        uint16_t kind = (uint16_t)kind_id(g, group, sw_json_str_at(ref, "kind"));
        const char *name = sw_json_str_at(ref, "name");
        if (!o) {
            o = node_new(g, uid);
            o->flags = N_VIRTUAL;
            o->kind = kind;
            set_name(o, name);
            o->ns = n->ns; /* a namespaced owner is looked for in its dependent's namespace */
        }
        uint8_t flags = (sw_json_bool_at(ref, "blockOwnerDeletion") ? REF_BLOCK : 0) |
                        (sw_json_bool_at(ref, "controller") ? REF_CONTROLLER : 0);
        next[nnext++] = (gref){o, sw_strdup(name ? name : ""), kind, flags};
    }
    /* edges that went */
    for (uint32_t i2 = 0; i2 < n->nowners; i2++) {
        gref *old = &n->owners[i2];
        bool kept = false;
        for (uint32_t j = 0; j < nnext && !kept; j++)
            kept = next[j].owner == old->owner;
        if (kept)
            continue;
        drop_dep(old->owner, n);
        if ((old->owner->flags & N_DEL_DEPS) && (old->flags & REF_BLOCK))
            attempt_delete(g, old->owner); /* it may be free to go now */
        release(g, old->owner);
    }
    /* edges that came or changed */
    for (uint32_t j = 0; j < nnext; j++) {
        gnode *o = next[j].owner;
        gref *old = find_ref(n, o);
        if (!old) {
            add_dep(o, n);
            if ((o->flags & (N_VIRTUAL | N_ABSENT)) == N_VIRTUAL)
                attempt_delete(g, o); /* does this owner exist? */
            else if (o->flags & (N_ABSENT | N_DEL_DEPS))
                attempt_delete(g, n);
            else if (!(o->flags & N_VIRTUAL) &&
                     ((o->ns[0] && o->ns != n->ns) || !ref_matches(&next[j])))
                attempt_delete(g, n); /* names a seen owner with other coordinates */
        } else if ((old->flags & REF_BLOCK) && !(next[j].flags & REF_BLOCK) &&
                   (o->flags & N_DEL_DEPS)) {
            attempt_delete(g, o);
        }
    }
    refs_free(n->owners, n->nowners);
    n->owners = next;
    n->nowners = nnext;
}

static int64_t parse_rv(const char *s)
{
    int64_t v;
    return s && sw_str_to_i64(s, &v) == 0 && v > 0 ? v : 0;
}

void sw_gc_graph_upsert(sw_gc_graph *g, int kind, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *uid = sw_json_str_at(meta, "uid");
    if (!uid || !*uid)
        return;
    json_t *fin = json_object_get(meta, "finalizers");
    uint8_t flags = 0;
    if (sw_json_at(meta, "deletionTimestamp"))
        flags |= N_DELETING;
    if (sw_finalizers_has(fin, SW_FINALIZER_ORPHAN))
        flags |= N_ORPHAN;
    if (sw_finalizers_has(fin, SW_FINALIZER_FOREGROUND))
        flags |= N_FG;
    if ((flags & N_DELETING) && (flags & N_FG))
        flags |= N_DEL_DEPS;
    pthread_mutex_lock(&g->mu);
    gnode *n = find(g, uid);
    bool fresh = !n || (n->flags & N_VIRTUAL);
    if (!n)
        n = node_new(g, uid);
    uint8_t before = fresh ? 0 : n->flags;
    n->kind = (uint16_t)(kind > 0 && (size_t)kind < g->nkinds ? kind : 0);
    set_name(n, sw_json_str_at(meta, "name"));
    n->ns = intern_ns(g, sw_json_str_at(meta, "namespace"));
    n->rv = parse_rv(sw_json_str_at(meta, "resourceVersion"));
    n->gen = g->kinds[n->kind].gen;
    n->flags = flags;
    set_owners(g, n, json_object_get(meta, "ownerReferences"));
    /* an owner first seen now: dependents whose references name it with other coordinates
     * than its own are looked at (their references may be dangling) */
    for (uint32_t i = 0; fresh && i < n->ndeps; i++) {
        gnode *d = n->deps[i];
        const gref *r = find_ref(d, n);
        if (d != n && r && (!ref_matches(r) || (n->ns[0] && n->ns != d->ns)))
            attempt_delete(g, d);
    }
    /* deletion that starts (or is first seen): the orphaning pass, or foreground deletion of
     * the dependents and the owner's own check */
    if ((flags & N_DELETING) && (flags & N_ORPHAN) &&
        !((before & N_DELETING) && (before & N_ORPHAN)))
        g->hooks.attempt_orphan(g->hooks.ctx, n->uid);
    if ((flags & N_DEL_DEPS) && !(before & N_DEL_DEPS)) {
        attempt_dependents(g, n);
        attempt_delete(g, n);
    }
    pthread_mutex_unlock(&g->mu);
}

/* Under mu: n was deleted. With dependents it turns virtual and is looked at (one live read
 * proves it gone, then its dependents are looked at: kube's flow for an unseen owner), so a
 * cascade costs one read per owner, not one per dependent. */
static void remove_node(sw_gc_graph *g, gnode *n)
{
    for (uint32_t i = 0; i < n->nowners; i++) {
        gnode *o = n->owners[i].owner;
        drop_dep(o, n);
        if (o->flags & N_DEL_DEPS)
            attempt_delete(g, o);
        release(g, o);
    }
    refs_free(n->owners, n->nowners);
    n->owners = NULL;
    n->nowners = 0;
    if (n->ndeps) {
        n->flags = N_VIRTUAL; /* its dependents still name it */
        attempt_delete(g, n);
        return;
    }
    node_unhash(g, n);
    node_free(n);
}

void sw_gc_graph_remove(sw_gc_graph *g, const char *uid)
{
    pthread_mutex_lock(&g->mu);
    gnode *n = uid ? find(g, uid) : NULL;
    if (n && !(n->flags & N_VIRTUAL))
        remove_node(g, n);
    pthread_mutex_unlock(&g->mu);
}

void sw_gc_graph_list_start(sw_gc_graph *g, int kind)
{
    pthread_mutex_lock(&g->mu);
    if (kind > 0 && (size_t)kind < g->nkinds)
        g->kinds[kind].gen++;
    pthread_mutex_unlock(&g->mu);
}

void sw_gc_graph_list_done(sw_gc_graph *g, int kind)
{
    pthread_mutex_lock(&g->mu);
    if (kind <= 0 || (size_t)kind >= g->nkinds) {
        pthread_mutex_unlock(&g->mu);
        return;
    }
    uint32_t gen = g->kinds[kind].gen;
    /* stale nodes first collected, then removed: removal may free other nodes of the chain */
    size_t nstale = 0, cap = 0;
    char **stale = NULL;
    for (size_t i = 0; i < g->nbuckets; i++)
        for (gnode *n = g->buckets[i]; n; n = n->next) {
            if (n->kind != kind || (n->flags & N_VIRTUAL) || n->gen == gen)
                continue;
            if (nstale == cap) {
                cap = cap ? cap * 2 : 64;
                stale = sw_realloc(stale, cap * sizeof(*stale));
            }
            stale[nstale++] = sw_strdup(n->uid);
        }
    for (size_t i = 0; i < nstale; i++) {
        gnode *n = find(g, stale[i]);
        if (n && !(n->flags & N_VIRTUAL))
            remove_node(g, n);
        sw_free(stale[i]);
    }
    sw_free(stale);
    pthread_mutex_unlock(&g->mu);
}

void sw_gc_graph_mark_absent(sw_gc_graph *g, const char *uid, const char *except)
{
    pthread_mutex_lock(&g->mu);
    gnode *n = find(g, uid);
    /* a node the informers hold is gone only when its deletion arrives */
    if (n && (n->flags & N_VIRTUAL) && !(n->flags & N_ABSENT)) {
        n->flags |= N_ABSENT;
        for (uint32_t i = 0; i < n->ndeps; i++)
            if (!except || strcmp(n->deps[i]->uid, except))
                attempt_delete(g, n->deps[i]);
    }
    if (n)
        release(g, n);
    pthread_mutex_unlock(&g->mu);
}

/* ---- the view ---- */

/* What the graph knows of the owner a reference names: only for a reference whose coordinates
 * are the node's (another name or kind must be read live by its own). */
static int owner_state(const gref *r)
{
    const gnode *o = r->owner;
    if (!ref_matches(r))
        return SW_GC_OWNER_UNKNOWN;
    if (o->flags & N_ABSENT)
        return SW_GC_OWNER_ABSENT;
    if (o->flags & N_VIRTUAL)
        return SW_GC_OWNER_UNKNOWN;
    return (o->flags & N_DEL_DEPS) ? SW_GC_OWNER_WAITING : SW_GC_OWNER_PRESENT;
}

int sw_gc_graph_item(sw_gc_graph *g, const char *uid, sw_gc_item *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&g->mu);
    const gnode *n = find(g, uid);
    if (!n) {
        pthread_mutex_unlock(&g->mu);
        return SW_ENOTFOUND;
    }
    out->uid = sw_strdup(n->uid);
    out->kind = n->kind;
    out->ns = sw_strdup(n->ns);
    out->name = sw_strdup(n->name ? n->name : "");
    out->rv = n->rv;
    out->virtual_node = n->flags & N_VIRTUAL;
    out->absent = n->flags & N_ABSENT;
    out->deleting = n->flags & N_DELETING;
    out->deleting_dependents = n->flags & N_DEL_DEPS;
    out->orphan_finalizer = n->flags & N_ORPHAN;
    out->foreground_finalizer = n->flags & N_FG;
    out->nowners = n->nowners;
    out->owners = n->nowners ? sw_calloc(n->nowners, sizeof(*out->owners)) : NULL;
    for (uint32_t i = 0; i < n->nowners; i++) {
        const gref *r = &n->owners[i];
        out->owners[i] = (sw_gc_owner){
            sw_strdup(r->owner->uid),  r->kind,        sw_strdup(r->name),
            sw_strdup(r->owner->ns),   owner_state(r), r->flags & REF_BLOCK,
            r->flags & REF_CONTROLLER, ref_matches(r), !(r->owner->flags & N_VIRTUAL)};
    }
    out->ndependents = n->ndeps;
    out->dependents = n->ndeps ? sw_calloc(n->ndeps, sizeof(char *)) : NULL;
    out->blocking = n->ndeps ? sw_calloc(n->ndeps, sizeof(char *)) : NULL;
    for (uint32_t i = 0; i < n->ndeps; i++) {
        gnode *d = n->deps[i];
        out->dependents[i] = sw_strdup(d->uid);
        gref *r = find_ref(d, n);
        if (r && (r->flags & REF_BLOCK)) {
            out->nblocking_all++;
            /* itself, or one deleting its own dependents, is not looked at from here */
            if (d != n && !(d->flags & N_DEL_DEPS))
                out->blocking[out->nblocking++] = sw_strdup(d->uid);
        }
        if (d->flags & N_DEL_DEPS)
            out->dependent_deleting_dependents = true;
    }
    pthread_mutex_unlock(&g->mu);
    return 0;
}

void sw_gc_item_dispose(sw_gc_item *it)
{
    for (size_t i = 0; i < it->nowners; i++) {
        sw_free(it->owners[i].uid);
        sw_free(it->owners[i].name);
        sw_free(it->owners[i].ns);
    }
    for (size_t i = 0; i < it->ndependents; i++)
        sw_free(it->dependents[i]);
    for (size_t i = 0; i < it->nblocking; i++)
        sw_free(it->blocking[i]);
    sw_free(it->owners);
    sw_free(it->dependents);
    sw_free(it->blocking);
    sw_free(it->uid);
    sw_free(it->ns);
    sw_free(it->name);
    memset(it, 0, sizeof(*it));
}
