/* smp: Kubernetes strategic merge patch (the k8s.io/apimachinery strategicpatch semantics that
 * kubectl apply/edit/patch rely on) and the merge-key schema of the built-in kinds we serve.
 * It works in place on one deep copy of the document. Keyed lists and sets are matched through a
 * hash index (a jansson object keyed by canonical JSON), so large lists stay linear.
 * See docs/internals/patch.md. */
#include "meta/patch.h"
#include "meta/smp.h"

#include "util/alloc.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DIR_PATCH "$patch"
#define DIR_RETAIN "$retainKeys"
#define DIR_ORDER "$setElementOrder/"
#define DIR_DELPRIM "$deleteFromPrimitiveList/"
#define PATH_CAP 512
#define PATH_OVER ((size_t)-1)

enum smp_mode { MODE_MERGE, MODE_REPLACE, MODE_DELETE };

typedef struct smp_path {
    char s[PATH_CAP]; /* dotted path of the current field, "[]" for list levels */
    size_t len;       /* used length of s */
    size_t over;      /* pushed levels that did not fit; no rule matches while > 0 */
} smp_path;

typedef struct smp_ctx {
    const sw_smp_schema *schema; /* may be NULL: every list is replaced */
    smp_path path;               /* where the merge is */
} smp_ctx;

/* ---- paths and rules ---- */

/* Appends sep+name; returns the mark to pass to path_pop. */
static size_t path_push(smp_path *p, const char *sep, const char *name)
{
    size_t old = p->len, a = strlen(sep), b = strlen(name);
    if (p->over || b >= PATH_CAP || old + a + b >= PATH_CAP) {
        p->over++;
        return PATH_OVER;
    }
    memcpy(p->s + old, sep, a);
    memcpy(p->s + old + a, name, b);
    p->len = old + a + b;
    p->s[p->len] = '\0';
    return old;
}

static size_t path_push_key(smp_path *p, const char *key)
{
    return path_push(p, p->len ? "." : "", key);
}

static void path_pop(smp_path *p, size_t mark)
{
    if (mark == PATH_OVER) {
        p->over--;
        return;
    }
    p->len = mark;
    p->s[mark] = '\0';
}

/* The rule for the list at the current path, or NULL (replace the list). */
static const sw_smp_list_rule *rule_here(const smp_ctx *c)
{
    if (!c->schema || c->path.over)
        return NULL;
    for (size_t i = 0; i < c->schema->count; i++)
        if (strcmp(c->schema->rules[i].path, c->path.s) == 0)
            return &c->schema->rules[i];
    return NULL;
}

/* The rule for the list in member `key` of the map at the current path. */
static const sw_smp_list_rule *rule_for_member(smp_ctx *c, const char *key)
{
    size_t mark = path_push_key(&c->path, key);
    const sw_smp_list_rule *rule = rule_here(c);
    path_pop(&c->path, mark);
    return rule;
}

/* SW_EINVALID with "strategic merge patch: <why> ["<detail>"] in <path>". */
static int smp_fail(const smp_ctx *c, const char *why, const char *detail)
{
    char shown[SW_PATCH_SHOW_MAX + 4], where[SW_PATCH_SHOW_MAX + 4];
    if (!c->path.over) {
        sw_patch__show(where, sizeof(where), c->path.len ? c->path.s : "the top level");
    } else { /* the path did not fit in the buffer: say it goes on */
        sw_patch__show(where, sizeof(where) - 3, c->path.s);
        memcpy(where + strlen(where), "...", 4);
    }
    if (!detail)
        return sw_error_set(SW_EINVALID, "strategic merge patch: %s in %s", why, where);
    return sw_error_set(SW_EINVALID, "strategic merge patch: %s \"%s\" in %s", why,
                        sw_patch__show(shown, sizeof(shown), detail), where);
}

/* ---- canonical-JSON index: a jansson object used as a hash map value -> position ---- */

typedef struct smp_key {
    char small[128]; /* encoding when it fits */
    char *heap;      /* sw_malloc'd encoding otherwise */
    const char *s;   /* the NUL-terminated canonical encoding */
} smp_key;

