/* deployment: the standalone rollout of Deployments, StatefulSets and DaemonSets (see
 * deployment.h). A reconcile of a Deployment ns/name
 * reads the Deployment and its ReplicaSets from the API, finds or creates the ReplicaSet of the
 * current template, gives it every replica and the newest revision, scales the others to 0,
 * prunes the history, and writes the Deployment's revision annotation and status — each write
 * only when something differs, so a steady state writes nothing. */
#include "controllers/deployment.h"

#include "client/informer.h"
#include "controllers/deploymentconfig.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_LABEL "pod-template-hash"
#define REV_ANN "deployment.kubernetes.io/revision"
#define DESIRED_ANN "deployment.kubernetes.io/desired-replicas"
#define MAX_ANN "deployment.kubernetes.io/max-replicas"
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

struct sw_deploy_controller {
    sw_client *client;
    sw_controller *loop;
    /* its own lean informers: it starts after the shared ones (once the server is known to be
     * slipway's), when they take no more handlers, and the garbage collector's discovery adds
     * its own to the shared lean ones at any time */
    sw_informer *deployments, *sets, *statefulsets, *daemonsets;
    sw_dc_controller *configs; /* DeploymentConfigs (deploymentconfig.h) */
};

/* ---- pure helpers ---- */

/* Drops nulls, empty objects and empty arrays, recursively: what Go's typed decoding makes
 * equal (kubectl's rollback sends `creationTimestamp: null` and `resources: {}`, which a
 * template that never had them must still equal). */
static void drop_zero(json_t *v)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x)
        {
            drop_zero(x);
            if (json_is_null(x) || (json_is_object(x) && !json_object_size(x)) ||
                (json_is_array(x) && !json_array_size(x)))
                json_object_del(v, k);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) drop_zero(x);
    }
}

static json_t *without_hash(const json_t *tmpl)
{
    json_t *t = json_deep_copy(tmpl);
    if (!json_is_object(t)) {
        json_decref(t);
        return json_object();
    }
    drop_zero(t);
    json_t *labels = sw_json_at(t, "metadata.labels");
    if (json_is_object(labels)) {
        json_object_del(labels, HASH_LABEL);
        if (!json_object_size(labels))
            json_object_del(json_object_get(t, "metadata"), "labels");
    }
    json_t *meta = json_object_get(t, "metadata");
    if (json_is_object(meta) && !json_object_size(meta))
        json_object_del(t, "metadata");
    return t;
}

bool sw_deploy_same_template(const json_t *a, const json_t *b)
{
    json_t *x = without_hash(a), *y = without_hash(b);
    bool same = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

void sw_deploy_template_hash(const json_t *template, int64_t cc, char *out, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    json_t *t = without_hash(template);
    char *text = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
    uint32_t h = 2166136261u;
    for (const char *p = text ? text : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    for (int64_t i = 0; i < cc; i++) { /* a collision: hash the count in as well */
        h ^= (uint32_t)(i & 0xff);
        h *= 16777619u;
    }
    free(text);
    json_decref(t);
    char dec[16];
    snprintf(dec, sizeof(dec), "%u", h);
    size_t i = 0;
    for (; dec[i] && i + 1 < n; i++)
        out[i] = alphabet[(unsigned char)dec[i] % (sizeof(alphabet) - 1)];
    out[i] = '\0';
}

/* ---- readers ---- */

static const char *ann(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(sw_json_at(obj, "metadata.annotations"), key));
}

static int64_t revision_of(const json_t *rs)
{
    int64_t v = 0;
    const char *s = ann(rs, REV_ANN);
    if (s)
        sw_str_to_i64(s, &v);
    return v;
}

/* maxSurge of a RollingUpdate (an int or a percentage rounded up), 0 for Recreate. */
static int64_t surge(const json_t *d, int64_t replicas)
{
    if (!sw_str_eq(sw_json_str_at(d, "spec.strategy.type"), "RollingUpdate"))
        return 0;
    const json_t *v = sw_json_at(d, "spec.strategy.rollingUpdate.maxSurge");
    if (json_is_integer(v))
        return json_integer_value(v);
    const char *s = json_string_value(v);
    int64_t pct = 25;
    if (s && strlen(s) > 1 && s[strlen(s) - 1] == '%') {
        char num[16];
        snprintf(num, sizeof(num), "%.*s", (int)(strlen(s) - 1), s);
        if (sw_str_to_i64(num, &pct) < 0)
            pct = 25;
    }
    return (replicas * pct + 99) / 100;
}

/* The objects of res (ReplicaSets, ControllerRevisions) that d controls, listed by d's selector
 * (they carry its labels); the list holds new references. */
static int owned(sw_deploy_controller *dc, const sw_resource *res, const json_t *d, json_t **out)
{
    sw_buf sel = SW_BUF_INIT(4096);
    const char *k;
    json_t *v;
    json_object_foreach(sw_json_at(d, "spec.selector.matchLabels"), k, v) sw_buf_printf(
        &sel, "%s%s=%s", *sw_buf_cstr(&sel) ? "," : "", k, json_string_value(v) ?: "");
    int error = sw_buf_error(&sel);
    if (error == 0)
        error = sw_client_list_controlled(dc->client, res, sw_json_str_at(d, "metadata.namespace"),
                                          *sw_buf_cstr(&sel) ? sw_buf_cstr(&sel) : NULL,
                                          sw_json_str_at(d, "metadata.uid"), out);
    else
        *out = json_array();
    sw_buf_dispose(&sel);
    return error;
}

/* ---- writes ---- */

/* The annotations a new ReplicaSet takes from its Deployment (kube copies all but these). */
static json_t *copied_annotations(const json_t *d)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(sw_json_at(d, "metadata.annotations"), k, v)
    {
        if (strcmp(k, LAST_APPLIED) && strcmp(k, REV_ANN) && strcmp(k, DESIRED_ANN) &&
            strcmp(k, MAX_ANN) && strcmp(k, "deployment.kubernetes.io/revision-history"))
            json_object_set(out, k, v);
    }
    return out;
}

