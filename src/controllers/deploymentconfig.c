/* deploymentconfig: the DeploymentConfig controller (see deploymentconfig.h). A reconcile of
 * ns/name reads the config and its ReplicationControllers from the API and, each step writing
 * only what differs: resolves its automatic image triggers (one update), makes the latest
 * version's ReplicationController and completes its deployment, scales the older ones to 0,
 * prunes them, then writes the status — with the next version and its causes when a trigger
 * calls for one (the controller makes that version's ReplicationController on the next pass,
 * as OpenShift's does). */
#include "controllers/deploymentconfig.h"

#include "client/controller.h"
#include "client/informer.h"
#include "kinds/deploymentconfig.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sw_dc_controller {
    sw_client *client;
    sw_controller *loop;
    sw_informer *configs, *streams, *rcs;
};

static const char *ann(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(sw_json_at(obj, "metadata.annotations"), key));
}

static int64_t version_of(const json_t *rc)
{
    int64_t v = 0;
    const char *s = ann(rc, SW_DC_VERSION_ANN);
    if (s)
        sw_str_to_i64(s, &v);
    return v;
}

static int client_stream(void *ctx, const char *ns, const char *name, json_t **out)
{
    return sw_client_get(ctx, &sw_res_imagestreams, ns, name, out);
}

/* ---- the ReplicationControllers ---- */

static json_t *labels_with(const json_t *base, const char *dc, const char *rc)
{
    json_t *l = json_is_object(base) ? json_deep_copy(base) : json_object();
    json_object_set_new(l, SW_DC_LABEL, json_string(dc));
    json_object_set_new(l, SW_DC_DEPLOYMENT_LABEL, json_string(rc));
    return l;
}

/* Version v's ReplicationController as OpenShift's MakeDeployment makes it: 0 replicas, phase
 * New, the config encoded in it. */
static int create_rc(sw_dc_controller *d, const json_t *dc, int64_t v, json_t **out)
{
    const char *name = sw_json_str_at(dc, "metadata.name"),
               *ns = sw_json_str_at(dc, "metadata.namespace");
    char rcname[256], vs[24], replicas[24];
    sw_dc_rc_name(name, v, rcname, sizeof(rcname));
    snprintf(vs, sizeof(vs), "%lld", (long long)v);
    snprintf(replicas, sizeof(replicas), "%lld", (long long)sw_json_int_or(dc, "spec.replicas", 0));
    char *encoded = json_dumps(dc, JSON_COMPACT);
    json_t *labels = json_is_object(sw_json_at(dc, "metadata.labels"))
                         ? json_deep_copy(sw_json_at(dc, "metadata.labels"))
                         : json_object();
    json_object_set_new(labels, SW_DC_NAME_ANN, json_string(name));
    json_t *tmpl = json_deep_copy(sw_json_at(dc, "spec.template"));
    json_t *tmeta = sw_json_obj_path(tmpl, "metadata");
    json_object_set_new(tmeta, "labels",
                        labels_with(json_object_get(tmeta, "labels"), name, rcname));
    json_t *tann = sw_json_obj_path(tmeta, "annotations");
    json_object_set_new(tann, SW_DC_NAME_ANN, json_string(name));
    json_object_set_new(tann, "openshift.io/deployment.name", json_string(rcname));
    json_object_set_new(tann, SW_DC_VERSION_ANN, json_string(vs));
    json_t *rc =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, "
                  "s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:i, s:o, s:o}}",
                  "apiVersion", "v1", "kind", "ReplicationController", "metadata", "name", rcname,
                  "namespace", ns, "labels", labels, "annotations", SW_DC_NAME_ANN, name,
                  SW_DC_ENCODED_ANN, encoded ? encoded : "{}", SW_DC_PHASE_ANN, "New",
                  SW_DC_VERSION_ANN, vs, SW_DC_DESIRED_ANN, replicas, SW_DC_REPLICAS_ANN, "0",
                  SW_DC_REASON_ANN, sw_json_str_at(dc, "status.details.message") ?: "",
                  "ownerReferences", "apiVersion", "apps.openshift.io/v1", "kind",
                  "DeploymentConfig", "name", name, "uid", sw_json_str_at(dc, "metadata.uid") ?: "",
                  "controller", 1, "blockOwnerDeletion", 1, "spec", "replicas", 0, "selector",
                  labels_with(sw_json_at(dc, "spec.selector"), name, rcname), "template", tmpl);
    free(encoded);
    int error = rc ? sw_client_create(d->client, &sw_res_replicationcontrollers, ns, rc, out)
                   : sw_error_set(SW_ERROR, "cannot build ReplicationController %s", rcname);
    json_decref(rc);
    if (error == 0)
        sw_log(SW_LOG_INFO, "deploymentconfig %s/%s: version %lld (%s): %s", ns, name, (long long)v,
               sw_json_str_at(dc, "status.details.message") ?: "", rcname);
    return error;
}

