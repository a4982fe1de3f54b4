/* crd: the CustomResourceDefinition kind, the registration of the kinds it defines, and their
 * schema pipeline (see crd.h). The registration map (CRD name → its registered kinds and the
 * fingerprint they were made from) is process-wide and guarded by one mutex; registering
 * happens on the writer's thread after a CRD write is stored (committed) and at start. */
#include "kinds/crd.h"

#include "meta/jsonpath.h"
#include "meta/names.h"
#include "meta/openapischema.h"
#include "meta/patch.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VERSIONS 16
#define MAX_COLUMNS 32
#define MAX_NAMES (SW_KIND_MAX_NAMES - 1)
#define MAX_SELECTABLE 8

/* ---- helpers ---- */

/* DNS-1035 label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
static bool dns1035(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > 63 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static const char *str_at(const json_t *o, const char *path)
{
    return sw_json_str_at(o, path);
}

static void lower(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in && in[i] && i + 1 < n; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

/* The condition of type in the CRD's status, or NULL. */
static json_t *condition(const json_t *crd, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(crd, "status.conditions"), i, c)
    {
        if (sw_str_eq(str_at(c, "type"), type))
            return c;
    }
    return NULL;
}

static bool condition_true(const json_t *crd, const char *type)
{
    return sw_str_eq(str_at(condition(crd, type), "status"), "True");
}

/* Sets condition type (keeping lastTransitionTime when the status stays). */
static void set_condition(json_t *crd, const char *type, const char *status, const char *reason,
                          const char *msg)
{
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *conds = sw_json_at(crd, "status.conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(sw_json_obj_path(crd, "status"), "conditions", conds);
    }
    json_t *c = condition(crd, type);
    const char *since =
        c && sw_str_eq(str_at(c, "status"), status) ? str_at(c, "lastTransitionTime") : NULL;
    json_t *next =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status, "lastTransitionTime",
                  since ? since : now, "reason", reason, "message", msg);
    size_t i;
    json_t *x;
    json_array_foreach(conds, i, x)
    {
        if (x == c) {
            json_array_set_new(conds, i, next);
            return;
        }
    }
    json_array_append_new(conds, next);
}

/* Whether the schema (anywhere) holds x-kubernetes-validations; its path into at. */
static bool find_cel(const json_t *v, const char *path, char *at, size_t n, int depth)
{
    if (depth > 64)
        return false;
    if (json_is_object(v)) {
        if (json_object_get(v, "x-kubernetes-validations")) {
            snprintf(at, n, "%s.x-kubernetes-validations", path);
            return true;
        }
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            if (find_cel(x, sub, at, n, depth + 1))
                return true;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            if (find_cel(x, sub, at, n, depth + 1))
                return true;
        }
    }
    return false;
}

/* ---- the kinds a CRD defines ---- */

/* What one registered kind keeps (its descriptor's strings point here). */
typedef struct crv {
    char *group, *version, *kind, *plural, *singular, *crd;
    char *short_names[SW_KIND_MAX_NAMES], *categories[SW_KIND_MAX_NAMES];
    sw_column columns[MAX_COLUMNS];
    char *column_strs[MAX_COLUMNS][4]; /* name, type, description, jsonPath */
    size_t ncolumns;
    sw_oas *schema;
    bool terminating;
    char *scale_paths[3]; /* spec replicas, status replicas, label selector (dotted, no '.') */
    char *fields[MAX_SELECTABLE + 1]; /* selectableFields (dotted), NULL-terminated */
    bool read_normalize; /* stored objects may predate the schema: reads prune and default */
    bool multi;          /* the CRD serves several versions (conversion None) */
    char *api_version;   /* group/version */
} crv;

static void crv_free(void *p)
{
    crv *v = p;
    if (!v)
        return;
    sw_free(v->group);
    sw_free(v->version);
    sw_free(v->kind);
    sw_free(v->plural);
    sw_free(v->singular);
    sw_free(v->crd);
    for (int i = 0; i < SW_KIND_MAX_NAMES; i++)
        sw_free(v->short_names[i]);
    for (int i = 0; i < SW_KIND_MAX_NAMES; i++)
        sw_free(v->categories[i]);
    for (size_t i = 0; i < v->ncolumns; i++)
        for (int j = 0; j < 4; j++)
            sw_free(v->column_strs[i][j]);
    sw_oas_free(v->schema);
    for (int i = 0; i < 3; i++)
        sw_free(v->scale_paths[i]);
    for (int i = 0; v->fields[i]; i++)
        sw_free(v->fields[i]);
    sw_free(v->api_version);
    sw_free(v);
}

/* ---- the scale subresource (autoscaling/v1 Scale, crd-gc.md §1.11) ---- */

static json_t *scale_of(const crv *v, const json_t *obj)
{
    const json_t *spec = v->scale_paths[0] ? sw_json_at(obj, v->scale_paths[0]) : NULL;
    const json_t *st = v->scale_paths[1] ? sw_json_at(obj, v->scale_paths[1]) : NULL;
    const json_t *sel = v->scale_paths[2] ? sw_json_at(obj, v->scale_paths[2]) : NULL;
    json_t *meta = json_object();
    static const char *const keep[] = {"name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp"};
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *x = json_object_get(json_object_get(obj, "metadata"), keep[i]);
        if (x)
            json_object_set(meta, keep[i], x);
    }
    json_t *status = json_pack("{s:I}", "replicas",
                               (json_int_t)(json_is_integer(st) ? json_integer_value(st) : 0));
    if (json_is_string(sel))
        json_object_set(status, "selector", (json_t *)sel);
    return json_pack("{s:s, s:s, s:o, s:{s:I}, s:o}", "kind", "Scale", "apiVersion",
                     "autoscaling/v1", "metadata", meta, "spec", "replicas",
                     (json_int_t)(json_is_integer(spec) ? json_integer_value(spec) : 0), "status",
                     status);
}