static int create_set(sw_deploy_controller *dc, const json_t *d, const char *hash, int64_t rev,
                      int64_t replicas, json_t **out)
{
    char name[320], revs[24], des[24], max[24];
    snprintf(name, sizeof(name), "%.240s-%s", sw_json_str_at(d, "metadata.name"), hash);
    snprintf(revs, sizeof(revs), "%lld", (long long)rev);
    snprintf(des, sizeof(des), "%lld", (long long)replicas);
    snprintf(max, sizeof(max), "%lld", (long long)(replicas + surge(d, replicas)));
    json_t *tmpl = json_deep_copy(sw_json_at(d, "spec.template"));
    json_object_set_new(sw_json_obj_path(tmpl, "metadata.labels"), HASH_LABEL, json_string(hash));
    json_t *sel = json_deep_copy(sw_json_at(d, "spec.selector"));
    json_object_set_new(sw_json_obj_path(sel, "matchLabels"), HASH_LABEL, json_string(hash));
    json_t *labels = json_deep_copy(sw_json_at(tmpl, "metadata.labels"));
    json_t *annotations = copied_annotations(d);
    json_object_set_new(annotations, REV_ANN, json_string(revs));
    json_object_set_new(annotations, DESIRED_ANN, json_string(des));
    json_object_set_new(annotations, MAX_ANN, json_string(max));
    json_t *rs = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:o, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:I, s:o, s:o, "
        "s:I}}",
        "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name, "namespace",
        sw_json_str_at(d, "metadata.namespace"), "labels", labels, "annotations", annotations,
        "ownerReferences", "apiVersion", "apps/v1", "kind", "Deployment", "name",
        sw_json_str_at(d, "metadata.name"), "uid", sw_json_str_at(d, "metadata.uid") ?: "",
        "controller", 1, "blockOwnerDeletion", 1, "spec", "replicas", (json_int_t)replicas,
        "selector", sel, "template", tmpl, "minReadySeconds",
        (json_int_t)sw_json_int_or(d, "spec.minReadySeconds", 0));
    int error = sw_client_create(dc->client, &sw_res_replicasets,
                                 sw_json_str_at(d, "metadata.namespace"), rs, out);
    json_decref(rs);
    return error;
}

/* Sets rs's replicas (and, for the newest, its revision and the annotations it carries from
 * its Deployment, as kubernetes.io/change-cause) and its status as if its pods were all ready;
 * writes only what differs. carry may be empty, never NULL. */