/* Gives rc replicas (and phase, when not NULL) and the status of that many ready pods. */
static int settle_rc(sw_dc_controller *d, json_t *rc, int64_t replicas, const char *phase)
{
    const char *ns = sw_json_str_at(rc, "metadata.namespace");
    char count[24];
    snprintf(count, sizeof(count), "%lld", (long long)replicas);
    json_t *cur = json_incref(rc);
    int error = 0;
    if (sw_json_int_or(rc, "spec.replicas", 1) != replicas ||
        !sw_str_eq(ann(rc, SW_DC_REPLICAS_ANN), count) ||
        (phase && !sw_str_eq(ann(rc, SW_DC_PHASE_ANN), phase))) {
        json_t *copy = json_deep_copy(rc), *saved = NULL;
        json_object_set_new(json_object_get(copy, "spec"), "replicas", json_integer(replicas));
        json_t *a = sw_json_obj_path(copy, "metadata.annotations");
        json_object_set_new(a, SW_DC_REPLICAS_ANN, json_string(count));
        if (phase)
            json_object_set_new(a, SW_DC_PHASE_ANN, json_string(phase));
        error = sw_client_update(d->client, &sw_res_replicationcontrollers, ns, copy, &saved);
        json_decref(copy);
        json_decref(cur);
        if (error < 0)
            return error;
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
        error = sw_client_update_status(d->client, &sw_res_replicationcontrollers, ns, copy, NULL);
        json_decref(copy);
    }
    json_decref(want);
    json_decref(cur);
    return error;
}

static int by_version(const void *a, const void *b)
{
    int64_t x = version_of(*(const json_t *const *)a), y = version_of(*(const json_t *const *)b);
    return x < y ? -1 : x > y;
}

/* Old ReplicationControllers scaled to 0 and done with past revisionHistoryLimit go, oldest
 * first. */
static void prune(sw_dc_controller *d, const json_t *dc, const json_t *rcs, int64_t latest)
{
    int64_t keep = sw_json_int_or(dc, "spec.revisionHistoryLimit", 10);
    size_t n = json_array_size(rcs), old = 0;
    const json_t **v = sw_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const json_t *rc = json_array_get(rcs, i);
        const char *phase = ann(rc, SW_DC_PHASE_ANN);
        if (version_of(rc) < latest && sw_json_int_or(rc, "spec.replicas", 1) == 0 &&
            (sw_str_eq(phase, "Complete") || sw_str_eq(phase, "Failed")))
            v[old++] = rc;
    }
    qsort(v, old, sizeof(*v), by_version);
    for (size_t i = 0; (int64_t)(old - i) > keep; i++) {
        const char *name = sw_json_str_at(v[i], "metadata.name");
        int error = sw_client_delete(d->client, &sw_res_replicationcontrollers,
                                     sw_json_str_at(v[i], "metadata.namespace"), name);
        if (error < 0 && error != SW_ENOTFOUND)
            sw_log(SW_LOG_INFO, "deploymentconfig: cannot prune ReplicationController %s: %s", name,
                   sw_error_msg());
    }
    sw_free(v);
}

/* ---- the status ---- */

/* The condition of type, keeping the old times when nothing else changed. */
static json_t *condition(const json_t *dc, const char *type, const char *status, const char *reason,
                         const char *msg)
{
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    const char *since = now, *probe = now;
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(dc, "status.conditions"), i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), type) &&
            sw_str_eq(sw_json_str_at(c, "status"), status) &&
            sw_str_eq(sw_json_str_at(c, "reason"), reason) &&
            sw_str_eq(sw_json_str_at(c, "message"), msg)) {
            since = sw_json_str_at(c, "lastTransitionTime") ?: now;
            probe = sw_json_str_at(c, "lastUpdateTime") ?: now;
        }
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
                     "lastUpdateTime", probe, "lastTransitionTime", since, "reason", reason,
                     "message", msg);
}

