/* authz: RBAC decisions from the stored roles and bindings (see authz.h).
 *
 * The stored objects are kept parsed in one map (store key -> object), changed by the watch's
 * events under a mutex that also bumps a generation. Decisions read a compiled view: every
 * role's effective rules (aggregation resolved) and an index from subject ("User:<name>",
 * "Group:<name>"; a ServiceAccount subject is its user) to the bindings naming it. The view is
 * rebuilt by the first decision after a change, under the write side of a rwlock; decisions
 * take the read side, so they run in parallel and cost a few map lookups. */
#include "apiserver/authz.h"

#include "apiserver/selector.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define RBAC_PREFIX "/rbac.authorization.k8s.io/"
#define SA_PREFIX "/core/serviceaccounts/"
#define MAX_AGGREGATION_DEPTH 8

struct sw_authz {
    sw_store *store;
    pthread_mutex_t mu; /* objs, gen */
    json_t *objs;       /* store key -> object */
    uint64_t gen;       /* bumped on every change of objs */
    json_t *sa_uids;    /* "<ns>/<name>" of every ServiceAccount -> its uid */

    pthread_rwlock_t view_mu;
    uint64_t view_gen; /* the generation the view was built from */
    bool built;
    json_t *roles; /* "R/<ns>/<name>" and "C/<name>" -> effective rules (array) */
    json_t *index; /* subject key -> array of {ns, role, why} */
    /* Decisions made on this view: "<user, groups, attributes>" -> why (allowed) or false.
     * Emptied with every rebuild and when full; read under dmu's read side, written under its
     * write side (and always under the view's read side). */
    pthread_rwlock_t dmu;
    json_t *decisions;
};

#define MAX_DECISIONS 8192

/* ---- users ---- */

void sw_user_init(sw_user *u, const char *name)
{
    memset(u, 0, sizeof(*u));
    sw_strlcpy(u->name, name, sizeof(u->name));
}

bool sw_user_in_group(const sw_user *u, const char *g)
{
    for (size_t i = 0; i < u->ngroups; i++)
        if (!strcmp(u->groups[i], g))
            return true;
    return false;
}

void sw_user_add_group(sw_user *u, const char *g)
{
    if (u->ngroups < SW_USER_MAX_GROUPS && *g && !sw_user_in_group(u, g) &&
        strlen(g) < sizeof(u->groups[0]))
        sw_strlcpy(u->groups[u->ngroups++], g, sizeof(u->groups[0]));
}

json_t *sw_user_info(const sw_user *u)
{
    json_t *info = json_pack("{s:s}", "username", u->name), *groups = json_array();
    if (u->uid[0])
        json_object_set_new(info, "uid", json_string(u->uid));
    for (size_t i = 0; i < u->ngroups; i++)
        json_array_append_new(groups, json_string(u->groups[i]));
    json_object_set_new(info, "groups", groups);
    return info;
}

/* ---- request attributes ---- */

static bool next_seg(const char **p, char *out, size_t n)
{
    while (**p == '/')
        (*p)++;
    if (!**p)
        return false;
    size_t len = strcspn(*p, "/");
    if (out) {
        size_t c = len < n ? len : n - 1;
        memcpy(out, *p, c);
        out[c] = '\0';
    }
    *p += len;
    return true;
}