static int settle_set(sw_deploy_controller *dc, json_t *rs, int64_t replicas, int64_t rev,
                      const json_t *carry)
{
    const char *ns = sw_json_str_at(rs, "metadata.namespace");
    int error = 0;
    bool spec_change =
        sw_json_int_or(rs, "spec.replicas", 1) != replicas || (rev > 0 && revision_of(rs) != rev);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)carry, k, v)
    {
        if (!sw_json_same(json_object_get(sw_json_at(rs, "metadata.annotations"), k), v))
            spec_change = true;
    }
    json_t *cur = json_incref(rs);
    if (spec_change) {
        json_t *copy = json_deep_copy(rs), *saved = NULL;
        json_object_set_new(json_object_get(copy, "spec"), "replicas", json_integer(replicas));
        json_object_update(sw_json_obj_path(copy, "metadata.annotations"), (json_t *)carry);
        if (rev > 0) {
            char r[24];
            snprintf(r, sizeof(r), "%lld", (long long)rev);
            json_object_set_new(sw_json_obj_path(copy, "metadata.annotations"), REV_ANN,
                                json_string(r));
        }
        error = sw_client_update(dc->client, &sw_res_replicasets, ns, copy, &saved);
        json_decref(copy);
        if (error < 0) {
            json_decref(cur);
            return error;
        }
        json_decref(cur);
        cur = saved;
    }
    json_t *want =
        json_pack("{s:I, s:I, s:I, s:I, s:I}", "replicas", (json_int_t)replicas,
                  "fullyLabeledReplicas", (json_int_t)replicas, "readyReplicas",
                  (json_int_t)replicas, "availableReplicas", (json_int_t)replicas,
                  "observedGeneration", (json_int_t)sw_json_int_or(cur, "metadata.generation", 1));
    if (!json_equal(json_object_get(cur, "status"), want)) {
        json_t *copy = json_deep_copy(cur);
        json_object_set(copy, "status", want);
        error = sw_client_update_status(dc->client, &sw_res_replicasets, ns, copy, NULL);
        json_decref(copy);
    }
    json_decref(want);
    json_decref(cur);
    return error;
}

static int by_revision(const void *a, const void *b)
{
    int64_t x = revision_of(*(const json_t *const *)a), y = revision_of(*(const json_t *const *)b);
    return x < y ? -1 : x > y;
}

/* Old ReplicaSets (scaled to 0) past revisionHistoryLimit go, oldest first. */
static void prune(sw_deploy_controller *dc, const json_t *d, json_t *sets, const json_t *newest)
{
    int64_t keep = sw_json_int_or(d, "spec.revisionHistoryLimit", 10);
    size_t n = json_array_size(sets), old = 0;
    const json_t **v = sw_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const json_t *rs = json_array_get(sets, i);
        if (!sw_str_eq(sw_json_str_at(rs, "metadata.uid"), sw_json_str_at(newest, "metadata.uid")))
            v[old++] = rs;
    }
    qsort(v, old, sizeof(*v), by_revision);
    for (size_t i = 0; (int64_t)(old - i) > keep; i++) {
        const char *name = sw_json_str_at(v[i], "metadata.name");
        int error = sw_client_delete(dc->client, &sw_res_replicasets,
                                     sw_json_str_at(v[i], "metadata.namespace"), name);
        if (error < 0 && error != SW_ENOTFOUND)
            sw_log(SW_LOG_INFO, "deployment: cannot prune ReplicaSet %s: %s", name, sw_error_msg());
    }
    sw_free(v);
}

static json_t *conditions(const json_t *d, const json_t *newest, bool paused)
{
    char now[32], msg[400];
    sw_time_format(sw_time_now(), now, sizeof(now));
    snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has successfully progressed.",
             sw_json_str_at(newest, "metadata.name") ?: "");
    json_t *out = json_array();
    json_t *old = sw_json_at(d, "status.conditions");
    const char *types[2] = {"Available", "Progressing"};
    const char *status[2] = {"True", paused ? "Unknown" : "True"};
    const char *reasons[2] = {"MinimumReplicasAvailable",
                              paused ? "DeploymentPaused" : "NewReplicaSetAvailable"};
    const char *msgs[2] = {"Deployment has minimum availability.",
                           paused ? "Deployment is paused" : msg};
    for (int i = 0; i < 2; i++) {
        const char *since = now, *probe = now;
        size_t j;
        json_t *c;
        json_array_foreach(old, j, c)
        {
            if (sw_str_eq(sw_json_str_at(c, "type"), types[i]) &&
                sw_str_eq(sw_json_str_at(c, "status"), status[i]) &&
                sw_str_eq(sw_json_str_at(c, "reason"), reasons[i]) &&
                sw_str_eq(sw_json_str_at(c, "message"), msgs[i])) {
                since = sw_json_str_at(c, "lastTransitionTime") ?: now;
                probe = sw_json_str_at(c, "lastUpdateTime") ?: now;
            }
        }
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", types[i],
                                             "status", status[i], "lastUpdateTime", probe,
                                             "lastTransitionTime", since, "reason", reasons[i],
                                             "message", msgs[i]));
    }
    return out;
}