static int scale_body(const sw_subreq *r, const json_t *current, json_t **out)
{
    json_t *body = NULL;
    int error = sw_json_parse(r->body ? r->body : "", r->body_len, 32, 0, &body);
    if (error < 0)
        return sw_error_set(SW_EBADREQUEST, "the body of the request could not be decoded: %s",
                            sw_error_msg());
    if (!strcmp(r->method, "PUT")) {
        *out = body;
        return 0;
    }
    const char *ct = r->content_type ? r->content_type : "";
    if (sw_str_prefix(ct, "application/merge-patch+json"))
        error = sw_patch_merge(current, body, out);
    else if (sw_str_prefix(ct, "application/json-patch+json"))
        error = sw_patch_json(current, body, out);
    else
        error = sw_error_set(SW_EUNSUPPORTED,
                             "the body of the request was in an unknown format - accepted media "
                             "types include: application/json-patch+json, "
                             "application/merge-patch+json");
    json_decref(body);
    return error;
}

static int scale_handle(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    (void)ctx;
    const sw_kind *k = r->kind;
    const crv *v = k ? k->data : NULL;
    json_t *obj = NULL, *scale = NULL, *want = NULL, *saved = NULL;
    int error;
    if (!v || !v->scale_paths[0])
        return sw_error_set(SW_ENOTFOUND, "the server could not find the requested resource");
    if (strcmp(r->method, "GET") && strcmp(r->method, "PUT") && strcmp(r->method, "PATCH"))
        return sw_error_set(SW_EMETHOD, "the server does not allow this method on the requested "
                                        "resource");
    error = o->get(o, k, r->ns, r->name, &obj);
    if (error < 0)
        goto done;
    scale = scale_of(v, obj);
    if (!strcmp(r->method, "GET")) {
        out->obj = json_incref(scale);
        goto done;
    }
    error = scale_body(r, scale, &want);
    if (error < 0)
        goto done;
    const json_t *replicas = sw_json_at(want, "spec.replicas");
    if (!json_is_integer(replicas) || json_integer_value(replicas) < 0 ||
        json_integer_value(replicas) > INT32_MAX) {
        char rv[64] = "null";
        if (json_is_integer(replicas))
            snprintf(rv, sizeof(rv), "%lld", (long long)json_integer_value(replicas));
        error = sw_error_set(SW_EINVALID,
                             "spec.replicas: Invalid value: %s: must be greater than "
                             "or equal to 0",
                             rv);
        goto done;
    }
    const char *rv = sw_json_str_at(want, "metadata.resourceVersion");
    if (rv && *rv)
        sw_json_set_path(obj, "metadata.resourceVersion", json_string(rv));
    sw_json_set_path(obj, v->scale_paths[0], json_integer(json_integer_value(replicas)));
    error = o->update(o, k, obj, &saved);
    if (error == 0)
        out->obj = scale_of(v, saved);
done:
    json_decref(obj);
    json_decref(scale);
    json_decref(want);
    json_decref(saved);
    return error;
}

static const char *const scale_verbs[] = {"get", "patch", "update", NULL};
static const sw_subresource scale_subresource = {"scale", "Scale", scale_verbs, false,
                                                 scale_handle};