void sw_authz_attrs_from(const char *method, const char *path, const char *watch,
                         const char *field_selector, sw_authz_attrs *out)
{
    memset(out, 0, sizeof(*out));
    sw_strlcpy(out->path, path, sizeof(out->path));
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof(out->verb); i++)
        out->verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
    out->verb[i] = '\0';
    /* /api/<v>/<resource...> or /apis/<group>/<v>/<resource...>; shorter paths are discovery */
    char parts[8][256];
    size_t n = 0;
    for (const char *p = path; n < 8 && next_seg(&p, parts[n], sizeof(parts[n]));)
        n++;
    size_t at;
    if (n >= 3 && !strcmp(parts[0], "api"))
        at = 2;
    else if (n >= 4 && !strcmp(parts[0], "apis")) {
        sw_strlcpy(out->group, parts[1], sizeof(out->group));
        at = 3;
    } else
        return;
    out->resource = true;
    if (!strcmp(parts[at], "namespaces") && at + 1 < n) {
        sw_strlcpy(out->ns, parts[at + 1], sizeof(out->ns));
        /* /namespaces/<n>/status and /finalize are the namespace's own subresources */
        if (at + 2 < n && strcmp(parts[at + 2], "status") && strcmp(parts[at + 2], "finalize"))
            at += 2;
    }
    sw_strlcpy(out->resource_name, parts[at], sizeof(out->resource_name));
    if (at + 1 < n)
        sw_strlcpy(out->name, parts[at + 1], sizeof(out->name));
    if (at + 2 < n)
        sw_strlcpy(out->subresource, parts[at + 2], sizeof(out->subresource));
    const char *verb = !strcmp(method, "POST")     ? "create"
                       : !strcmp(method, "PUT")    ? "update"
                       : !strcmp(method, "PATCH")  ? "patch"
                       : !strcmp(method, "DELETE") ? "delete"
                                                   : "get";
    bool w = false;
    if (!strcmp(verb, "get") && !out->name[0])
        verb = watch && sw_str_to_bool(watch, &w) == 0 && w ? "watch" : "list";
    if (!strcmp(verb, "delete") && !out->name[0])
        verb = "deletecollection";
    sw_strlcpy(out->verb, verb, sizeof(out->verb));
    if ((!strcmp(verb, "list") || !strcmp(verb, "watch")) && field_selector) {
        sw_selector *fs = NULL;
        if (sw_selector_parse_fields(field_selector, NULL, &fs) == 0) {
            const char *name = sw_selector_field_equals(fs, "metadata.name");
            if (name)
                sw_strlcpy(out->name, name, sizeof(out->name));
        }
        sw_selector_free(fs);
    }
}

/* ---- the stored objects ---- */

/* Under mu: a ServiceAccount's uid by its key's "<ns>/<name>" (NULL obj: gone). */
static void put_sa(sw_authz *a, const char *key, const json_t *obj)
{
    const char *id = key + strlen(SA_PREFIX);
    const char *uid = sw_json_str_at(obj, "metadata.uid");
    if (uid)
        json_object_set_new(a->sa_uids, id, json_string(uid));
    else
        json_object_del(a->sa_uids, id);
}

static void load(sw_authz *a, const sw_kv_list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        if (sw_str_prefix(l->items[i].key, SA_PREFIX)) {
            json_t *sa = NULL;
            if (sw_json_parse(l->items[i].value, l->items[i].value_len, SW_JSON_MAX_DEPTH, 0,
                              &sa) == 0)
                put_sa(a, l->items[i].key, sa);
            json_decref(sa);
            continue;
        }
        json_t *obj = NULL;
        if (sw_json_parse(l->items[i].value, l->items[i].value_len, SW_JSON_MAX_DEPTH, 0, &obj) ==
            0)
            json_object_set_new(a->objs, l->items[i].key, obj);
    }
}

int sw_authz_new(sw_authz **out, sw_store *store, int64_t rev)
{
    sw_authz *a = sw_calloc(1, sizeof(*a));
    sw_kv_list l = {0};
    a->store = store;
    pthread_mutex_init(&a->mu, NULL);
    pthread_rwlock_init(&a->view_mu, NULL);
    pthread_rwlock_init(&a->dmu, NULL);
    a->decisions = json_object();
    a->objs = json_object();
    a->sa_uids = json_object();
    sw_store_list_opts lo = {.prefix = RBAC_PREFIX, .rev = rev};
    int error = sw_store_list(store, &lo, &l);
    if (error == 0)
        load(a, &l);
    sw_kv_list_dispose(&l);
    if (error == 0) {
        lo.prefix = SA_PREFIX;
        error = sw_store_list(store, &lo, &l);
        if (error == 0)
            load(a, &l);
        sw_kv_list_dispose(&l);
    }
    if (error < 0) {
        sw_authz_free(a);
        return error;
    }
    a->gen = 1;
    *out = a;
    return 0;
}