/* Whether ReplicaSet a was made before b (then by name, so the choice is the same each time). */
static bool older(const json_t *a, const json_t *b)
{
    int c = strcmp(sw_json_str_at(a, "metadata.creationTimestamp") ?: "",
                   sw_json_str_at(b, "metadata.creationTimestamp") ?: "");
    return c < 0 || (c == 0 && strcmp(sw_json_str_at(a, "metadata.name") ?: "",
                                      sw_json_str_at(b, "metadata.name") ?: "") < 0);
}

static int sync(sw_deploy_controller *dc, const char *ns, const char *name)
{
    json_t *d = NULL, *sets = NULL, *newest = NULL, *carry = NULL, *none = json_object();
    int error = sw_client_get(dc->client, &sw_res_deployments, ns, name, &d);
    if (error < 0 || sw_json_at(d, "metadata.deletionTimestamp"))
        goto done;
    if ((error = owned(dc, &sw_res_replicasets, d, &sets)) < 0)
        goto done;
    bool paused = sw_json_bool_at(d, "spec.paused");
    carry = copied_annotations(d);
    int64_t replicas = sw_json_int_or(d, "spec.replicas", 1), maxrev = 0;
    size_t i;
    json_t *rs;
    json_array_foreach(sets, i, rs)
    {
        /* the oldest set with the template (creation, then name: kube's FindNewReplicaSet) */
        if (sw_deploy_same_template(sw_json_at(rs, "spec.template"),
                                    sw_json_at(d, "spec.template")) &&
            (!newest || older(rs, newest)))
            newest = rs;
    }
    /* the highest revision among the others: only one below it renumbers the newest */
    json_array_foreach(sets, i, rs)
    {
        if (rs != newest && revision_of(rs) > maxrev)
            maxrev = revision_of(rs);
    }
    json_incref(newest);
    if (!newest && !paused) {
        char hash[16];
        sw_deploy_template_hash(sw_json_at(d, "spec.template"),
                                sw_json_int_or(d, "status.collisionCount", 0), hash, sizeof(hash));
        error = create_set(dc, d, hash, maxrev + 1, replicas, &newest);
        if (error == SW_EEXISTS) { /* another template hashed the same: count the collision */
            json_t *copy = json_deep_copy(d);
            sw_json_set_path(copy, "status.collisionCount",
                             json_integer(sw_json_int_or(d, "status.collisionCount", 0) + 1));
            error = sw_client_update_status(dc->client, &sw_res_deployments, ns, copy, NULL);
            json_decref(copy);
            if (error == 0)
                error = SW_ECONFLICT; /* look again with the new count */
            goto done;
        }
        if (error < 0)
            goto done;
        sw_log(SW_LOG_INFO, "deployment %s/%s: new ReplicaSet %s (revision %lld)", ns, name,
               sw_json_str_at(newest, "metadata.name"), (long long)(maxrev + 1));
    }
    /* the newest takes every replica and, rolled back to, the next revision */
    int64_t newrev = newest && revision_of(newest) <= maxrev ? maxrev + 1 : 0;
    json_array_foreach(sets, i, rs)
    {
        bool is_new = newest && sw_str_eq(sw_json_str_at(rs, "metadata.uid"),
                                          sw_json_str_at(newest, "metadata.uid"));
        if (!is_new && !paused && (error = settle_set(dc, rs, 0, 0, none)) < 0)
            goto done;
    }
    if (newest && (error = settle_set(dc, newest, replicas, newrev, carry)) < 0)
        goto done;
    if (newest)
        prune(dc, d, sets, newest);
    /* the Deployment: its revision annotation, then its status */
    char rev[24];
    snprintf(rev, sizeof(rev), "%lld",
             (long long)(newrev   ? newrev
                         : newest ? revision_of(newest)
                                  : 0));
    if (newest && !sw_str_eq(ann(d, REV_ANN), rev)) {
        json_t *copy = json_deep_copy(d), *saved = NULL;
        json_object_set_new(sw_json_obj_path(copy, "metadata.annotations"), REV_ANN,
                            json_string(rev));
        if ((error = sw_client_update(dc->client, &sw_res_deployments, ns, copy, &saved)) < 0) {
            json_decref(copy);
            goto done;
        }
        json_decref(copy);
        json_decref(d);
        d = saved;
    }
    int64_t updated = newest ? replicas : 0;
    json_t *st =
        json_pack("{s:I, s:I, s:I, s:I, s:I}", "observedGeneration",
                  (json_int_t)sw_json_int_or(d, "metadata.generation", 1), "replicas",
                  (json_int_t)replicas, "updatedReplicas", (json_int_t)updated, "readyReplicas",
                  (json_int_t)replicas, "availableReplicas", (json_int_t)replicas);
    if (sw_json_int_or(d, "status.collisionCount", 0))
        json_object_set_new(st, "collisionCount",
                            json_integer(sw_json_int_or(d, "status.collisionCount", 0)));
    json_object_set_new(st, "conditions", conditions(d, newest, paused));
    if (!json_equal(json_object_get(d, "status"), st)) {
        json_t *copy = json_deep_copy(d);
        json_object_set(copy, "status", st);
        error = sw_client_update_status(dc->client, &sw_res_deployments, ns, copy, NULL);
        json_decref(copy);
    }
    json_decref(st);
done:
    json_decref(newest);
    json_decref(sets);
    json_decref(d);
    json_decref(carry);
    json_decref(none);
    return error == SW_ENOTFOUND ? 0 : error;
}