static json_t *status_of(const json_t *dc, const json_t *latest, json_t *causes)
{
    int64_t replicas = latest ? sw_json_int_or(dc, "spec.replicas", 0) : 0;
    json_t *st = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:i}", "latestVersion",
        (json_int_t)sw_json_int_or(dc, "status.latestVersion", 0), "observedGeneration",
        (json_int_t)sw_json_int_or(dc, "metadata.generation", 1), "replicas", (json_int_t)replicas,
        "updatedReplicas", (json_int_t)replicas, "availableReplicas", (json_int_t)replicas,
        "readyReplicas", (json_int_t)replicas, "unavailableReplicas", 0);
    json_t *details = sw_json_at(dc, "status.details");
    if (details)
        json_object_set(st, "details", details);
    json_t *conds = json_array();
    if (latest) {
        char msg[400];
        snprintf(msg, sizeof(msg), "replication controller \"%s\" successfully rolled out",
                 sw_json_str_at(latest, "metadata.name") ?: "");
        json_array_append_new(conds, condition(dc, "Available", "True", "MinimumReplicasAvailable",
                                               "Deployment config has minimum availability."));
        json_array_append_new(
            conds, condition(dc, "Progressing", "True", "NewReplicationControllerAvailable", msg));
    } else {
        json_array_append_new(conds,
                              condition(dc, "Available", "False", "MinimumReplicasUnavailable",
                                        "Deployment config does not have minimum availability."));
    }
    json_object_set_new(st, "conditions", conds);
    if (json_array_size(causes)) { /* the next version: its RC comes on the next pass */
        json_t *tmp = json_pack("{s:O}", "status", st);
        sw_dc_bump(tmp, json_incref(causes));
        json_decref(st);
        st = json_incref(json_object_get(tmp, "status"));
        json_decref(tmp);
    }
    return st;
}

/* Whether a container of the template has no image (one its trigger has not set yet). */
static bool blank_image(const json_t *dc)
{
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(dc, "spec.template.spec.containers"), i, c)
    {
        if (!*(sw_json_str_at(c, "image") ?: ""))
            return true;
    }
    return false;
}

/* ---- the reconcile ---- */

static int sync(sw_dc_controller *d, const char *ns, const char *name)
{
    json_t *dc = NULL, *rcs = NULL, *latest = NULL, *causes = NULL, *st = NULL;
    int error = sw_client_get(d->client, &sw_res_deploymentconfigs, ns, name, &dc);
    if (error < 0 || sw_json_at(dc, "metadata.deletionTimestamp"))
        goto done;
    bool paused = sw_json_bool_at(dc, "spec.paused");
    /* 1. the trigger reactor */
    if (!paused) {
        json_t *copy = json_deep_copy(dc), *saved = NULL;
        bool changed = false, unresolved = false;
        error = sw_dc_resolve(copy, false, client_stream, d->client, &changed, &unresolved);
        if (error == SW_EINVALID) { /* validation keeps named containers: only a race */
            sw_log(SW_LOG_INFO, "deploymentconfig %s/%s: %s", ns, name, sw_error_msg());
            error = 0;
        }
        if (error == 0 && changed &&
            (error = sw_client_update(d->client, &sw_res_deploymentconfigs, ns, copy, &saved)) ==
                0) {
            json_decref(dc);
            dc = saved;
        }
        json_decref(copy);
        if (error < 0)
            goto done;
    }
    /* 2. the latest version's ReplicationController, deployed */
    if ((error = sw_client_list_controlled(d->client, &sw_res_replicationcontrollers, ns, NULL,
                                           sw_json_str_at(dc, "metadata.uid"), &rcs)) < 0)
        goto done;
    int64_t v = sw_json_int_or(dc, "status.latestVersion", 0);
    size_t i;
    json_t *rc;
    json_array_foreach(rcs, i, rc)
    {
        if (version_of(rc) == v && v > 0)
            latest = json_incref(rc);
    }
    if (v > 0 && !latest && (error = create_rc(d, dc, v, &latest)) < 0)
        goto done;
    if (latest) {
        int64_t want = sw_json_int_or(dc, "spec.replicas", 0);
        json_array_foreach(rcs, i, rc)
        {
            if (version_of(rc) != v && (error = settle_rc(d, rc, 0, NULL)) < 0)
                goto done;
        }
        if ((error = settle_rc(d, latest, want, "Complete")) < 0)
            goto done;
        prune(d, dc, rcs, v);
    }
    /* 3. the next version, then the status */
    if (!paused && !blank_image(dc))
        causes = sw_dc_causes(dc, latest, false);
    st = status_of(dc, latest, causes);
    if (!json_equal(json_object_get(dc, "status"), st)) {
        json_t *copy = json_deep_copy(dc);
        json_object_set(copy, "status", st);
        error = sw_client_update_status(d->client, &sw_res_deploymentconfigs, ns, copy, NULL);
        json_decref(copy);
    }
done:
    json_decref(st);
    json_decref(causes);
    json_decref(latest);
    json_decref(rcs);
    json_decref(dc);
    return error == SW_ENOTFOUND ? 0 : error;
}