void sw_authz_event(sw_authz *a, const sw_store_event *ev)
{
    if (ev->type == SW_STORE_GONE) {
        /* events were lost: start over from the store as it is now */
        sw_kv_list l = {0}, sl = {0};
        sw_store_list_opts lo = {.prefix = RBAC_PREFIX}, so = {.prefix = SA_PREFIX};
        int error = sw_store_list(a->store, &lo, &l);
        int serror = sw_store_list(a->store, &so, &sl);
        pthread_mutex_lock(&a->mu);
        if (error == 0) {
            json_object_clear(a->objs);
            load(a, &l);
        }
        json_object_clear(a->sa_uids); /* what is not known is read from the store */
        if (serror == 0)
            load(a, &sl);
        a->gen++;
        pthread_mutex_unlock(&a->mu);
        sw_kv_list_dispose(&l);
        sw_kv_list_dispose(&sl);
        return;
    }
    if (sw_str_prefix(ev->key, SA_PREFIX)) {
        json_t *sa = NULL;
        if (ev->type != SW_STORE_DELETE &&
            sw_json_parse(ev->value, ev->value_len, SW_JSON_MAX_DEPTH, 0, &sa) < 0)
            sa = NULL;
        pthread_mutex_lock(&a->mu);
        put_sa(a, ev->key, sa);
        pthread_mutex_unlock(&a->mu);
        json_decref(sa);
        return;
    }
    if (!sw_str_prefix(ev->key, RBAC_PREFIX))
        return;
    json_t *obj = NULL;
    if (ev->type != SW_STORE_DELETE &&
        sw_json_parse(ev->value, ev->value_len, SW_JSON_MAX_DEPTH, 0, &obj) < 0)
        obj = NULL;
    pthread_mutex_lock(&a->mu);
    if (obj)
        json_object_set_new(a->objs, ev->key, obj);
    else
        json_object_del(a->objs, ev->key);
    a->gen++;
    pthread_mutex_unlock(&a->mu);
}

void sw_authz_free(sw_authz *a)
{
    if (!a)
        return;
    json_decref(a->objs);
    json_decref(a->sa_uids);
    json_decref(a->roles);
    json_decref(a->index);
    json_decref(a->decisions);
    pthread_rwlock_destroy(&a->dmu);
    pthread_mutex_destroy(&a->mu);
    pthread_rwlock_destroy(&a->view_mu);
    sw_free(a);
}

bool sw_authz_sa_known(sw_authz *a, const char *ns, const char *name, const char *uid)
{
    char id[600];
    snprintf(id, sizeof(id), "%s/%s", ns, name);
    pthread_mutex_lock(&a->mu);
    bool known = sw_str_eq(json_string_value(json_object_get(a->sa_uids, id)), uid);
    pthread_mutex_unlock(&a->mu);
    return known;
}

/* ---- the compiled view ---- */

/* Which of the four kinds a key is, and the object's namespace/name ("" for cluster ones). */
enum { K_ROLE, K_CLUSTERROLE, K_BINDING, K_CLUSTERBINDING, K_OTHER };

static int key_kind(const char *key)
{
    const char *p = key + strlen(RBAC_PREFIX);
    return sw_str_prefix(p, "roles/")                 ? K_ROLE
           : sw_str_prefix(p, "clusterroles/")        ? K_CLUSTERROLE
           : sw_str_prefix(p, "rolebindings/")        ? K_BINDING
           : sw_str_prefix(p, "clusterrolebindings/") ? K_CLUSTERBINDING
                                                      : K_OTHER;
}

static void append_rules(json_t *to, const json_t *rules)
{
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) if (json_is_object(r)) json_array_append(to, r);
}

/* The effective rules of ClusterRole cr: its own, and with an aggregationRule those of every
 * ClusterRole a selector matches (themselves aggregated, to a bounded depth). */