/* The kind of served version ver of crd (its accepted names), or NULL when it cannot be made. */
static crv *make_crv(const json_t *crd, const json_t *ver, sw_kind *t)
{
    const json_t *names = sw_json_at(crd, "status.acceptedNames");
    crv *v = sw_calloc(1, sizeof(*v));
    v->group = sw_strdup(str_at(crd, "spec.group") ?: "");
    v->version = sw_strdup(str_at(ver, "name") ?: "");
    v->kind = sw_strdup(str_at(names, "kind") ?: "");
    v->plural = sw_strdup(str_at(names, "plural") ?: "");
    char single[80];
    lower(str_at(names, "kind"), single, sizeof(single));
    v->singular = sw_strdup(str_at(names, "singular") ?: single);
    v->crd = sw_strdup(str_at(crd, "metadata.name") ?: "");
    v->terminating = sw_json_at(crd, "metadata.deletionTimestamp") != NULL;
    size_t nf = 0, fi;
    json_t *fx;
    json_array_foreach(json_object_get(ver, "selectableFields"), fi, fx)
    {
        const char *jp = str_at(fx, "jsonPath");
        if (jp && jp[0] == '.' && nf < MAX_SELECTABLE)
            v->fields[nf++] = sw_strdup(jp + 1);
    }
    json_t *causes = NULL;
    const json_t *schema = sw_json_at(ver, "schema.openAPIV3Schema");
    bool status = json_is_object(sw_json_at(ver, "subresources.status"));
    if (sw_oas_compile_lazy(schema, "schema", status, &v->schema, &causes) < 0) {
        json_decref(causes);
        crv_free(v);
        return NULL;
    }
    /* objects written under this very schema are already pruned and defaulted */
    v->multi = json_array_size(sw_json_at(crd, "spec.versions")) > 1;
    v->read_normalize = v->multi || sw_oas_has_defaults(v->schema) ||
                        sw_json_int_or(crd, "metadata.generation", 1) > 1;
    char av[400];
    snprintf(av, sizeof(av), "%s/%s", v->group, v->version);
    v->api_version = sw_strdup(av);
    memset(t, 0, sizeof(*t));
    t->group = v->group;
    t->version = v->version;
    t->kind = v->kind;
    t->plural = v->plural;
    t->singular = v->singular;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(names, "shortNames"), i, x)
    {
        if (i < SW_KIND_MAX_NAMES - 1) /* the last stays NULL */
            t->short_names[i] = v->short_names[i] = sw_strdup(json_string_value(x) ?: "");
    }
    json_array_foreach(json_object_get(names, "categories"), i, x)
    {
        if (i < SW_KIND_MAX_NAMES - 1)
            t->categories[i] = v->categories[i] = sw_strdup(json_string_value(x) ?: "");
    }
    t->namespaced = !sw_str_eq(str_at(crd, "spec.scope"), "Cluster");
    t->has_status = status;
    t->spec_generation = true;
    t->name_rule = SW_NAME_SUBDOMAIN;
    json_array_foreach(json_object_get(ver, "additionalPrinterColumns"), i, x)
    {
        if (v->ncolumns >= MAX_COLUMNS)
            break;
        char **s = v->column_strs[v->ncolumns];
        s[0] = sw_strdup(str_at(x, "name") ?: "");
        s[1] = sw_strdup(str_at(x, "type") ?: "string");
        s[2] = sw_strdup(str_at(x, "description") ?: "");
        s[3] = sw_strdup(str_at(x, "jsonPath") ?: "");
        v->columns[v->ncolumns] = (sw_column){.name = s[0],
                                              .type = s[1],
                                              .description = s[2],
                                              .priority = (int)sw_json_int_or(x, "priority", 0),
                                              .json_path = s[3]};
        v->ncolumns++;
    }
    t->columns = v->columns;
    t->ncolumns = v->ncolumns;
    t->no_age = v->ncolumns > 0;
    t->field_selectors = (const char *const *)v->fields;
    const json_t *sc = sw_json_at(ver, "subresources.scale");
    if (json_is_object(sc)) {
        static const char *const keys[] = {"specReplicasPath", "statusReplicasPath",
                                           "labelSelectorPath"};
        for (int j = 0; j < 3; j++) {
            const char *p = str_at(sc, keys[j]);
            if (p && p[0] == '.')
                v->scale_paths[j] = sw_strdup(p + 1);
        }
        t->subresources = &scale_subresource;
        t->nsubresources = 1;
    }
    return v;
}

/* The registration map. */
typedef struct entry {
    char *name;
    char *fingerprint;
    const sw_kind *kinds[MAX_VERSIONS]; /* references */
    size_t n;
    struct entry *next;
} entry;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;

static void drop_kinds(entry *e)
{
    for (size_t i = 0; i < e->n; i++) {
        sw_kinds_unregister(e->kinds[i]);
        sw_kind_release(e->kinds[i]);
    }
    e->n = 0;
}

/* What the kinds of crd are made from: when it is the same, nothing is re-registered. */
static char *fingerprint(const json_t *crd)
{
    json_t *f = json_pack("{s:O?, s:O?, s:b}", "spec", json_object_get(crd, "spec"), "names",
                          sw_json_at(crd, "status.acceptedNames"), "deleting",
                          sw_json_at(crd, "metadata.deletionTimestamp") != NULL);
    char *text = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(f);
    char *out = sw_strdup(text ? text : "");
    free(text);
    return out;
}

/* Makes the registration of crd what its current state says (none while its names are not
 * accepted). */
static void sync_crd(const json_t *crd)
{
    const char *name = str_at(crd, "metadata.name");
    if (!name)
        return;
    char *fp = fingerprint(crd);
    pthread_mutex_lock(&reg_mu);
    entry *e = entries;
    while (e && strcmp(e->name, name))
        e = e->next;
    if (e && !strcmp(e->fingerprint, fp)) {
        pthread_mutex_unlock(&reg_mu);
        sw_free(fp);
        return;
    }
    if (!e) {
        e = sw_calloc(1, sizeof(*e));
        e->name = sw_strdup(name);
        e->next = entries;
        entries = e;
    }
    /* each version still served is replaced in place (no request in between sees a 404);
     * the others go after */
    const sw_kind *old[MAX_VERSIONS];
    size_t nold = e->n;
    memcpy(old, e->kinds, nold * sizeof(*old));
    e->n = 0;
    sw_free(e->fingerprint);
    e->fingerprint = fp;
    bool accepted = condition_true(crd, "NamesAccepted") || condition_true(crd, "Established");
    size_t i;
    json_t *ver;
    json_array_foreach(accepted ? sw_json_at(crd, "spec.versions") : NULL, i, ver)
    {
        if (!sw_json_bool_at(ver, "served") || e->n >= MAX_VERSIONS)
            continue;
        sw_kind t;
        crv *v = make_crv(crd, ver, &t);
        if (!v)
            continue;
        const sw_kind *k = NULL, *prev = NULL;
        for (size_t j = 0; j < nold && !prev; j++)
            if (old[j] && sw_str_eq(old[j]->version, v->version)) {
                prev = old[j];
                old[j] = NULL;
            }
        int error = prev ? sw_kinds_replace(prev, &t, v, crv_free, &k)
                         : sw_kinds_register(&t, v, crv_free, &k);
        sw_kind_release(prev);
        if (error < 0) {
            sw_log(SW_LOG_WARN, "crd %s: version %s not served: %s", name, v->version,
                   sw_error_msg());
            crv_free(v);
            continue;
        }
        e->kinds[e->n++] = k;
    }
    for (size_t j = 0; j < nold; j++)
        if (old[j]) {
            sw_kinds_unregister(old[j]);
            sw_kind_release(old[j]);
        }
    pthread_mutex_unlock(&reg_mu);
}