static int key_init(smp_key *k, const json_t *v)
{
    const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS;
    k->heap = NULL;
    k->s = NULL;
    size_t n = json_dumpb(v, k->small, sizeof(k->small) - 1, flags);
    if (n == 0)
        return sw_error_set(SW_EINVALID, "strategic merge patch: cannot encode a list value");
    if (n < sizeof(k->small)) {
        k->small[n] = '\0';
        k->s = k->small;
        return 0;
    }
    k->heap = sw_malloc(n + 1);
    if (json_dumpb(v, k->heap, n, flags) != n) {
        sw_free(k->heap);
        k->heap = NULL;
        return sw_error_set(SW_EINVALID, "strategic merge patch: cannot encode a list value");
    }
    k->heap[n] = '\0';
    k->s = k->heap;
    return 0;
}

static void key_dispose(smp_key *k)
{
    sw_free(k->heap);
    k->heap = NULL;
}

/* *pos = the position recorded for v in idx, or -1. */
static int idx_get(const json_t *idx, const json_t *v, long long *pos)
{
    smp_key k;
    int error = key_init(&k, v);
    if (error < 0)
        return error;
    json_t *hit = json_object_get(idx, k.s);
    *pos = hit ? (long long)json_integer_value(hit) : -1;
    key_dispose(&k);
    return 0;
}

/* Records pos for v unless v already has a position (the first occurrence wins). */
static int idx_put(json_t *idx, const json_t *v, long long pos)
{
    smp_key k;
    int error = key_init(&k, v);
    if (error < 0)
        return error;
    if (!json_object_get(idx, k.s) && json_object_set_new(idx, k.s, json_integer(pos)) < 0)
        error = sw_error_set(SW_EINVALID, "strategic merge patch: cannot index a list value");
    key_dispose(&k);
    return error;
}

/* What a list element is matched by: its merge-key value (NULL if it has none) for keyed
 * lists, the element itself for sets. */
static const json_t *elem_id(const json_t *e, const char *merge_key)
{
    if (!merge_key)
        return e;
    return json_is_object(e) ? json_object_get(e, merge_key) : NULL;
}

/* Indexes the elements of list by elem_id. */
static int idx_build(json_t *idx, const json_t *list, const char *merge_key)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const json_t *id = elem_id(e, merge_key);
        int error = id ? idx_put(idx, id, (long long)i) : 0;
        if (error < 0)
            return error;
    }
    return 0;
}

/* Removes from list every element whose elem_id is in drop. */
static int list_remove_matching(json_t *list, const json_t *drop, const char *merge_key)
{
    json_t *kept = json_array();
    size_t i;
    json_t *e;
    int error = 0;
    json_array_foreach(list, i, e)
    {
        const json_t *id = elem_id(e, merge_key);
        long long pos = -1;
        if (id) {
            error = idx_get(drop, id, &pos);
            if (error < 0)
                goto done;
        }
        if (pos < 0)
            json_array_append(kept, e);
    }
    json_array_clear(list);
    json_array_extend(list, kept);
done:
    json_decref(kept);
    return error;
}

/* ---- directives ---- */

static bool is_string_array(const json_t *a)
{
    size_t i;
    json_t *e;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, e)
    {
        if (!json_is_string(e))
            return false;
    }
    return true;
}

/* Parses a "$patch" value. */
static int patch_mode(const smp_ctx *c, const json_t *v, enum smp_mode *mode)
{
    const char *s = json_string_value(v);
    if (!s)
        return smp_fail(c, "$patch must be a string", NULL);
    if (strcmp(s, "merge") == 0)
        *mode = MODE_MERGE;
    else if (strcmp(s, "replace") == 0)
        *mode = MODE_REPLACE;
    else if (strcmp(s, "delete") == 0)
        *mode = MODE_DELETE;
    else
        return smp_fail(c, "unknown $patch value", s);
    return 0;
}