static int reconcile(void *arg, const char *key)
{
    char ns[256];
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return 0;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    return sync(arg, ns, slash + 1);
}

/* ---- wake-ups ---- */

static void config_event(json_t *obj, void *p)
{
    sw_dc_controller *d = p;
    char *key = sw_informer_key(obj);
    if (key)
        sw_controller_enqueue(d->loop, key);
    sw_free(key);
}

static void config_changed(json_t *old, json_t *obj, void *p)
{
    config_event(obj, p);
}

/* Index "stream": the <ns>/<stream> of each ImageChange trigger. */
static json_t *stream_index(const json_t *obj)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(obj, "spec.triggers"), i, t)
    {
        const char *name = sw_json_str_at(t, "imageChangeParams.from.name");
        const char *colon = name ? strchr(name, ':') : NULL;
        if (!sw_str_eq(sw_json_str_at(t, "type"), "ImageChange") || !colon)
            continue;
        const char *ns = sw_json_str_at(t, "imageChangeParams.from.namespace");
        char key[520];
        snprintf(key, sizeof(key), "%s/%.*s",
                 ns && *ns ? ns : sw_json_str_at(obj, "metadata.namespace") ?: "",
                 (int)(colon - name), name);
        json_array_append_new(out, json_string(key));
    }
    return out;
}

static void stream_event(json_t *obj, void *p)
{
    sw_dc_controller *d = p;
    char key[520];
    snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
             sw_json_str_at(obj, "metadata.name") ?: "");
    json_t *users = sw_informer_by_index(d->configs, "stream", key);
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u) config_event(u, d);
    json_decref(users);
}

static void stream_changed(json_t *old, json_t *obj, void *p)
{
    stream_event(obj, p);
}

/* A ReplicationController's change wakes its config (a deleted or edited one is put right). */
static void rc_event(json_t *obj, void *p)
{
    sw_dc_controller *d = p;
    size_t i;
    json_t *ref;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, ref)
    {
        if (sw_json_bool_at(ref, "controller") &&
            sw_str_eq(sw_json_str_at(ref, "kind"), "DeploymentConfig")) {
            char key[600];
            snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
                     sw_json_str_at(ref, "name") ?: "");
            sw_controller_enqueue(d->loop, key);
        }
    }
}

static void rc_changed(json_t *old, json_t *obj, void *p)
{
    rc_event(obj, p);
}

int sw_dc_controller_new(sw_dc_controller **out, sw_client *c)
{
    sw_dc_controller *d = sw_calloc(1, sizeof(*d));
    d->client = c;
    sw_controller_opts co = {.name = "deploymentconfig controller",
                             .workers = 2,
                             .reconcile = reconcile,
                             .ctx = d,
                             .queue = {.base_delay_ms = 200, .max_delay_ms = 30000}};
    int error = sw_controller_new(&d->loop, &co);
    sw_informer_opts cached = {.resync_ms = 600000};
    sw_informer_opts lean = {.lean = true};
    sw_informer_handlers hc = {.on_add = config_event, .on_update = config_changed, .payload = d};
    sw_informer_handlers hs = {.on_add = stream_event, .on_update = stream_changed, .payload = d};
    sw_informer_handlers hr = {
        .on_add = rc_event, .on_update = rc_changed, .on_delete = rc_event, .payload = d};
    if (error == 0)
        error = sw_informer_new(&d->configs, c, &sw_res_deploymentconfigs, &cached, &hc);
    if (error == 0)
        error = sw_informer_add_index(d->configs, "stream", stream_index);
    if (error == 0)
        error = sw_informer_new(&d->streams, c, &sw_res_imagestreams, &lean, &hs);
    if (error == 0)
        error = sw_informer_new(&d->rcs, c, &sw_res_replicationcontrollers, &lean, &hr);
    if (error == 0)
        error = sw_controller_start(d->loop);
    if (error == 0)
        error = sw_informer_start(d->configs);
    if (error == 0)
        error = sw_informer_start(d->streams);
    if (error == 0)
        error = sw_informer_start(d->rcs);
    if (error < 0) {
        sw_dc_controller_free(d);
        return error;
    }
    *out = d;
    return 0;
}

void sw_dc_controller_free(sw_dc_controller *d)
{
    if (!d)
        return;
    sw_informer_stop(d->configs);
    sw_informer_stop(d->streams);
    sw_informer_stop(d->rcs);
    sw_controller_free(d->loop);
    sw_informer_free(d->configs);
    sw_informer_free(d->streams);
    sw_informer_free(d->rcs);
    sw_free(d);
}