static void cluster_rules(const json_t *clusterroles, const json_t *cr, json_t *out, int depth)
{
    append_rules(out, json_object_get(cr, "rules"));
    const json_t *sels = sw_json_at(cr, "aggregationRule.clusterRoleSelectors");
    if (!json_array_size(sels) || depth >= MAX_AGGREGATION_DEPTH)
        return;
    const char *name;
    json_t *other;
    json_object_foreach((json_t *)clusterroles, name, other)
    {
        if (other == cr)
            continue;
        const json_t *labels = sw_json_at(other, "metadata.labels");
        size_t i;
        json_t *sel;
        json_array_foreach(sels, i, sel) if (sw_label_selector_match(sel, labels))
        {
            cluster_rules(clusterroles, other, out, depth + 1);
            break;
        }
    }
}

static void index_binding(json_t *index, const json_t *b, bool cluster)
{
    const char *bns = sw_json_str_at(b, "metadata.namespace") ?: "";
    const char *bname = sw_json_str_at(b, "metadata.name") ?: "";
    const char *rkind = sw_json_str_at(b, "roleRef.kind") ?: "";
    const char *rname = sw_json_str_at(b, "roleRef.name") ?: "";
    char role[600];
    if (!strcmp(rkind, "ClusterRole"))
        snprintf(role, sizeof(role), "C/%s", rname);
    else if (!strcmp(rkind, "Role") && !cluster)
        snprintf(role, sizeof(role), "R/%s/%s", bns, rname);
    else
        return;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(b, "subjects"), i, s)
    {
        const char *kind = sw_json_str_at(s, "kind") ?: "";
        const char *name = sw_json_str_at(s, "name") ?: "";
        const char *sns = sw_json_str_at(s, "namespace");
        char key[700], why[1200];
        if (!strcmp(kind, "User"))
            snprintf(key, sizeof(key), "User:%s", name);
        else if (!strcmp(kind, "Group"))
            snprintf(key, sizeof(key), "Group:%s", name);
        else if (!strcmp(kind, "ServiceAccount"))
            snprintf(key, sizeof(key), "User:system:serviceaccount:%s:%s", sns && *sns ? sns : bns,
                     name);
        else
            continue;
        snprintf(why, sizeof(why), "RBAC: allowed by %s \"%s\"%s%s of %s \"%s\" to %s \"%s\"",
                 cluster ? "ClusterRoleBinding" : "RoleBinding", bname, cluster ? "" : "/",
                 cluster ? "" : bns, rkind, rname, kind, name);
        json_t *list = json_object_get(index, key);
        if (!list) {
            list = json_array();
            json_object_set_new(index, key, list);
        }
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s}", "ns", cluster ? "" : bns, "role", role, "why", why));
    }
}

/* Builds roles and index from objs (a copy taken under the mutex). */
static void build_view(sw_authz *a, const json_t *objs)
{
    json_t *roles = json_object(), *index = json_object(), *clusterroles = json_object();
    const char *key;
    json_t *obj;
    json_object_foreach((json_t *)objs, key, obj) if (key_kind(key) == K_CLUSTERROLE)
        json_object_set(clusterroles, sw_json_str_at(obj, "metadata.name") ?: "", obj);
    json_object_foreach((json_t *)objs, key, obj)
    {
        char rk[600];
        switch (key_kind(key)) {
        case K_ROLE: {
            json_t *rules = json_array();
            append_rules(rules, json_object_get(obj, "rules"));
            snprintf(rk, sizeof(rk), "R/%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
                     sw_json_str_at(obj, "metadata.name") ?: "");
            json_object_set_new(roles, rk, rules);
            break;
        }
        case K_CLUSTERROLE: {
            json_t *rules = json_array();
            cluster_rules(clusterroles, obj, rules, 0);
            snprintf(rk, sizeof(rk), "C/%s", sw_json_str_at(obj, "metadata.name") ?: "");
            json_object_set_new(roles, rk, rules);
            break;
        }
        case K_BINDING:
            index_binding(index, obj, false);
            break;
        case K_CLUSTERBINDING:
            index_binding(index, obj, true);
            break;
        default:
            break;
        }
    }
    json_decref(clusterroles);
    json_decref(a->roles);
    json_decref(a->index);
    a->roles = roles;
    a->index = index;
    json_object_clear(a->decisions); /* under the write side: no reader holds dmu */
}