static void unsync_crd(const char *name)
{
    pthread_mutex_lock(&reg_mu);
    for (entry **p = &entries; *p; p = &(*p)->next)
        if (!strcmp((*p)->name, name)) {
            entry *e = *p;
            *p = e->next;
            drop_kinds(e);
            sw_free(e->name);
            sw_free(e->fingerprint);
            sw_free(e);
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

void sw_crd_register_all(const sw_kind_ctx *ctx, sw_objects *o)
{
    (void)ctx;
    json_t *items = NULL;
    if (o->list(o, &sw_kind_crd, NULL, &items) < 0)
        return;
    size_t i;
    json_t *crd;
    json_array_foreach(items, i, crd) sync_crd(crd);
    json_decref(items);
}

/* ---- the custom resources' pipeline ---- */

void sw_cr_normalize(const sw_kind *k, json_t *obj, json_t *unknown)
{
    const crv *v = k->data;
    if (!v || !v->schema)
        return;
    sw_oas_prune(v->schema, obj, unknown);
    sw_oas_default(v->schema, obj);
    /* every version reads the same stored objects (conversion None): the version asked for */
    if (v->multi)
        json_object_set_new(obj, "apiVersion", json_string(v->api_version));
}

int sw_cr_validate(const sw_kind *k, const json_t *obj, const json_t *old)
{
    const crv *v = k->data;
    json_t *causes = NULL;
    if (!v || !v->schema || sw_oas_validate_update(v->schema, obj, old, &causes) == 0)
        return 0;
    /* the message kube-apiserver writes: the one cause, or all in brackets */
    sw_buf msg = SW_BUF_INIT(64 * 1024); /* sw_error_set keeps the first kilobyte */
    size_t i, n = json_array_size(causes);
    json_t *c;
    if (n > 1)
        sw_buf_putc(&msg, '[');
    json_array_foreach(causes, i, c)
    {
        const char *field = str_at(c, "field");
        sw_buf_printf(&msg, "%s%s%s%s", i ? ", " : "", field ? field : "", field ? ": " : "",
                      str_at(c, "message") ?: "");
    }
    if (n > 1)
        sw_buf_putc(&msg, ']');
    int error = sw_error_set_causes(SW_EINVALID, causes, "%s", sw_buf_cstr(&msg));
    sw_buf_dispose(&msg);
    return error;
}

int sw_cr_check_create(const sw_kind *k, const char *name)
{
    const crv *v = k->data;
    if (v && v->terminating)
        return sw_error_set(SW_EFORBIDDEN,
                            "%s.%s \"%s\" is forbidden: create not allowed while custom resource "
                            "definition is terminating",
                            v->plural, v->group, name ? name : "");
    return 0;
}

/* ---- the CRD kind: defaults ---- */

static void default_names(json_t *spec)
{
    json_t *names = sw_json_obj_path(spec, "names");
    const char *kind = str_at(names, "kind");
    if (kind && !str_at(names, "singular")) {
        char s[80];
        lower(kind, s, sizeof(s));
        json_object_set_new(names, "singular", json_string(s));
    }
    if (kind && !str_at(names, "listKind")) {
        char lk[96];
        snprintf(lk, sizeof(lk), "%.80sList", kind);
        json_object_set_new(names, "listKind", json_string(lk));
    }
    sw_json_default(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
}

static const char *storage_version(const json_t *crd)
{
    size_t i;
    json_t *v;
    json_array_foreach(sw_json_at(crd, "spec.versions"), i, v)
    {
        if (sw_json_bool_at(v, "storage"))
            return str_at(v, "name");
    }
    return NULL;
}

static int crd_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    default_names(sw_json_obj_path(obj, "spec"));
    const char *sv = storage_version(obj);
    json_t *st = json_pack("{s:{}, s:[], s:[]}", "acceptedNames", "conditions", "storedVersions");
    if (sv)
        json_array_append_new(json_object_get(st, "storedVersions"), json_string(sv));
    json_object_set_new(obj, "status", st);
    return 0;
}

static int crd_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    default_names(sw_json_obj_path(obj, "spec"));
    const char *sv = storage_version(obj);
    json_t *stored = sw_json_at(obj, "status.storedVersions");
    if (!json_is_array(stored)) {
        stored = json_array();
        json_object_set_new(sw_json_obj_path(obj, "status"), "storedVersions", stored);
    }
    bool have = false;
    size_t i;
    json_t *x;
    json_array_foreach(stored, i, x) have = have || sw_str_eq(json_string_value(x), sv);
    if (sv && !have)
        json_array_append_new(stored, json_string(sv));
    return 0;
}

/* ---- the CRD kind: names against the other CRDs of the group ---- */

static bool listed(const json_t *list, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        if (s && sw_str_eq(json_string_value(x), s))
            return true;
    }
    return false;
}

