/* crdcleanup: one pass over a CRD being deleted per reconcile (see crdcleanup.h): delete what
 * is left, write the condition that says so, and drop the finalizer once nothing is. */
#include "controllers/crdcleanup.h"

#include "client/controller.h"
#include "client/informer.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

#define FINALIZER "customresourcecleanup.apiextensions.k8s.io"
#define RECHECK_MS 1000

const sw_resource sw_res_crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};

struct sw_crd_cleanup {
    sw_client *client;
    sw_controller *loop;
    sw_informer *crds;
};

static bool has_finalizer(const json_t *crd)
{
    size_t i;
    json_t *f;
    json_array_foreach(sw_json_at(crd, "metadata.finalizers"), i, f)
    {
        if (sw_str_eq(json_string_value(f), FINALIZER))
            return true;
    }
    return false;
}

/* Sets the Terminating condition on crd (a copy) and writes it through /status when it
 * changed; *crd becomes the stored object. */
static int terminating(sw_crd_cleanup *d, json_t **crd, const char *status, const char *reason,
                       const char *msg)
{
    json_t *conds = sw_json_at(*crd, "status.conditions");
    size_t i;
    json_t *c, *hit = NULL;
    json_array_foreach(conds, i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), "Terminating"))
            hit = c;
    }
    if (hit && sw_str_eq(sw_json_str_at(hit, "status"), status) &&
        sw_str_eq(sw_json_str_at(hit, "reason"), reason) &&
        sw_str_eq(sw_json_str_at(hit, "message"), msg))
        return 0;
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *copy = json_deep_copy(*crd);
    json_t *next = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Terminating", "status", status,
                             "lastTransitionTime", now, "reason", reason, "message", msg);
    json_t *list = sw_json_at(copy, "status.conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(sw_json_obj_path(copy, "status"), "conditions", list);
    }
    bool set = false;
    json_array_foreach(list, i, c)
    {
        if (!set && sw_str_eq(sw_json_str_at(c, "type"), "Terminating")) {
            json_array_set(list, i, next);
            set = true;
        }
    }
    if (!set)
        json_array_append(list, next);
    json_decref(next);
    json_t *saved = NULL;
    int error = sw_client_update_status(d->client, &sw_res_crds, NULL, copy, &saved);
    json_decref(copy);
    if (error == 0) {
        json_decref(*crd);
        *crd = saved;
    }
    return error;
}

/* Whether crd has the condition type with status. */
static bool condition_is(const json_t *crd, const char *type, const char *status)
{
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(crd, "status.conditions"), i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), type) &&
            sw_str_eq(sw_json_str_at(c, "status"), status))
            return true;
    }
    return false;
}

static bool names_refused(const json_t *crd)
{
    return condition_is(crd, "NamesAccepted", "False");
}

static bool established(const json_t *crd)
{
    return condition_is(crd, "Established", "True");
}

#define READMIT "readmit/"

/* A CRD refused for a name conflict is written again unchanged, so that the server decides
 * its names anew (the CRD it conflicted with may be gone): kube's naming controller does the
 * same for every CRD of a group when one of them goes. */
static int readmit(sw_crd_cleanup *d, const char *name)
{
    json_t *crd = NULL;
    int error = sw_client_get(d->client, &sw_res_crds, NULL, name, &crd);
    if (error == 0 && names_refused(crd) && !sw_json_at(crd, "metadata.deletionTimestamp"))
        error = sw_client_update(d->client, &sw_res_crds, NULL, crd, NULL);
    json_decref(crd);
    return error == SW_ENOTFOUND || error == SW_ECONFLICT ? 0 : error;
}

/* Queues the refused CRDs of group for readmit. */
static void readmit_group(sw_crd_cleanup *d, const char *group)
{
    json_t *list = NULL;
    if (!group || sw_client_list(d->client, &sw_res_crds, NULL, NULL, &list) < 0)
        return;
    size_t i;
    json_t *crd;
    json_array_foreach(json_object_get(list, "items"), i, crd)
    {
        char key[400];
        if (!sw_str_eq(sw_json_str_at(crd, "spec.group"), group) || !names_refused(crd))
            continue;
        snprintf(key, sizeof(key), READMIT "%s", sw_json_str_at(crd, "metadata.name") ?: "");
        sw_controller_enqueue(d->loop, key);
    }
    json_decref(list);
}