/* Takes the read side of a current view (rebuilding it first when the objects changed). */
static void view_lock(sw_authz *a)
{
    uint64_t gen = __atomic_load_n(&a->gen, __ATOMIC_ACQUIRE);
    pthread_rwlock_rdlock(&a->view_mu);
    if (a->built && a->view_gen == gen)
        return;
    pthread_rwlock_unlock(&a->view_mu);
    pthread_rwlock_wrlock(&a->view_mu);
    pthread_mutex_lock(&a->mu);
    gen = a->gen;
    json_t *objs = a->built && a->view_gen == gen ? NULL : json_copy(a->objs);
    pthread_mutex_unlock(&a->mu);
    if (objs) {
        build_view(a, objs);
        json_decref(objs);
        a->view_gen = gen;
        a->built = true;
    }
    pthread_rwlock_unlock(&a->view_mu);
    pthread_rwlock_rdlock(&a->view_mu);
}

/* ---- matching ---- */

static bool has(const json_t *list, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        const char *s = json_string_value(x);
        if (s && (!strcmp(s, "*") || !strcmp(s, v)))
            return true;
    }
    return false;
}

static bool resource_matches(const json_t *list, const sw_authz_attrs *at)
{
    char combined[140], any_sub[80];
    snprintf(combined, sizeof(combined), "%s%s%s", at->resource_name, at->subresource[0] ? "/" : "",
             at->subresource);
    snprintf(any_sub, sizeof(any_sub), "*/%s", at->subresource);
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        const char *s = json_string_value(x);
        if (s && (!strcmp(s, "*") || !strcmp(s, combined) ||
                  (at->subresource[0] && !strcmp(s, any_sub))))
            return true;
    }
    return false;
}

static bool url_matches(const json_t *list, const char *path)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        const char *s = json_string_value(x);
        size_t n = s ? strlen(s) : 0;
        if (s && (!strcmp(s, path) || (n && s[n - 1] == '*' && !strncmp(s, path, n - 1))))
            return true;
    }
    return false;
}

static bool rule_allows(const json_t *r, const sw_authz_attrs *at)
{
    if (!has(json_object_get(r, "verbs"), at->verb))
        return false;
    if (!at->resource)
        return url_matches(json_object_get(r, "nonResourceURLs"), at->path);
    const json_t *names = json_object_get(r, "resourceNames");
    return has(json_object_get(r, "apiGroups"), at->group) &&
           resource_matches(json_object_get(r, "resources"), at) &&
           (!json_array_size(names) || (at->name[0] && has(names, at->name)));
}

/* Calls fn for every binding entry of u's subjects that counts in ns ("" : cluster only);
 * stops when fn returns true, and returns that. */
static bool each_entry(sw_authz *a, const sw_user *u, const char *ns,
                       bool (*fn)(const json_t *rules, const json_t *entry, void *arg), void *arg)
{
    char key[400];
    for (size_t s = 0; s <= u->ngroups; s++) {
        snprintf(key, sizeof(key), s == 0 ? "User:%s" : "Group:%s",
                 s == 0 ? u->name : u->groups[s - 1]);
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(a->index, key), i, e)
        {
            const char *ens = json_string_value(json_object_get(e, "ns"));
            if (ens && *ens && (!ns || strcmp(ens, ns)))
                continue;
            const json_t *rules =
                json_object_get(a->roles, json_string_value(json_object_get(e, "role")));
            if (rules && fn(rules, e, arg))
                return true;
        }
    }
    return false;
}

typedef struct allow_arg {
    const sw_authz_attrs *at;
    const char *why;
} allow_arg;

static bool entry_allows(const json_t *rules, const json_t *entry, void *p)
{
    allow_arg *arg = p;
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) if (rule_allows(r, arg->at))
    {
        arg->why = json_string_value(json_object_get(entry, "why"));
        return true;
    }
    return false;
}

