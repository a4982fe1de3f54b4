/* kinds: the one table of registered kinds, lookups over it, and helpers shared by kind files. */
#include "kinds/kind.h"

#include "meta/schema.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

extern const sw_kind sw_kind_namespace, sw_kind_secret, sw_kind_configmap, sw_kind_event,
    sw_kind_serviceaccount, sw_kind_lease, sw_kind_imagestream, sw_kind_image,
    sw_kind_imagestreamtag, sw_kind_imagestreamimage, sw_kind_imagestreammapping,
    sw_kind_imagestreamimport, sw_kind_buildconfig, sw_kind_build, sw_kind_managedimage,
    sw_kind_pod, sw_kind_replicationcontroller, sw_kind_deployment, sw_kind_replicaset,
    sw_kind_statefulset, sw_kind_daemonset, sw_kind_controllerrevision, sw_kind_job,
    sw_kind_cronjob, sw_kind_deploymentconfig, sw_kind_crd, sw_kind_role, sw_kind_clusterrole,
    sw_kind_rolebinding, sw_kind_clusterrolebinding, sw_kind_selfsubjectreview, sw_kind_tokenreview,
    sw_kind_selfsubjectaccessreview, sw_kind_selfsubjectrulesreview;

static const sw_kind *const table[] = {
    &sw_kind_namespace,
    &sw_kind_secret,
    &sw_kind_configmap,
    &sw_kind_event,
    &sw_kind_serviceaccount,
    &sw_kind_pod,
    &sw_kind_replicationcontroller,
    &sw_kind_lease,
    &sw_kind_deployment,
    &sw_kind_replicaset,
    &sw_kind_statefulset,
    &sw_kind_daemonset,
    &sw_kind_controllerrevision,
    &sw_kind_job,
    &sw_kind_cronjob,
    &sw_kind_imagestream,
    &sw_kind_image,
    &sw_kind_imagestreamtag,
    &sw_kind_imagestreamimage,
    &sw_kind_imagestreammapping,
    &sw_kind_imagestreamimport,
    &sw_kind_buildconfig,
    &sw_kind_build,
    &sw_kind_managedimage,
    &sw_kind_deploymentconfig,
    &sw_kind_crd,
    &sw_kind_role,
    &sw_kind_clusterrole,
    &sw_kind_rolebinding,
    &sw_kind_clusterrolebinding,
    &sw_kind_selfsubjectreview,
    &sw_kind_tokenreview,
    &sw_kind_selfsubjectaccessreview,
    &sw_kind_selfsubjectrulesreview,
};
#define NKINDS (sizeof(table) / sizeof(table[0]))

static const sw_schema *schemas[NKINDS];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;

static void parse_schemas(void)
{
    for (size_t i = 0; i < NKINDS; i++) {
        sw_schema *s = NULL;
        if (table[i]->schema_text && sw_schema_parse(table[i]->schema_text, &s) < 0) {
            fprintf(stderr, "slipway: fatal: schema of %s does not parse\n", table[i]->kind);
            abort();
        }
        schemas[i] = s;
    }
}

/* ---- run-time kinds ---- */

typedef struct dyn {
    sw_kind k; /* first: a registered kind's pointer is its dyn's */
    int refs;  /* under lock for changes to zero; __atomic otherwise */
    bool removed;
    void *data;
    void (*destroy)(void *data);
    struct dyn *next;
} dyn;

static pthread_mutex_t dyn_lock = PTHREAD_MUTEX_INITIALIZER;
static dyn *dyns; /* registered, oldest first */

const sw_kind *sw_kind_ref(const sw_kind *k)
{
    if (k && k->dynamic)
        __atomic_add_fetch(&((dyn *)(void *)k)->refs, 1, __ATOMIC_RELAXED);
    return k;
}

void sw_kind_release(const sw_kind *k)
{
    if (!k || !k->dynamic)
        return;
    dyn *d = (dyn *)(void *)k;
    pthread_mutex_lock(&dyn_lock);
    bool last = __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0;
    pthread_mutex_unlock(&dyn_lock);
    if (last) { /* only an unregistered kind loses its registry reference */
        if (d->destroy)
            d->destroy(d->data);
        sw_free(d);
    }
}

int sw_kinds_register(const sw_kind *tmpl, void *data, void (*destroy)(void *data),
                      const sw_kind **out)
{
    pthread_mutex_lock(&dyn_lock);
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(table[i]->group, tmpl->group) && !strcmp(table[i]->plural, tmpl->plural))
            goto taken;
    for (dyn *d = dyns; d; d = d->next)
        if (!strcmp(d->k.group, tmpl->group) && !strcmp(d->k.plural, tmpl->plural) &&
            !strcmp(d->k.version, tmpl->version))
            goto taken;
    dyn *d = sw_calloc(1, sizeof(*d));
    d->k = *tmpl;
    d->k.dynamic = true;
    d->k.data = data;
    d->data = data;
    d->destroy = destroy;
    d->refs = out ? 2 : 1; /* the registry's, and the caller's */
    dyn **tail = &dyns;
    while (*tail)
        tail = &(*tail)->next;
    *tail = d;
    pthread_mutex_unlock(&dyn_lock);
    if (out)
        *out = &d->k;
    return 0;
taken:
    pthread_mutex_unlock(&dyn_lock);
    return sw_error_set(SW_EEXISTS, "%s.%s/%s is served already", tmpl->plural, tmpl->group,
                        tmpl->version);
}