/* The first conflict of crd's names with the accepted names of the other CRDs of its group:
 * its reason and message into reason/msg; false when there is none. */
static bool name_conflict(const json_t *crd, const json_t *others, char *reason, size_t rn,
                          char *msg, size_t mn)
{
    const json_t *names = sw_json_at(crd, "spec.names");
    const char *group = str_at(crd, "spec.group");
    json_t *pool = json_array(), *kinds = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(others, i, o)
    {
        if (!sw_str_eq(str_at(o, "spec.group"), group) ||
            sw_str_eq(str_at(o, "metadata.name"), str_at(crd, "metadata.name")))
            continue;
        const json_t *an = sw_json_at(o, "status.acceptedNames");
        const char *fields[2] = {"plural", "singular"};
        for (int f = 0; f < 2; f++)
            if (str_at(an, fields[f]))
                json_array_append_new(pool, json_string(str_at(an, fields[f])));
        size_t j;
        json_t *s;
        json_array_foreach(json_object_get(an, "shortNames"), j, s) json_array_append(pool, s);
        if (str_at(an, "kind"))
            json_array_append_new(kinds, json_string(str_at(an, "kind")));
        if (str_at(an, "listKind"))
            json_array_append_new(kinds, json_string(str_at(an, "listKind")));
    }
    const char *hit = NULL;
    if (listed(pool, str_at(names, "plural"))) {
        snprintf(reason, rn, "PluralConflict");
        hit = str_at(names, "plural");
    } else if (listed(pool, str_at(names, "singular"))) {
        snprintf(reason, rn, "SingularConflict");
        hit = str_at(names, "singular");
    } else if (listed(kinds, str_at(names, "kind"))) {
        snprintf(reason, rn, "KindConflict");
        hit = str_at(names, "kind");
    } else if (listed(kinds, str_at(names, "listKind"))) {
        snprintf(reason, rn, "ListKindConflict");
        hit = str_at(names, "listKind");
    } else {
        json_array_foreach(json_object_get(names, "shortNames"), i, o)
        {
            if (!hit && listed(pool, json_string_value(o))) {
                snprintf(reason, rn, "ShortNamesConflict");
                hit = json_string_value(o);
            }
        }
    }
    if (hit)
        snprintf(msg, mn, "\"%.200s\" is already in use", hit);
    json_decref(pool);
    json_decref(kinds);
    return hit != NULL;
}