static int reconcile(void *arg, const char *name)
{
    sw_crd_cleanup *d = arg;
    if (sw_str_prefix(name, READMIT))
        return readmit(d, name + strlen(READMIT));
    json_t *crd = NULL, *list = NULL;
    int error = sw_client_get(d->client, &sw_res_crds, NULL, name, &crd);
    if (error < 0 || !sw_json_at(crd, "metadata.deletionTimestamp") || !has_finalizer(crd))
        goto done;
    /* every version reads the same stored objects: the first one served will do */
    char version[64] = "", group[256], plural[64];
    size_t i;
    json_t *v;
    json_array_foreach(sw_json_at(crd, "spec.versions"), i, v)
    {
        if (!version[0] && sw_json_bool_at(v, "served"))
            sw_strlcpy(version, sw_json_str_at(v, "name") ?: "", sizeof(version));
    }
    sw_strlcpy(group, sw_json_str_at(crd, "spec.group") ?: "", sizeof(group));
    sw_strlcpy(plural, sw_json_str_at(crd, "status.acceptedNames.plural") ?: "", sizeof(plural));
    sw_resource res = {group, version, plural,
                       !sw_str_eq(sw_json_str_at(crd, "spec.scope"), "Cluster")};
    size_t left = 0;
    /* one condition per pass, written only when it changed: each write is an event that brings
     * the CRD back here */
    if (!version[0] || !plural[0] || !group[0] || !established(crd)) {
        /* never served: it cannot have instances. Served once but no version is now: its
         * instances cannot be reached through the API, so they are kept, and so is the CRD */
        if (established(crd) && group[0] && plural[0]) {
            error = terminating(d, &crd, "True", "InstanceDeletionFailed",
                                "could not list instances: no version of the "
                                "CustomResourceDefinition is served; serve one to let its "
                                "instances be deleted");
            if (error == 0)
                error = RECHECK_MS * 10;
            goto done;
        }
    } else {
        error = sw_client_list(d->client, &res, NULL, NULL, &list);
        if (error == SW_ENOTFOUND) {
            /* served, yet not found (re-registered this moment): never a reason to release */
            error = RECHECK_MS;
            goto done;
        }
        if (error < 0)
            goto done;
        json_t *item;
        json_array_foreach(json_object_get(list, "items"), i, item)
        {
            left++;
            if (sw_json_at(item, "metadata.deletionTimestamp"))
                continue; /* held by its own finalizers */
            int e = sw_client_delete(d->client, &res, sw_json_str_at(item, "metadata.namespace"),
                                     sw_json_str_at(item, "metadata.name"));
            if (e < 0 && e != SW_ENOTFOUND)
                sw_log(SW_LOG_INFO, "crd %s: cannot delete %s: %s", name,
                       sw_json_str_at(item, "metadata.name") ?: "", sw_error_msg());
        }
    }
    if (left) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "could not confirm zero CustomResources remaining: %zu "
                 "remaining",
                 left);
        error = terminating(d, &crd, "True", "InstanceDeletionCheck", msg);
        if (error == 0)
            error = RECHECK_MS; /* look again soon */
        goto done;
    }
    if ((error = terminating(d, &crd, "False", "InstanceDeletionCompleted",
                             "removed all instances")) < 0)
        goto done;
    json_t *copy = json_deep_copy(crd), *kept = json_array();
    json_array_foreach(sw_json_at(copy, "metadata.finalizers"), i, v)
    {
        if (!sw_str_eq(json_string_value(v), FINALIZER))
            json_array_append(kept, v);
    }
    json_object_set_new(json_object_get(copy, "metadata"), "finalizers", kept);
    error = sw_client_update(d->client, &sw_res_crds, NULL, copy, NULL);
    json_decref(copy);
    if (error == 0)
        sw_log(SW_LOG_INFO, "crd %s: instances removed, finalizer released", name);
done:
    json_decref(list);
    json_decref(crd);
    return error == SW_ENOTFOUND ? 0 : error;
}

static void crd_event(json_t *obj, void *p)
{
    sw_crd_cleanup *d = p;
    const char *name = sw_json_str_at(obj, "metadata.name");
    if (name && sw_json_at(obj, "metadata.deletionTimestamp"))
        sw_controller_enqueue(d->loop, name);
}

static void crd_changed(json_t *old, json_t *obj, void *p)
{
    (void)old;
    crd_event(obj, p);
}

/* A CRD gone frees its names for the others of its group. */
static void crd_gone(json_t *obj, void *p)
{
    readmit_group(p, sw_json_str_at(obj, "spec.group"));
}

int sw_crd_cleanup_new(sw_crd_cleanup **out, sw_client *c)
{
    sw_crd_cleanup *d = sw_calloc(1, sizeof(*d));
    d->client = c;
    sw_controller_opts co = {.name = "crd cleanup",
                             .workers = 2,
                             .reconcile = reconcile,
                             .ctx = d,
                             .queue = {.base_delay_ms = 200, .max_delay_ms = 30000}};
    int error = sw_controller_new(&d->loop, &co);
    sw_informer_opts io = {.lean = true, .resync_ms = 60000};
    sw_informer_handlers h = {
        .on_add = crd_event, .on_update = crd_changed, .on_delete = crd_gone, .payload = d};
    if (error == 0)
        error = sw_informer_new(&d->crds, c, &sw_res_crds, &io, &h);
    if (error == 0)
        error = sw_controller_start(d->loop);
    if (error == 0)
        error = sw_informer_start(d->crds);
    if (error < 0) {
        sw_crd_cleanup_free(d);
        return error;
    }
    *out = d;
    return 0;
}

void sw_crd_cleanup_free(sw_crd_cleanup *d)
{
    if (!d)
        return;
    sw_informer_stop(d->crds);
    sw_controller_free(d->loop);
    sw_informer_free(d->crds);
    sw_free(d);
}