/* ---- StatefulSets and DaemonSets: ControllerRevisions ---- */

/* The revision of d's current template (found or made, newest revision when reused): its name
 * into name. kube stores the template as a strategic merge patch that replaces it. */
static int current_revision(sw_deploy_controller *dc, const json_t *d, const char *kind, char *name,
                            size_t n)
{
    json_t *revs = NULL, *hit = NULL;
    int error = owned(dc, &sw_res_controllerrevisions, d, &revs);
    int64_t max = 0;
    size_t i;
    json_t *cr;
    json_array_foreach(revs, i, cr)
    {
        int64_t r = sw_json_int_or(cr, "revision", 0);
        if (r > max)
            max = r;
        json_t *t = json_deep_copy(sw_json_at(cr, "data.spec.template"));
        json_object_del(t, "$patch"); /* the directive kube's revision data carries */
        if (sw_deploy_same_template(t, sw_json_at(d, "spec.template")))
            hit = cr;
        json_decref(t);
    }
    const char *ns = sw_json_str_at(d, "metadata.namespace");
    if (error == 0 && !hit) {
        char hash[16];
        sw_deploy_template_hash(sw_json_at(d, "spec.template"), 0, hash, sizeof(hash));
        snprintf(name, n, "%.240s-%s", sw_json_str_at(d, "metadata.name"), hash);
        json_t *tmpl = json_deep_copy(sw_json_at(d, "spec.template"));
        json_object_set_new(tmpl, "$patch", json_string("replace"));
        json_t *labels = json_deep_copy(sw_json_at(d, "spec.selector.matchLabels"));
        if (!json_is_object(labels)) {
            json_decref(labels);
            labels = json_object();
        }
        json_object_set_new(labels, "controller.kubernetes.io/hash", json_string(hash));
        json_t *obj = json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:{s:o}}, s:I}",
            "apiVersion", "apps/v1", "kind", "ControllerRevision", "metadata", "name", name,
            "namespace", ns, "labels", labels, "ownerReferences", "apiVersion", "apps/v1", "kind",
            kind, "name", sw_json_str_at(d, "metadata.name"), "uid",
            sw_json_str_at(d, "metadata.uid") ?: "", "controller", 1, "blockOwnerDeletion", 1,
            "data", "spec", "template", tmpl, "revision", (json_int_t)(max + 1));
        error = sw_client_create(dc->client, &sw_res_controllerrevisions, ns, obj, NULL);
        json_decref(obj);
    } else if (error == 0) {
        sw_strlcpy(name, sw_json_str_at(hit, "metadata.name") ?: "", n);
        if (sw_json_int_or(hit, "revision", 0) <
            max) { /* rolled back: the old revision is newest */
            json_t *copy = json_deep_copy(hit);
            json_object_set_new(copy, "revision", json_integer(max + 1));
            error = sw_client_update(dc->client, &sw_res_controllerrevisions, ns, copy, NULL);
            json_decref(copy);
        }
    }
    /* history beyond revisionHistoryLimit goes, oldest first (never the current one) */
    int64_t keep = sw_json_int_or(d, "spec.revisionHistoryLimit", 10);
    size_t count = json_array_size(revs), old = 0;
    const json_t **v = sw_calloc(count + 1, sizeof(*v));
    json_array_foreach(revs, i, cr)
    {
        if (cr != hit)
            v[old++] = cr;
    }
    for (size_t a = 0; a < old; a++) /* insertion sort by revision: histories are short */
        for (size_t b = a;
             b > 0 && sw_json_int_or(v[b - 1], "revision", 0) > sw_json_int_or(v[b], "revision", 0);
             b--) {
            const json_t *t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    for (size_t a = 0; error == 0 && (int64_t)(old - a) > keep; a++)
        sw_client_delete(dc->client, &sw_res_controllerrevisions, ns,
                         sw_json_str_at(v[a], "metadata.name"));
    sw_free(v);
    json_decref(revs);
    return error;
}