/* Checks every $-key of the patch map p and returns its $patch mode. */
static int map_directives(const smp_ctx *c, const json_t *p, enum smp_mode *mode)
{
    const char *key;
    json_t *v;
    *mode = MODE_MERGE;
    json_object_foreach(sw_patch__mut(p), key, v)
    {
        int error = 0;
        if (key[0] != '$')
            continue;
        if (strcmp(key, DIR_PATCH) == 0) {
            error = patch_mode(c, v, mode);
        } else if (strcmp(key, DIR_RETAIN) == 0) {
            if (!is_string_array(v))
                error = smp_fail(c, "$retainKeys must be a list of strings", NULL);
        } else if ((strncmp(key, DIR_ORDER, strlen(DIR_ORDER)) == 0 && key[strlen(DIR_ORDER)]) ||
                   (strncmp(key, DIR_DELPRIM, strlen(DIR_DELPRIM)) == 0 &&
                    key[strlen(DIR_DELPRIM)])) {
            if (!json_is_array(v))
                error = smp_fail(c, "directive value must be a list", key);
        } else {
            error = smp_fail(c, "unknown directive", key);
        }
        if (error < 0)
            return error;
    }
    return 0;
}

/* $deleteFromPrimitiveList/<list>: drops the listed values from that list of t. */
static int apply_prim_deletes(json_t *t, const json_t *p)
{
    const char *key;
    json_t *v;
    json_object_foreach(sw_patch__mut(p), key, v)
    {
        if (strncmp(key, DIR_DELPRIM, strlen(DIR_DELPRIM)) != 0)
            continue;
        json_t *list = json_object_get(t, key + strlen(DIR_DELPRIM));
        if (!json_is_array(list))
            continue;
        json_t *drop = json_object();
        int error = idx_build(drop, v, NULL);
        if (error == 0)
            error = list_remove_matching(list, drop, NULL);
        json_decref(drop);
        if (error < 0)
            return error;
    }
    return 0;
}

/* For every $setElementOrder/<list> with a rule, remembers the positions of that list's
 * elements before the merge: *snaps maps list name -> index. */
static int order_snapshot(smp_ctx *c, const json_t *t, const json_t *p, json_t *snaps)
{
    const char *key;
    json_t *v;
    json_object_foreach(sw_patch__mut(p), key, v)
    {
        if (strncmp(key, DIR_ORDER, strlen(DIR_ORDER)) != 0)
            continue;
        const char *name = key + strlen(DIR_ORDER);
        const sw_smp_list_rule *rule = rule_for_member(c, name);
        if (!rule)
            continue;
        json_t *snap = json_object();
        json_t *list = json_object_get(t, name);
        int error = json_is_array(list) ? idx_build(snap, list, rule->merge_key) : 0;
        if (error == 0)
            error = sw_patch__obj_set(snaps, name, snap);
        else
            json_decref(snap);
        if (error < 0)
            return error;
    }
    return 0;
}

typedef struct ord_item {
    json_t *v;      /* the element (borrowed from the list) */
    long long ord;  /* position in $setElementOrder, -1 if not named there */
    long long orig; /* position in the list before the merge, -1 if new */
    size_t pos;     /* position in the merged list (stable tie-break) */
} ord_item;