static int crd_admit(const sw_kind_ctx *ctx, sw_objects *o, json_t *obj)
{
    json_t *others = NULL;
    int error = o->list(o, &sw_kind_crd, NULL, &others);
    if (error < 0)
        return error;
    char reason[64], msg[300];
    if (name_conflict(obj, others, reason, sizeof(reason), msg, sizeof(msg))) {
        set_condition(obj, "NamesAccepted", "False", reason, msg);
        if (!condition_true(obj, "Established")) /* once Established, for life */
            set_condition(obj, "Established", "False", "NotAccepted", "not all names are accepted");
    } else {
        json_object_set(sw_json_obj_path(obj, "status"), "acceptedNames",
                        sw_json_at(obj, "spec.names"));
        set_condition(obj, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
        set_condition(obj, "Established", "True", "InitialNamesAccepted",
                      "the initial names have been accepted");
    }
    json_decref(others);
    return 0;
}

/* ---- the CRD kind: validation (crd-gc.md §1.2) ---- */

static int invalid(const char *field, const char *value, const char *detail)
{
    return sw_names_invalid(SW_EINVALID, field, value, detail);
}

static int check_names(const json_t *crd)
{
    const json_t *n = sw_json_at(crd, "spec.names");
    const char *plural = str_at(n, "plural"), *kind = str_at(n, "kind");
    if (!plural || !*plural)
        return sw_error_set(SW_EINVALID, "spec.names.plural: Required value");
    if (!kind || !*kind)
        return sw_error_set(SW_EINVALID, "spec.names.kind: Required value");
    const char *fields[2] = {"plural", "singular"};
    for (int f = 0; f < 2; f++) {
        const char *s = str_at(n, fields[f]);
        char field[64];
        snprintf(field, sizeof(field), "spec.names.%s", fields[f]);
        if (s && !dns1035(s))
            return invalid(field, s,
                           "a lowercase RFC 1035 label must consist of lower case alphanumeric "
                           "characters or '-', start with an alphabetic character, and end with an "
                           "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
    }
    const char *lists[2] = {"shortNames", "categories"};
    for (int l = 0; l < 2; l++) {
        const json_t *arr = json_object_get(n, lists[l]);
        if (json_array_size(arr) > MAX_NAMES)
            return sw_error_set(SW_EINVALID,
                                "spec.names.%s: Too many: %zu: must have at most %d "
                                "items",
                                lists[l], json_array_size(arr), MAX_NAMES);
        size_t i;
        json_t *x;
        json_array_foreach(arr, i, x)
        {
            char field[64];
            snprintf(field, sizeof(field), "spec.names.%s[%zu]", lists[l], i);
            if (!dns1035(json_string_value(x)))
                return invalid(field, json_string_value(x) ?: "",
                               "a lowercase RFC 1035 label must consist of lower case "
                               "alphanumeric characters or '-', start with an alphabetic "
                               "character, and end with an alphanumeric character");
        }
    }
    char lk[80], lkind[80];
    lower(kind, lkind, sizeof(lkind));
    lower(str_at(n, "listKind"), lk, sizeof(lk));
    if (!dns1035(lkind))
        return invalid("spec.names.kind", kind,
                       "may have mixed case, but should otherwise match: "
                       "[a-z]([-a-z0-9]*[a-z0-9])?");
    if (str_at(n, "listKind") && !dns1035(lk))
        return invalid("spec.names.listKind", str_at(n, "listKind"),
                       "may have mixed case, but should otherwise match: "
                       "[a-z]([-a-z0-9]*[a-z0-9])?");
    if (sw_str_eq(kind, str_at(n, "listKind")))
        return invalid("spec.names.listKind", kind, "kind and listKind may not be the same");
    return 0;
}

static int check_columns(const json_t *ver, const char *at)
{
    static const char *const types[] = {"integer", "number", "string", "boolean", "date", NULL};
    static const char *const formats[] = {"int32", "int64",     "float",    "double", "byte",
                                          "date",  "date-time", "password", NULL};
    const json_t *cols = json_object_get(ver, "additionalPrinterColumns");
    if (json_array_size(cols) > MAX_COLUMNS)
        return sw_error_set(SW_EINVALID,
                            "%s.additionalPrinterColumns: Too many: %zu: must have at "
                            "most %d items",
                            at, json_array_size(cols), MAX_COLUMNS);
    size_t i;
    json_t *c;
    json_array_foreach(cols, i, c)
    {
        char p[160];
        snprintf(p, sizeof(p), "%s.additionalPrinterColumns[%zu]", at, i);
        if (!str_at(c, "name") || !*str_at(c, "name"))
            return sw_error_set(SW_EINVALID, "%s.name: Required value", p);
        int error = sw_kind_check_enum(c, p, "type", types, true);
        if (error == 0 && str_at(c, "format"))
            error = sw_kind_check_enum(c, p, "format", formats, false);
        if (error < 0)
            return error;
        const char *jp = str_at(c, "jsonPath");
        char f[200];
        snprintf(f, sizeof(f), "%s.jsonPath", p);
        if (!jp || !*jp)
            return sw_error_set(SW_EINVALID, "%s: Required value", f);
        if (sw_jsonpath_check(jp) < 0)
            return invalid(f, jp, sw_error_msg());
    }
    return 0;
}

static int check_scale(const json_t *ver, const char *at)
{
    const json_t *sc = sw_json_at(ver, "subresources.scale");
    if (!sc)
        return 0;
    const struct {
        const char *key, *prefix;
        bool required;
    } paths[] = {{"specReplicasPath", ".spec.", true},
                 {"statusReplicasPath", ".status.", true},
                 {"labelSelectorPath", NULL, false}};
    for (size_t i = 0; i < 3; i++) {
        const char *p = str_at(sc, paths[i].key);
        char f[200];
        snprintf(f, sizeof(f), "%s.subresources.scale.%s", at, paths[i].key);
        if (!p && paths[i].required)
            return sw_error_set(SW_EINVALID, "%s: Required value", f);
        if (!p)
            continue;
        bool ok = paths[i].prefix ? sw_str_prefix(p, paths[i].prefix)
                                  : sw_str_prefix(p, ".spec.") || sw_str_prefix(p, ".status.");
        if (!ok || strpbrk(p, "[]{}*@'\" ") || sw_jsonpath_check(p) < 0)
            return invalid(f, p,
                           paths[i].prefix ? (i == 0 ? "should be a json path under .spec"
                                                     : "should be a json path under .status")
                                           : "should be a json path under either .spec or .status");
    }
    return 0;
}

static int check_selectable(const json_t *ver, const char *at)
{
    const json_t *list = json_object_get(ver, "selectableFields");
    if (!list)
        return 0;
    if (json_array_size(list) > MAX_SELECTABLE)
        return sw_error_set(SW_EINVALID,
                            "%s.selectableFields: Too many: %zu: must have at most %d "
                            "items",
                            at, json_array_size(list), MAX_SELECTABLE);
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x)
    {
        const char *p = str_at(x, "jsonPath");
        char f[240];
        snprintf(f, sizeof(f), "%s.selectableFields[%zu].jsonPath", at, i);
        if (!p)
            return sw_error_set(SW_EINVALID, "%s: Required value", f);
        if (p[0] != '.' || !p[1] || strpbrk(p, "[]{}*@'\" ") || strstr(p, "..") ||
            sw_jsonpath_check(p) < 0)
            return invalid(f, p, "must be a simple json path starting with .");
        for (size_t j = 0; j < i; j++)
            if (sw_str_eq(str_at(json_array_get(list, j), "jsonPath"), p))
                return sw_error_set(SW_EINVALID, "%s: Duplicate value: \"%s\"", f, p);
    }
    return 0;
}

/* The path schema errors of version i are reported under (kube's conversion quirk: a schema
 * that every version shares reads as spec.validation.openAPIV3Schema). */
static void schema_field(const json_t *versions, size_t i, char *out, size_t n)
{
    const json_t *first = sw_json_at(json_array_get(versions, 0), "schema.openAPIV3Schema");
    bool shared = true;
    size_t j;
    json_t *v;
    json_array_foreach(versions, j, v) shared =
        shared && json_equal(sw_json_at(v, "schema.openAPIV3Schema"), first);
    if (shared)
        snprintf(out, n, "spec.validation.openAPIV3Schema");
    else
        snprintf(out, n, "spec.versions[%zu].schema.openAPIV3Schema", i);
}

static int check_versions(const json_t *crd)
{
    const json_t *versions = sw_json_at(crd, "spec.versions");
    size_t n = json_array_size(versions), storages = 0;
    if (!n)
        return sw_error_set(SW_EINVALID, "spec.versions: Invalid value: null: must have exactly "
                                         "one version marked as storage version");
    if (n > MAX_VERSIONS)
        return sw_error_set(SW_EINVALID, "spec.versions: Too many: %zu: must have at most %d items",
                            n, MAX_VERSIONS);
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v)
    {
        char at[64];
        snprintf(at, sizeof(at), "spec.versions[%zu]", i);
        const char *name = str_at(v, "name");
        char f[96];
        snprintf(f, sizeof(f), "%s.name", at);
        if (!name || !dns1035(name))
            return invalid(f, name ? name : "",
                           "a DNS-1035 label must consist of lower case alphanumeric characters "
                           "or '-', start with an alphabetic character, and end with an "
                           "alphanumeric character");
        for (size_t j = 0; j < i; j++)
            if (sw_str_eq(str_at(json_array_get(versions, j), "name"), name))
                return sw_error_set(SW_EINVALID, "%s: Duplicate value: \"%s\"", f, name);
        if (sw_json_bool_at(v, "storage"))
            storages++;
        const json_t *schema = sw_json_at(v, "schema.openAPIV3Schema");
        if (!json_is_object(schema))
            return sw_error_set(SW_EINVALID, "%s.schema.openAPIV3Schema: Required value", at);
        char sf[128], cel[1200];
        schema_field(versions, i, sf, sizeof(sf));
        if (find_cel(schema, sf, cel, sizeof(cel), 0))
            return sw_error_set(SW_EINVALID,
                                "%s: Forbidden: slipway does not evaluate CEL rules "
                                "(x-kubernetes-validations); a CRD with rules is refused rather "
                                "than served with its rules unchecked (docs/crds.md)",
                                cel);
        sw_oas *compiled = NULL;
        json_t *causes = NULL;
        bool status = json_is_object(sw_json_at(v, "subresources.status"));
        if (sw_oas_compile(schema, sf, status, &compiled, &causes) < 0) {
            json_t *c = json_array_get(causes, 0);
            char msg[900];
            snprintf(msg, sizeof(msg), "%s: %s", str_at(c, "field") ?: sf,
                     str_at(c, "message") ?: "invalid schema");
            return sw_error_set_causes(SW_EINVALID, causes, "%s", msg);
        }
        sw_oas_free(compiled);
        int error = check_columns(v, at);
        if (error == 0)
            error = check_scale(v, at);
        if (error == 0)
            error = check_selectable(v, at);
        if (error < 0)
            return error;
    }
    if (storages != 1)
        return sw_error_set(SW_EINVALID,
                            "spec.versions: Invalid value: %zu: must have exactly "
                            "one version marked as storage version",
                            storages);
    return 0;
}