bool sw_authz_allowed(sw_authz *a, const sw_user *u, const sw_authz_attrs *at, char *reason,
                      size_t n)
{
    if (reason)
        reason[0] = '\0';
    if (sw_user_in_group(u, "system:masters")) {
        if (reason)
            sw_strlcpy(reason, "allowed: a member of system:masters", n);
        return true;
    }
    allow_arg arg = {.at = at};
    sw_buf key;
    sw_buf_init(&key, 4096);
    /* the decision's inputs, each ended by a separator no name holds (no printf: it is the
     * hot path of every authorized request) */
    const char *parts[] = {u->name,         u->uid,    at->resource ? "r" : "n",
                           at->verb,        at->group, at->resource_name,
                           at->subresource, at->ns,    at->name,
                           at->path};
    for (size_t i = 0; i < 2; i++) {
        sw_buf_puts(&key, parts[i]);
        sw_buf_put(&key, "\x1f", 1);
    }
    for (size_t i = 0; i < u->ngroups; i++) {
        sw_buf_puts(&key, u->groups[i]);
        sw_buf_put(&key, "\x1e", 1);
    }
    for (size_t i = 2; i < sizeof(parts) / sizeof(parts[0]); i++) {
        sw_buf_put(&key, "\x1f", 1);
        sw_buf_puts(&key, parts[i]);
    }
    bool cacheable = sw_buf_error(&key) == 0, ok, known = false;
    view_lock(a);
    if (cacheable) {
        pthread_rwlock_rdlock(&a->dmu);
        const json_t *d = json_object_get(a->decisions, sw_buf_cstr(&key));
        if (d) {
            known = true;
            ok = json_is_string(d);
            if (ok && reason)
                sw_strlcpy(reason, json_string_value(d), n);
        }
        pthread_rwlock_unlock(&a->dmu);
    }
    if (!known) {
        ok = each_entry(a, u, at->resource ? at->ns : "", entry_allows, &arg);
        if (ok && reason)
            sw_strlcpy(reason, arg.why ? arg.why : "", n);
        if (cacheable) {
            pthread_rwlock_wrlock(&a->dmu);
            if (json_object_size(a->decisions) >= MAX_DECISIONS)
                json_object_clear(a->decisions);
            json_object_set_new(a->decisions, sw_buf_cstr(&key),
                                ok ? json_string(arg.why ? arg.why : "") : json_false());
            pthread_rwlock_unlock(&a->dmu);
        }
    }
    pthread_rwlock_unlock(&a->view_mu);
    sw_buf_dispose(&key);
    return ok;
}

typedef struct rules_arg {
    json_t *res, *nonres;
} rules_arg;

static json_t *strings_or_empty(const json_t *r, const char *key)
{
    json_t *v = json_object_get(r, key);
    return json_is_array(v) ? json_deep_copy(v) : json_array();
}

static bool entry_rules(const json_t *rules, const json_t *entry, void *p)
{
    (void)entry;
    rules_arg *arg = p;
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        if (json_array_size(json_object_get(r, "nonResourceURLs")))
            json_array_append_new(
                arg->nonres, json_pack("{s:o, s:o}", "verbs", strings_or_empty(r, "verbs"),
                                       "nonResourceURLs", strings_or_empty(r, "nonResourceURLs")));
        else {
            json_t *rr = json_pack("{s:o, s:o, s:o}", "verbs", strings_or_empty(r, "verbs"),
                                   "apiGroups", strings_or_empty(r, "apiGroups"), "resources",
                                   strings_or_empty(r, "resources"));
            if (json_array_size(json_object_get(r, "resourceNames")))
                json_object_set_new(rr, "resourceNames", strings_or_empty(r, "resourceNames"));
            json_array_append_new(arg->res, rr);
        }
    }
    return false;
}