static int ord_cmp(const void *a, const void *b)
{
    const ord_item *x = a, *y = b;
    if (x->ord != y->ord)
        return x->ord < y->ord ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Classifies each element of list: named in the order (into named[]) or not (into rest[]). */
static int order_classify(const json_t *list, const json_t *oidx, const json_t *snap,
                          const char *merge_key, ord_item *named, size_t *nn, ord_item *rest,
                          size_t *nr)
{
    size_t i;
    json_t *e;
    *nn = *nr = 0;
    json_array_foreach(list, i, e)
    {
        ord_item it = {e, -1, -1, i};
        const json_t *id = elem_id(e, merge_key);
        int error = id ? idx_get(oidx, id, &it.ord) : 0;
        if (error == 0 && id)
            error = idx_get(snap, id, &it.orig);
        if (error < 0)
            return error;
        if (it.ord >= 0)
            named[(*nn)++] = it;
        else
            rest[(*nr)++] = it;
    }
    return 0;
}

/* Reorders list: elements named in order come in that order; the others keep their relative
 * order and are interleaved by their pre-merge positions (Kubernetes' mergeSortedSlice). */
static int order_list(json_t *list, const json_t *order, const json_t *snap, const char *mk)
{
    size_t n = json_array_size(list), nn, nr, i = 0, j = 0;
    json_t *oidx = json_object(), *merged = json_array();
    ord_item *named = sw_calloc(n, sizeof(*named)), *rest = sw_calloc(n, sizeof(*rest));
    size_t k;
    json_t *o;
    int error = 0;
    json_array_foreach(order, k, o)
    {
        const json_t *id = elem_id(o, mk);
        error = id ? idx_put(oidx, id, (long long)k) : 0;
        if (error < 0)
            goto done;
    }
    error = order_classify(list, oidx, snap, mk, named, &nn, rest, &nr);
    if (error < 0)
        goto done;
    qsort(named, nn, sizeof(*named), ord_cmp);
    while (i < nr || j < nn) {
        bool take_rest = j >= nn || (i < nr && rest[i].orig >= 0 && named[j].orig >= 0 &&
                                     rest[i].orig < named[j].orig);
        json_array_append(merged, take_rest ? rest[i++].v : named[j++].v);
    }
    json_array_clear(list);
    json_array_extend(list, merged);
done:
    sw_free(named);
    sw_free(rest);
    json_decref(oidx);
    json_decref(merged);
    return error;
}

/* $setElementOrder/<list>: reorders each merged list that has a rule and a snapshot. */
static int apply_orders(smp_ctx *c, json_t *t, const json_t *p, const json_t *snaps)
{
    const char *key;
    json_t *v;
    json_object_foreach(sw_patch__mut(p), key, v)
    {
        if (strncmp(key, DIR_ORDER, strlen(DIR_ORDER)) != 0)
            continue;
        const char *name = key + strlen(DIR_ORDER);
        json_t *snap = json_object_get(snaps, name);
        json_t *list = json_object_get(t, name);
        const sw_smp_list_rule *rule = rule_for_member(c, name);
        if (!snap || !rule || !json_is_array(list))
            continue;
        int error = order_list(list, v, snap, rule->merge_key);
        if (error < 0)
            return error;
    }
    return 0;
}

/* $retainKeys: drops the keys of t that are not listed. */
static void apply_retain(json_t *t, const json_t *p)
{
    const json_t *keys = json_object_get(p, DIR_RETAIN);
    json_t *keep, *e, *v;
    const char *key;
    void *tmp;
    size_t i;
    if (!keys)
        return;
    keep = json_object();
    json_array_foreach(keys, i, e)
    {
        json_object_set_new(keep, json_string_value(e), json_true());
    }
    json_object_foreach_safe(t, tmp, key, v)
    {
        if (!json_object_get(keep, key))
            json_object_del(t, key);
    }
    json_decref(keep);
}

/* ---- the merge ---- */

static int smp_map(smp_ctx *c, json_t *t, const json_t *p, int depth, bool *deleted);
static int smp_list(smp_ctx *c, json_t *t, const json_t *p, const sw_smp_list_rule *rule,
                    int depth);

/* A new value built from the patch value pv alone (directives applied and stripped, nulls in
 * maps dropped); the path names pv's position. *out is NULL when pv is a map deleting itself. */
static int smp_fresh(smp_ctx *c, const json_t *pv, int depth, json_t **out)
{
    bool deleted = false;
    int error;
    *out = NULL;
    if (json_is_object(pv)) {
        json_t *m = json_object();
        error = smp_map(c, m, pv, depth, &deleted);
        if (error < 0 || deleted)
            json_decref(m);
        else
            *out = m;
        return error;
    }
    if (json_is_array(pv)) {
        json_t *l = json_array();
        error = smp_list(c, l, pv, rule_here(c), depth);
        if (error < 0)
            json_decref(l);
        else
            *out = l;
        return error;
    }
    *out = json_deep_copy(pv);
    return *out ? 0 : smp_fail(c, "cannot copy a value", NULL);
}

/* Merges patch member key:pv into the mutable map t; the path names t. */
static int merge_member(smp_ctx *c, json_t *t, const char *key, const json_t *pv, int depth)
{
    json_t *child = json_object_get(t, key), *fresh = NULL;
    const sw_smp_list_rule *rule = NULL;
    bool deleted = false;
    int error;
    if (json_is_null(pv)) {
        json_object_del(t, key);
        return 0;
    }
    size_t mark = path_push_key(&c->path, key);
    if (json_is_array(pv))
        rule = rule_here(c);
    if (json_is_object(pv) && json_is_object(child)) {
        error = smp_map(c, child, pv, depth + 1, &deleted);
        if (error == 0 && deleted)
            json_object_del(t, key);
    } else if (rule && json_is_array(child)) {
        error = smp_list(c, child, pv, rule, depth + 1);
    } else {
        error = smp_fresh(c, pv, depth + 1, &fresh);
        if (error == 0 && fresh)
            error = sw_patch__obj_set(t, key, fresh);
        else if (error == 0)
            json_object_del(t, key);
    }
    path_pop(&c->path, mark);
    return error;
}

/* Merges the patch map p into the mutable map t; *deleted when p says "$patch": "delete". */
static int smp_map(smp_ctx *c, json_t *t, const json_t *p, int depth, bool *deleted)
{
    json_t *snaps = NULL, *pv;
    const char *key;
    enum smp_mode mode;
    int error;
    *deleted = false;
    if (depth > SW_PATCH_MAX_DEPTH)
        return smp_fail(c, "nesting too deep", NULL);
    error = map_directives(c, p, &mode);
    if (error < 0)
        return error;
    if (mode == MODE_DELETE) {
        *deleted = true;
        return 0;
    }
    if (mode == MODE_REPLACE)
        json_object_clear(t);
    snaps = json_object();
    error = apply_prim_deletes(t, p);
    if (error == 0)
        error = order_snapshot(c, t, p, snaps);
    if (error < 0)
        goto done;
    json_object_foreach(sw_patch__mut(p), key, pv)
    {
        if (key[0] == '$')
            continue;
        error = merge_member(c, t, key, pv, depth);
        if (error < 0)
            goto done;
    }
    error = apply_orders(c, t, p, snaps);
    if (error < 0)
        goto done;
    apply_retain(t, p);
done:
    json_decref(snaps);
    return error;
}

/* The $patch mode of a list element (MODE_MERGE when it has none). */
static int elem_mode(const smp_ctx *c, const json_t *e, enum smp_mode *mode)
{
    const json_t *d = json_object_get(e, DIR_PATCH);
    *mode = MODE_MERGE;
    return d ? patch_mode(c, d, mode) : 0;
}

/* First pass over a patch list: finds {"$patch":"replace"} and collects the keyed deletions. */
static int list_scan(const smp_ctx *c, const json_t *p, const sw_smp_list_rule *rule, bool *replace,
                     json_t *drop)
{
    size_t i;
    json_t *e;
    *replace = false;
    json_array_foreach(p, i, e)
    {
        enum smp_mode mode;
        int error = elem_mode(c, e, &mode);
        if (error < 0)
            return error;
        if (mode == MODE_REPLACE)
            *replace = true;
        if (mode != MODE_DELETE || !rule || !rule->merge_key)
            continue;
        const json_t *id = elem_id(e, rule->merge_key);
        if (!id)
            return smp_fail(c, "$patch delete element lacks the merge key", rule->merge_key);
        error = idx_put(drop, id, 0);
        if (error < 0)
            return error;
    }
    return 0;
}

/* Adds (or merges) one ordinary patch element e into the list t indexed by idx. */
static int list_add_one(smp_ctx *c, json_t *t, json_t *idx, const json_t *e,
                        const sw_smp_list_rule *rule, int depth)
{
    const char *mk = rule ? rule->merge_key : NULL;
    const json_t *id = rule ? elem_id(e, mk) : NULL;
    json_t *fresh = NULL;
    long long pos = -1;
    bool deleted;
    int error;
    if (mk && !id)
        return smp_fail(c, "list element lacks the merge key", mk);
    if (id) {
        error = idx_get(idx, id, &pos);
        if (error < 0)
            return error;
    }
    if (pos >= 0 && !mk)
        return 0; /* already in the set */
    if (pos >= 0 && json_is_object(json_array_get(t, (size_t)pos)))
        return smp_map(c, json_array_get(t, (size_t)pos), e, depth + 1, &deleted);
    error = smp_fresh(c, e, depth + 1, &fresh);
    if (error < 0 || !fresh)
        return error;
    if (json_array_append_new(t, fresh) < 0)
        return smp_fail(c, "cannot add a list element", NULL);
    return id ? idx_put(idx, id, (long long)json_array_size(t) - 1) : 0;
}

/* Merges the patch list p into the mutable list t. With no rule the result is p alone. */
static int smp_list(smp_ctx *c, json_t *t, const json_t *p, const sw_smp_list_rule *rule, int depth)
{
    json_t *drop = json_object(), *idx = json_object(), *e;
    size_t i, mark = PATH_OVER;
    bool replace;
    int error;
    if (depth > SW_PATCH_MAX_DEPTH) {
        error = smp_fail(c, "nesting too deep", NULL);
        goto done;
    }
    error = list_scan(c, p, rule, &replace, drop);
    if (error < 0)
        goto done;
    if (replace || !rule)
        json_array_clear(t);
    else if (json_object_size(drop))
        error = list_remove_matching(t, drop, rule->merge_key);
    if (error == 0 && rule)
        error = idx_build(idx, t, rule->merge_key);
    if (error < 0)
        goto done;
    mark = path_push(&c->path, "", "[]");
    json_array_foreach(p, i, e)
    {
        enum smp_mode mode;
        error = elem_mode(c, e, &mode);
        if (error == 0 && mode == MODE_MERGE)
            error = list_add_one(c, t, idx, e, rule, depth);
        if (error < 0)
            break;
    }
    path_pop(&c->path, mark);
done:
    json_decref(drop);
    json_decref(idx);
    return error;
}

int sw_patch_strategic(const json_t *doc, const json_t *patch, const sw_smp_schema *schema,
                       json_t **out)
{
    smp_ctx c = {.schema = schema};
    json_t *t = NULL;
    bool deleted = false;
    int error;
    if (!doc || !json_is_object(patch))
        return sw_error_set(SW_EINVALID, "strategic merge patch must be a JSON object");
    t = json_is_object(doc) ? json_deep_copy(doc) : json_object();
    if (!t)
        return sw_error_set(SW_EINVALID, "strategic merge patch: cannot copy the document");
    error = smp_map(&c, t, patch, 0, &deleted);
    if (error < 0)
        goto done;
    if (deleted)
        json_object_clear(t);
    *out = t;
    t = NULL;
done:
    json_decref(t);
    return error;
}

/* ---- the schema of the built-in kinds ---- */

#define SMP_META(P)                                                                                \
    {P "metadata.ownerReferences", "uid"},                                                         \
    {                                                                                              \
        P "metadata.finalizers", NULL                                                              \
    }
#define SMP_CONTAINERS(P, C)                                                                       \
    {P "." C, "name"}, {P "." C "[].env", "name"}, {P "." C "[].ports", "containerPort"},          \
        {P "." C "[].volumeMounts", "mountPath"},                                                  \
    {                                                                                              \
        P "." C "[].volumeDevices", "devicePath"                                                   \
    }
#define SMP_POD_SPEC(P)                                                                            \
    SMP_CONTAINERS(P, "containers"), SMP_CONTAINERS(P, "initContainers"),                          \
        SMP_CONTAINERS(P, "ephemeralContainers"), {P ".volumes", "name"},                          \
        {P ".imagePullSecrets", "name"}, {P ".hostAliases", "ip"},                                 \
        {P ".topologySpreadConstraints", "topologyKey"}, {P ".resourceClaims", "name"},            \
    {                                                                                              \
        P ".schedulingGates", "name"                                                               \
    }

static const sw_smp_list_rule core_rules[] = {
    /* ObjectMeta of every kind, and of the pod and job templates */
    SMP_META(""),
    SMP_META("spec.template."),
    SMP_META("spec.jobTemplate."),
    SMP_META("spec.jobTemplate.spec.template."),
    /* PodSpec in a Pod, in Deployment / StatefulSet / DaemonSet / Job, and in CronJob */
    SMP_POD_SPEC("spec"),
    SMP_POD_SPEC("spec.template.spec"),
    SMP_POD_SPEC("spec.jobTemplate.spec.template.spec"),
    /* ServiceAccount */
    {"secrets", "name"},
    {"imagePullSecrets", "name"},
};

static const sw_smp_schema core_schema = {core_rules, sizeof(core_rules) / sizeof(core_rules[0])};

const sw_smp_schema *sw_smp_schema_core(void)
{
    return &core_schema;
}