static int crd_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const scopes[] = {"Cluster", "Namespaced", NULL};
    static const char *const strategies[] = {"None", NULL};
    const char *group = str_at(obj, "spec.group"), *name = str_at(obj, "metadata.name");
    const char *plural = str_at(obj, "spec.names.plural");
    /* the name follows from these, so a change to them is reported as what it is */
    if (old && !sw_str_eq(group, str_at(old, "spec.group")))
        return invalid("spec.group", group, "field is immutable");
    if (old && !sw_str_eq(plural, str_at(old, "spec.names.plural")))
        return invalid("spec.names.plural", plural, "field is immutable");
    if (!group || !*group)
        return sw_error_set(SW_EINVALID, "spec.group: Required value");
    if (sw_names_check_subdomain(group) < 0)
        return invalid("spec.group", group, sw_error_msg());
    if (!strchr(group, '.'))
        return invalid("spec.group", group, "should be a domain with at least one dot");
    int error = check_names(obj);
    if (error < 0)
        return error;
    char want[400];
    snprintf(want, sizeof(want), "%s.%s", plural, group);
    if (!sw_str_eq(name, want))
        return invalid("metadata.name", name ? name : "",
                       "must be spec.names.plural+\".\"+spec.group");
    if ((sw_str_suffix(group, ".k8s.io") || sw_str_eq(group, "k8s.io") ||
         sw_str_suffix(group, ".kubernetes.io") || sw_str_eq(group, "kubernetes.io")) &&
        !json_object_get(sw_json_at(obj, "metadata.annotations"), "api-approved.kubernetes.io"))
        return sw_error_set(SW_EINVALID,
                            "metadata.annotations[api-approved.kubernetes.io]: Required value: "
                            "protected groups must have approval annotation "
                            "\"api-approved.kubernetes.io\", see "
                            "https://github.com/kubernetes/enhancements/pull/1111");
    if ((error = sw_kind_check_enum(obj, NULL, "spec.scope", scopes, true)) < 0)
        return error;
    if ((error = sw_kind_check_enum(obj, NULL, "spec.conversion.strategy", strategies, false)) < 0)
        return sw_error_set(SW_EINVALID,
                            "%s (slipway has no conversion webhooks: every version "
                            "of a CRD is served with conversion None)",
                            sw_error_msg());
    if (sw_json_bool_at(obj, "spec.preserveUnknownFields"))
        return sw_error_set(SW_EINVALID,
                            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, "
                            "set x-kubernetes-preserve-unknown-fields to true in "
                            "spec.versions[*].schema instead");
    if ((error = check_versions(obj)) < 0)
        return error;
    if (!old)
        return 0;
    if (condition_true(old, "Established")) {
        if (!sw_str_eq(str_at(obj, "spec.scope"), str_at(old, "spec.scope")))
            return invalid("spec.scope", str_at(obj, "spec.scope"), "field is immutable");
        if (!sw_str_eq(str_at(obj, "spec.names.kind"), str_at(old, "spec.names.kind")))
            return invalid("spec.names.kind", str_at(obj, "spec.names.kind"), "field is immutable");
    }
    size_t i;
    json_t *sv;
    json_array_foreach(sw_json_at(obj, "status.storedVersions"), i, sv)
    {
        bool present = false;
        size_t j;
        json_t *v;
        json_array_foreach(sw_json_at(obj, "spec.versions"), j, v) present =
            present || sw_str_eq(str_at(v, "name"), json_string_value(sv));
        if (!present)
            return sw_error_set(SW_EINVALID,
                                "status.storedVersions[%zu]: Invalid value: \"%s\": missing from "
                                "spec.versions; %s was previously a storage version, and must "
                                "remain in spec.versions until a storage migration ensures no "
                                "data remains persisted in %s and removes %s from "
                                "status.storedVersions",
                                i, json_string_value(sv) ?: "", json_string_value(sv) ?: "",
                                json_string_value(sv) ?: "", json_string_value(sv) ?: "");
    }
    return 0;
}