void sw_authz_rules(sw_authz *a, const sw_user *u, const char *ns, json_t **resource_rules,
                    json_t **non_resource_rules)
{
    rules_arg arg = {json_array(), json_array()};
    view_lock(a);
    each_entry(a, u, ns ? ns : "", entry_rules, &arg);
    pthread_rwlock_unlock(&a->view_mu);
    *resource_rules = arg.res;
    *non_resource_rules = arg.nonres;
}

void sw_authz_denied_message(const sw_user *u, const sw_authz_attrs *at, char *out, size_t n)
{
    if (!at->resource) {
        snprintf(out, n, "forbidden: User \"%s\" cannot %s path \"%s\"", u->name, at->verb,
                 at->path);
        return;
    }
    char res[140], what[800];
    snprintf(res, sizeof(res), "%s%s%s", at->resource_name, at->subresource[0] ? "/" : "",
             at->subresource);
    snprintf(what, sizeof(what), "%s%s%s%s%s%s", at->resource_name, at->group[0] ? "." : "",
             at->group, at->name[0] ? " \"" : "", at->name, at->name[0] ? "\"" : "");
    if (at->ns[0])
        snprintf(out, n,
                 "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in "
                 "the namespace \"%s\"",
                 what, u->name, at->verb, res, at->group, at->ns);
    else
        snprintf(out, n,
                 "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at "
                 "the cluster scope",
                 what, u->name, at->verb, res, at->group);
}

/* ---- escalation ---- */

static void attrs_resource(sw_authz_attrs *at, const char *verb, const char *group,
                           const char *resource, const char *ns, const char *name)
{
    memset(at, 0, sizeof(*at));
    at->resource = true;
    sw_strlcpy(at->verb, verb, sizeof(at->verb));
    sw_strlcpy(at->group, group, sizeof(at->group));
    size_t n = strcspn(resource, "/");
    snprintf(at->resource_name, sizeof(at->resource_name), "%.*s", (int)n, resource);
    if (resource[n])
        sw_strlcpy(at->subresource, resource + n + 1, sizeof(at->subresource));
    sw_strlcpy(at->ns, ns ? ns : "", sizeof(at->ns));
    sw_strlcpy(at->name, name ? name : "", sizeof(at->name));
}

/* Whether u holds every permission rules grant in ns (each verb, group, resource and name of
 * each rule, a wildcard only by a wildcard); missing gets the first it lacks. */
static bool covers(sw_authz *a, const sw_user *u, const char *ns, const json_t *rules,
                   char *missing, size_t n)
{
    size_t i, v, g, r, k;
    json_t *rule, *verb, *group, *res, *name;
    json_array_foreach(rules, i, rule) json_array_foreach(json_object_get(rule, "verbs"), v, verb)
    {
        sw_authz_attrs at;
        const char *vs = json_string_value(verb) ?: "";
        json_t *urls = json_object_get(rule, "nonResourceURLs");
        json_array_foreach(urls, k, name)
        {
            memset(&at, 0, sizeof(at));
            sw_strlcpy(at.verb, vs, sizeof(at.verb));
            sw_strlcpy(at.path, json_string_value(name) ?: "", sizeof(at.path));
            if (!sw_authz_allowed(a, u, &at, NULL, 0)) {
                snprintf(missing, n, "%s on %s", vs, at.path);
                return false;
            }
        }
        json_array_foreach(json_object_get(rule, "apiGroups"), g, group)
            json_array_foreach(json_object_get(rule, "resources"), r, res)
        {
            const json_t *names = json_object_get(rule, "resourceNames");
            for (k = 0; k < (json_array_size(names) ? json_array_size(names) : 1); k++) {
                const char *nm = json_string_value(json_array_get(names, k));
                attrs_resource(&at, vs, json_string_value(group) ?: "",
                               json_string_value(res) ?: "", ns, nm);
                if (!sw_authz_allowed(a, u, &at, NULL, 0)) {
                    snprintf(missing, n, "%s on %s%s%s%s%s", vs, json_string_value(res) ?: "",
                             at.group[0] ? "." : "", at.group, nm ? " " : "", nm ? nm : "");
                    return false;
                }
            }
        }
    }
    return true;
}