/* A StatefulSet or DaemonSet: its revision, then the status a cluster would report with every
 * pod ready (a DaemonSet as on a cluster of one node). */
static int sync_revisioned(sw_deploy_controller *dc, const sw_resource *res, const char *kind,
                           const char *ns, const char *name)
{
    json_t *d = NULL, *st = NULL;
    char rev[320];
    int error = sw_client_get(dc->client, res, ns, name, &d);
    if (error < 0 || sw_json_at(d, "metadata.deletionTimestamp"))
        goto done;
    if ((error = current_revision(dc, d, kind, rev, sizeof(rev))) < 0)
        goto done;
    json_int_t gen = (json_int_t)sw_json_int_or(d, "metadata.generation", 1);
    if (res == &sw_res_statefulsets) {
        json_int_t r = (json_int_t)sw_json_int_or(d, "spec.replicas", 1);
        st = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I}", "observedGeneration", gen,
                       "replicas", r, "readyReplicas", r, "currentReplicas", r, "updatedReplicas",
                       r, "availableReplicas", r, "currentRevision", rev, "updateRevision", rev,
                       "collisionCount", (json_int_t)0);
    } else {
        st = json_pack("{s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "observedGeneration", gen,
                       "currentNumberScheduled", 1, "numberMisscheduled", 0,
                       "desiredNumberScheduled", 1, "numberReady", 1, "updatedNumberScheduled", 1,
                       "numberAvailable", 1, "numberUnavailable", 0);
    }
    if (!json_equal(json_object_get(d, "status"), st)) {
        json_t *copy = json_deep_copy(d);
        json_object_set(copy, "status", st);
        error = sw_client_update_status(dc->client, res, ns, copy, NULL);
        json_decref(copy);
    }
done:
    json_decref(st);
    json_decref(d);
    return error == SW_ENOTFOUND ? 0 : error;
}

/* Keys: "<ns>/<name>" (a Deployment), "s|<ns>/<name>" (a StatefulSet), "d|..." (DaemonSet). */
static int reconcile(void *arg, const char *key)
{
    char ns[256];
    const sw_resource *res = NULL;
    const char *kind = NULL;
    if (!strncmp(key, "s|", 2)) {
        res = &sw_res_statefulsets;
        kind = "StatefulSet";
        key += 2;
    } else if (!strncmp(key, "d|", 2)) {
        res = &sw_res_daemonsets;
        kind = "DaemonSet";
        key += 2;
    }
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return 0;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    return res ? sync_revisioned(arg, res, kind, ns, slash + 1) : sync(arg, ns, slash + 1);
}

static void deploy_event(json_t *obj, void *p)
{
    sw_deploy_controller *dc = p;
    char *key = sw_informer_key(obj);
    if (key)
        sw_controller_enqueue(dc->loop, key);
    sw_free(key);
}