/* ---- the CRD kind: life ---- */

static void crd_committed(const sw_kind_ctx *ctx, const json_t *obj)
{
    sync_crd(obj);
}

static void crd_removed(const sw_kind_ctx *ctx, const char *ns, const char *name)
{
    if (name)
        unsync_crd(name);
}

/* A DELETE puts the cleanup finalizer on (the instances go first) and says so. */
static int crd_prepare_delete(const sw_kind_ctx *ctx, json_t *obj, const sw_delete_opts *o)
{
    if (sw_json_at(obj, "metadata.deletionTimestamp"))
        return SW_DELETE_GENERIC;
    json_t *fin = sw_json_at(obj, "metadata.finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new(sw_json_obj_path(obj, "metadata"), "finalizers", fin);
    }
    if (!listed(fin, SW_CRD_FINALIZER))
        json_array_append_new(fin, json_string(SW_CRD_FINALIZER));
    set_condition(obj, "Terminating", "True", "InstanceDeletionPending",
                  "CustomResourceDefinition marked for deletion; CustomResource deletion will "
                  "begin soon");
    return SW_DELETE_GENERIC;
}

static void established_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_puts(out, condition_true(obj, "Established") ? "True" : "False");
}

static void created_cell(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "metadata.creationTimestamp", out);
}

static const sw_column crd_columns[] = {
    {"Created At", "date", "When it was created", 0, created_cell, NULL, NULL},
    {"Established", "string", "Whether its resource is served", 1, established_cell, NULL, NULL},
};

const sw_kind sw_kind_crd = {
    .group = "apiextensions.k8s.io",
    .version = "v1",
    .kind = "CustomResourceDefinition",
    .plural = "customresourcedefinitions",
    .singular = "customresourcedefinition",
    .short_names = {"crd", "crds"},
    .namespaced = false,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":\"any\",\"status\":\"any\"}",
    .columns = crd_columns,
    .ncolumns = 2,
    .no_age = true,
    .prepare_create = crd_prepare_create,
    .prepare_update = crd_prepare_update,
    .admit = crd_admit,
    .validate = crd_validate,
    .committed = crd_committed,
    .removed = crd_removed,
    .prepare_delete = crd_prepare_delete,
};

bool sw_cr_read_normalizes(const sw_kind *k)
{
    const crv *v = k->data;
    return v && v->read_normalize;
}

const char *const *sw_cr_verbs(const sw_kind *k)
{
    static const char *const terminating[] = {"delete", "deletecollection", "get", "list", "watch",
                                              NULL};
    const crv *v = k->data;
    return v && v->terminating ? terminating : NULL;
}

json_t *sw_cr_openapi(const sw_kind *k)
{
    const crv *v = k->data;
    const json_t *src = v ? sw_oas_source(v->schema) : NULL;
    json_t *o = src ? json_deep_copy(src) : json_pack("{s:s}", "type", "object");
    json_t *props = json_object_get(o, "properties");
    if (!json_is_object(props)) {
        props = json_object();
        json_object_set_new(o, "properties", props);
    }
    static const char *const meta[][2] = {
        {"apiVersion", "APIVersion defines the versioned schema of this representation of an "
                       "object."},
        {"kind", "Kind is a string value representing the REST resource this object represents."},
    };
    for (size_t i = 0; i < 2; i++)
        if (!json_object_get(props, meta[i][0]))
            json_object_set_new(
                props, meta[i][0],
                json_pack("{s:s, s:s}", "type", "string", "description", meta[i][1]));
    if (!json_object_get(props, "metadata"))
        json_object_set_new(props, "metadata",
                            json_pack("{s:s, s:s}", "type", "object", "description",
                                      "Standard object's metadata."));
    json_object_set_new(
        o, "x-kubernetes-group-version-kind",
        json_pack("[{s:s, s:s, s:s}]", "group", k->group, "version", k->version, "kind", k->kind));
    return o;
}