int sw_kinds_replace(const sw_kind *old, const sw_kind *tmpl, void *data,
                     void (*destroy)(void *data), const sw_kind **out)
{
    pthread_mutex_lock(&dyn_lock);
    dyn **at = NULL;
    for (dyn **p = &dyns; *p; p = &(*p)->next)
        if (&(*p)->k == old)
            at = p;
    if (!at) {
        pthread_mutex_unlock(&dyn_lock);
        return sw_kinds_register(tmpl, data, destroy, out);
    }
    dyn *prev = *at;
    dyn *d = sw_calloc(1, sizeof(*d));
    d->k = *tmpl;
    d->k.dynamic = true;
    d->k.data = data;
    d->data = data;
    d->destroy = destroy;
    d->refs = out ? 2 : 1;
    d->next = prev->next;
    *at = d; /* in one step: no lookup finds neither */
    prev->removed = true;
    pthread_mutex_unlock(&dyn_lock);
    sw_kind_release(&prev->k); /* the registry's reference to the old one */
    if (out)
        *out = &d->k;
    return 0;
}

void sw_kinds_unregister(const sw_kind *k)
{
    if (!k || !k->dynamic)
        return;
    pthread_mutex_lock(&dyn_lock);
    bool found = false;
    for (dyn **p = &dyns; *p; p = &(*p)->next)
        if (&(*p)->k == k) {
            dyn *d = *p;
            *p = d->next;
            d->removed = true;
            found = true;
            break;
        }
    pthread_mutex_unlock(&dyn_lock);
    if (found)
        sw_kind_release(k); /* the registry's reference */
}

/* Under dyn_lock: the run-time kind matching, referenced, or NULL. */
static const sw_kind *find_dyn(const char *group, const char *version, const char *plural,
                               const char *kind)
{
    for (dyn *d = dyns; d; d = d->next)
        if (!strcmp(d->k.group, group) && (!version || !strcmp(d->k.version, version)) &&
            (!plural || !strcmp(d->k.plural, plural)) && (!kind || !strcmp(d->k.kind, kind)))
            return sw_kind_ref(&d->k);
    return NULL;
}

const sw_kind **sw_kinds_list(size_t *count)
{
    pthread_mutex_lock(&dyn_lock);
    size_t n = NKINDS;
    for (dyn *d = dyns; d; d = d->next)
        n++;
    const sw_kind **out = sw_calloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < NKINDS; i++)
        out[i] = table[i];
    size_t i = NKINDS;
    for (dyn *d = dyns; d; d = d->next)
        out[i++] = sw_kind_ref(&d->k);
    pthread_mutex_unlock(&dyn_lock);
    *count = n;
    return out;
}

void sw_kinds_list_free(const sw_kind **kinds, size_t count)
{
    for (size_t i = 0; kinds && i < count; i++)
        sw_kind_release(kinds[i]);
    sw_free(kinds);
}

const sw_kind *sw_kinds_find(const char *group, const char *version, const char *plural)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(table[i]->group, group) && !strcmp(table[i]->plural, plural) &&
            (!version || !strcmp(table[i]->version, version)))
            return table[i];
    pthread_mutex_lock(&dyn_lock);
    const sw_kind *k = find_dyn(group, version, plural, NULL);
    pthread_mutex_unlock(&dyn_lock);
    return k;
}

const sw_kind *sw_kinds_find_kind(const char *group, const char *kind)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(table[i]->group, group) && !strcmp(table[i]->kind, kind))
            return table[i];
    pthread_mutex_lock(&dyn_lock);
    const sw_kind *k = find_dyn(group, NULL, NULL, kind);
    pthread_mutex_unlock(&dyn_lock);
    return k;
}

bool sw_kind_serves(const sw_kind *k, const char *verb)
{
    if (!k->verbs)
        return true;
    return sw_str_one_of(verb, k->verbs);
}

const char *sw_kind_api_version(const sw_kind *k, char *buf, size_t n)
{
    if (k->group[0])
        snprintf(buf, n, "%s/%s", k->group, k->version);
    else
        snprintf(buf, n, "%s", k->version);
    return buf;
}

int sw_kind_check_enum(const json_t *obj, const char *prefix, const char *path,
                       const char *const *set, bool required)
{
    const char *v = sw_json_str_at(obj, path);
    if ((!v && !required) || sw_str_one_of(v, set))
        return 0;
    char allowed[256] = "";
    for (size_t i = 0; set[i]; i++)
        snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed), "%s\"%s\"",
                 i ? ", " : "", set[i]);
    const char *dot = prefix && *prefix ? "." : "";
    prefix = prefix ? prefix : "";
    if (!v)
        return sw_error_set(SW_EINVALID, "%s%s%s: Required value: one of %s", prefix, dot, path,
                            allowed);
    return sw_error_set(SW_EINVALID, "%s%s%s: Unsupported value: \"%.64s\": supported values: %s",
                        prefix, dot, path, v, allowed);
}

const sw_schema *sw_kind_schema(const sw_kind *k)
{
    pthread_once(&schemas_once, parse_schemas);
    for (size_t i = 0; i < NKINDS; i++)
        if (table[i] == k)
            return schemas[i];
    return NULL;
}

void sw_column_str(const json_t *obj, const char *path, sw_buf *out)
{
    const char *s = sw_json_str_at(obj, path);
    sw_buf_puts(out, s && *s ? s : "<none>");
}

int sw_subreq_json(const sw_subreq *r, const char *what, size_t max, json_t **out)
{
    *out = NULL;
    if (!r->body_len) {
        *out = json_object();
        return 0;
    }
    if (r->body_len > max)
        return sw_error_set(SW_ELIMIT, "%s is at most %zu bytes", what, max);
    int error = sw_json_parse(r->body, r->body_len, SW_JSON_MAX_DEPTH, 0, out);
    if (error == 0 && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return sw_error_set(SW_EBADREQUEST, "%s must be a JSON object", what);
    }
    return error;
}