static void deploy_changed(json_t *old, json_t *obj, void *p)
{
    deploy_event(obj, p);
}

/* A ReplicaSet's change wakes its Deployment (a pruned or edited one is put right). */
static void rs_event(json_t *obj, void *p)
{
    sw_deploy_controller *dc = p;
    size_t i;
    json_t *ref;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, ref)
    {
        if (sw_json_bool_at(ref, "controller") &&
            sw_str_eq(sw_json_str_at(ref, "kind"), "Deployment")) {
            char key[600];
            snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
                     sw_json_str_at(ref, "name") ?: "");
            sw_controller_enqueue(dc->loop, key);
        }
    }
}

static void rs_changed(json_t *old, json_t *obj, void *p)
{
    rs_event(obj, p);
}

static void enqueue_prefixed(sw_deploy_controller *dc, const char *prefix, const json_t *obj)
{
    char *key = sw_informer_key(obj);
    char full[620];
    if (key) {
        snprintf(full, sizeof(full), "%s%s", prefix, key);
        sw_controller_enqueue(dc->loop, full);
    }
    sw_free(key);
}

static void sts_event(json_t *obj, void *p)
{
    enqueue_prefixed(p, "s|", obj);
}

static void sts_changed(json_t *old, json_t *obj, void *p)
{
    enqueue_prefixed(p, "s|", obj);
}

static void ds_event(json_t *obj, void *p)
{
    enqueue_prefixed(p, "d|", obj);
}

static void ds_changed(json_t *old, json_t *obj, void *p)
{
    enqueue_prefixed(p, "d|", obj);
}

int sw_deploy_controller_new(sw_deploy_controller **out, sw_client *c, sw_informers *f)
{
    (void)f;
    sw_deploy_controller *dc = sw_calloc(1, sizeof(*dc));
    dc->client = c;
    sw_controller_opts co = {.name = "deployment controller",
                             .workers = 2,
                             .reconcile = reconcile,
                             .ctx = dc,
                             .queue = {.base_delay_ms = 200, .max_delay_ms = 30000}};
    int error = sw_controller_new(&dc->loop, &co);
    sw_informer_opts io = {.lean = true, .resync_ms = 600000};
    sw_informer_handlers hd = {.on_add = deploy_event, .on_update = deploy_changed, .payload = dc};
    sw_informer_handlers hr = {
        .on_add = rs_event, .on_update = rs_changed, .on_delete = rs_event, .payload = dc};
    if (error == 0)
        error = sw_informer_new(&dc->deployments, c, &sw_res_deployments, &io, &hd);
    if (error == 0)
        error = sw_informer_new(&dc->sets, c, &sw_res_replicasets, &io, &hr);
    sw_informer_handlers hs = {.on_add = sts_event, .on_update = sts_changed, .payload = dc};
    sw_informer_handlers hds = {.on_add = ds_event, .on_update = ds_changed, .payload = dc};
    if (error == 0)
        error = sw_informer_new(&dc->statefulsets, c, &sw_res_statefulsets, &io, &hs);
    if (error == 0)
        error = sw_informer_new(&dc->daemonsets, c, &sw_res_daemonsets, &io, &hds);
    if (error == 0)
        error = sw_controller_start(dc->loop);
    if (error == 0)
        error = sw_informer_start(dc->deployments);
    if (error == 0)
        error = sw_informer_start(dc->sets);
    if (error == 0)
        error = sw_informer_start(dc->statefulsets);
    if (error == 0)
        error = sw_informer_start(dc->daemonsets);
    if (error == 0)
        error = sw_dc_controller_new(&dc->configs, c);
    if (error < 0) {
        sw_deploy_controller_free(dc);
        return error;
    }
    *out = dc;
    return 0;
}

void sw_deploy_controller_free(sw_deploy_controller *dc)
{
    if (!dc)
        return;
    sw_informer_stop(dc->deployments);
    sw_informer_stop(dc->sets);
    sw_informer_stop(dc->statefulsets);
    sw_informer_stop(dc->daemonsets);
    sw_dc_controller_free(dc->configs);
    sw_controller_free(dc->loop);
    sw_informer_free(dc->deployments);
    sw_informer_free(dc->sets);
    sw_informer_free(dc->statefulsets);
    sw_informer_free(dc->daemonsets);
    sw_free(dc);
}