/* The rules of the role a binding refers to, a copy; NULL when there is none. */
static json_t *role_rules(sw_authz *a, const char *kind, const char *ns, const char *name)
{
    char key[600];
    if (!strcmp(kind, "ClusterRole"))
        snprintf(key, sizeof(key), "C/%s", name);
    else
        snprintf(key, sizeof(key), "R/%s/%s", ns, name);
    view_lock(a);
    json_t *rules = json_deep_copy(json_object_get(a->roles, key));
    pthread_rwlock_unlock(&a->view_mu);
    return rules;
}

int sw_authz_check_grant(sw_authz *a, const sw_user *u, const char *method, const char *kind,
                         const char *ns, const json_t *obj)
{
    bool role = !strcmp(kind, "Role") || !strcmp(kind, "ClusterRole");
    bool cluster = !strcmp(kind, "ClusterRole") || !strcmp(kind, "ClusterRoleBinding");
    const char *name = sw_json_str_at(obj, "metadata.name") ?: "";
    sw_authz_attrs at;
    char missing[700] = "";
    if (sw_user_in_group(u, "system:masters"))
        return 0;
    if (role) {
        /* escalate on the role lets one write any rules into it */
        attrs_resource(&at, "escalate", "rbac.authorization.k8s.io",
                       cluster ? "clusterroles" : "roles", cluster ? NULL : ns, name);
        if (sw_authz_allowed(a, u, &at, NULL, 0))
            return 0;
        if (strcmp(method, "POST") && strcmp(method, "PUT"))
            return sw_error_set(SW_EFORBIDDEN,
                                "%s \"%s\" is forbidden: user \"%s\" may not "
                                "patch roles without the escalate verb; send "
                                "the whole role (update)",
                                kind, name, u->name);
        if (json_object_get(obj, "aggregationRule"))
            return sw_error_set(SW_EFORBIDDEN,
                                "%s \"%s\" is forbidden: must have the escalate "
                                "verb to write aggregated cluster roles",
                                kind, name);
        if (covers(a, u, cluster ? NULL : ns, json_object_get(obj, "rules"), missing,
                   sizeof(missing)))
            return 0;
        return sw_error_set(SW_EFORBIDDEN,
                            "%s \"%s\" is forbidden: user \"%s\" is attempting "
                            "to grant RBAC permissions not currently held: %s",
                            kind, name, u->name, missing);
    }
    const char *rkind = sw_json_str_at(obj, "roleRef.kind") ?: "";
    const char *rname = sw_json_str_at(obj, "roleRef.name") ?: "";
    bool rcluster = !strcmp(rkind, "ClusterRole");
    /* bind on the referenced role lets one bind it whatever it holds */
    attrs_resource(&at, "bind", "rbac.authorization.k8s.io", rcluster ? "clusterroles" : "roles",
                   rcluster ? NULL : ns, rname);
    if (cluster)
        at.ns[0] = '\0';
    else
        sw_strlcpy(at.ns, ns ? ns : "", sizeof(at.ns));
    if (sw_authz_allowed(a, u, &at, NULL, 0))
        return 0;
    if (strcmp(method, "POST") && strcmp(method, "PUT"))
        return sw_error_set(SW_EFORBIDDEN,
                            "%s \"%s\" is forbidden: user \"%s\" may not patch "
                            "bindings without the bind verb; send the whole "
                            "binding (update)",
                            kind, name, u->name);
    json_t *rules = role_rules(a, rkind, ns ? ns : "", rname);
    bool ok = rules && covers(a, u, cluster ? NULL : ns, rules, missing, sizeof(missing));
    json_decref(rules);
    if (ok)
        return 0;
    if (!missing[0])
        snprintf(missing, sizeof(missing), "%s \"%s\" not found", rkind, rname);
    return sw_error_set(SW_EFORBIDDEN,
                        "%s \"%s\" is forbidden: user \"%s\" is attempting to "
                        "grant RBAC permissions not currently held: %s",
                        kind, name, u->name, missing);
}
