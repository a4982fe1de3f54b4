/* apps: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet and ControllerRevision, stored
 * and served as kube-apiserver does (defaults, validation, generation on spec changes, status
 * subresources, table columns, strategic-merge keys of their pod templates). They run nothing
 * here: docs/workloads.md says what their status means. */
#include "kinds/workloads.h"

#include "kinds/imagepolicy.h"
#include "kinds/podspec.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define WORKLOAD_STATUS                                                                            \
    "\"observedGeneration\":\"integer\",\"replicas\":\"integer\",\"updatedReplicas\":"             \
    "\"integer\",\"readyReplicas\":\"integer\",\"availableReplicas\":\"integer\","                 \
    "\"unavailableReplicas\":\"integer\",\"terminatingReplicas\":\"integer\","                     \
    "\"conditions\":[\"any\"],\"collisionCount\":\"integer\""

static json_t *spec_of(json_t *obj)
{
    return sw_json_obj_path(obj, "spec");
}

static int check_nonneg(const json_t *obj, const char *path)
{
    int64_t v;
    if (sw_json_int_at(obj, path, &v) && v < 0)
        return sw_error_set(SW_EINVALID,
                            "%s: Invalid value: %lld: must be greater than or equal to 0", path,
                            (long long)v);
    return 0;
}

/* The apps rules every controller-of-pods kind shares: selector, template, replicas. */
static int validate_apps(const json_t *obj)
{
    int error = sw_podspec_check_selector(obj);
    if (error == 0)
        error = sw_podtemplate_validate(sw_json_at(obj, "spec.template"), "spec.template", NULL);
    if (error == 0)
        error = check_nonneg(obj, "spec.replicas");
    if (error == 0)
        error = check_nonneg(obj, "spec.revisionHistoryLimit");
    if (error == 0)
        error = check_nonneg(obj, "spec.minReadySeconds");
    return error;
}

/* The template's pod spec must restart Always (a Deployment's pods are never "done"). */
static int validate_always(const json_t *obj)
{
    static const char *const always[] = {"Always", NULL};
    return sw_kind_check_enum(obj, NULL, "spec.template.spec.restartPolicy", always, false);
}

static int apps_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int error = validate_apps(obj);
    if (error == 0)
        error = validate_always(obj);
    /* apps/v1: the selector is immutable */
    if (error == 0 && old &&
        !sw_json_same(sw_json_at(obj, "spec.selector"), sw_json_at(old, "spec.selector")))
        error = sw_error_set(SW_EINVALID, "spec.selector: Invalid value: field is immutable");
    return error;
}

/* ---- cells ---- */

static void ready_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld/%lld", (long long)sw_json_int_or(obj, "status.readyReplicas", 0),
                  (long long)sw_json_int_or(obj, "spec.replicas", 1));
}

static void updated_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.updatedReplicas", 0));
}

static void available_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.availableReplicas", 0));
}

void sw_workload_desired_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "spec.replicas", 1));
}

void sw_workload_current_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.replicas", 0));
}

void sw_workload_ready_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.readyReplicas", 0));
}

void sw_workload_containers_cell(const json_t *obj, sw_buf *out)
{
    const char *path = sw_podspec_path(sw_json_str_at(obj, "kind"));
    char p[96];
    snprintf(p, sizeof(p), "%s.containers", path ? path : "spec.template.spec");
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(obj, p), i, c)
        sw_buf_printf(out, "%s%s", i ? "," : "", sw_json_str_at(c, "name") ?: "");
}

void sw_workload_images_cell(const json_t *obj, sw_buf *out)
{
    const char *path = sw_podspec_path(sw_json_str_at(obj, "kind"));
    char p[96];
    snprintf(p, sizeof(p), "%s.containers", path ? path : "spec.template.spec");
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(obj, p), i, c)
        sw_buf_printf(out, "%s%s", i ? "," : "", sw_json_str_at(c, "image") ?: "");
}

/* ---- Deployment ---- */

static int deploy_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = spec_of(obj);
    sw_json_default(spec, "replicas", json_integer(1));
    sw_json_default(spec, "revisionHistoryLimit", json_integer(10));
    sw_json_default(spec, "progressDeadlineSeconds", json_integer(600));
    sw_json_default(spec, "strategy", json_object());
    json_t *st = json_object_get(spec, "strategy");
    sw_json_default(st, "type", json_string("RollingUpdate"));
    if (sw_str_eq(sw_json_str_at(st, "type"), "RollingUpdate")) {
        sw_json_default(st, "rollingUpdate", json_object());
        sw_json_default(json_object_get(st, "rollingUpdate"), "maxUnavailable", json_string("25%"));
        sw_json_default(json_object_get(st, "rollingUpdate"), "maxSurge", json_string("25%"));
    }
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int deploy_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return deploy_prepare(ctx, obj);
}

static int deploy_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const types[] = {"RollingUpdate", "Recreate", NULL};
    int error = apps_validate(ctx, obj, old);
    if (error == 0)
        error = sw_kind_check_enum(obj, NULL, "spec.strategy.type", types, false);
    if (error == 0)
        error = check_nonneg(obj, "spec.progressDeadlineSeconds");
    return error;
}

static const sw_column deploy_columns[] = {
    {"Ready", "string", "Ready pods out of the desired replicas", 0, ready_cell, NULL, NULL},
    {"Up-to-date", "integer", "Pods of the newest template", 0, updated_cell, NULL, NULL},
    {"Available", "integer", "Pods available", 0, available_cell, NULL, NULL},
    {"Containers", "string", "The template's containers", 1, sw_workload_containers_cell, NULL,
     NULL},
    {"Images", "string", "The template's images", 1, sw_workload_images_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(deploy_admit, "Deployment")

const sw_kind sw_kind_deployment = {
    .group = "apps",
    .version = "v1",
    .kind = "Deployment",
    .plural = "deployments",
    .singular = "deployment",
    .short_names = {"deploy"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":{\"replicas\":\"integer\",\"selector\":" SW_SELECTOR_SCHEMA ","
                   "\"template\":" SW_POD_TEMPLATE_SCHEMA ",\"strategy\":{\"type\":\"string\","
                   "\"rollingUpdate\":{\"maxUnavailable\":\"any\",\"maxSurge\":\"any\"}},"
                   "\"minReadySeconds\":\"integer\",\"revisionHistoryLimit\":\"integer\","
                   "\"paused\":\"boolean\",\"progressDeadlineSeconds\":\"integer\"},"
                   "\"status\":{" WORKLOAD_STATUS "}}",
    .smp = sw_smp_schema_core,
    .columns = deploy_columns,
    .ncolumns = 5,
    .prepare_create = deploy_prepare,
    .prepare_update = deploy_update,
    .validate = deploy_validate,
    .admit = deploy_admit,
};

/* ---- ReplicaSet ---- */

static int rs_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    sw_json_default(spec_of(obj), "replicas", json_integer(1));
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int rs_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return rs_prepare(ctx, obj);
}

static const sw_column rs_columns[] = {
    {"Desired", "integer", "Desired replicas", 0, sw_workload_desired_cell, NULL, NULL},
    {"Current", "integer", "Current replicas", 0, sw_workload_current_cell, NULL, NULL},
    {"Ready", "integer", "Ready replicas", 0, sw_workload_ready_cell, NULL, NULL},
    {"Containers", "string", "The template's containers", 1, sw_workload_containers_cell, NULL,
     NULL},
    {"Images", "string", "The template's images", 1, sw_workload_images_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(rs_admit, "ReplicaSet")

const sw_kind sw_kind_replicaset = {
    .group = "apps",
    .version = "v1",
    .kind = "ReplicaSet",
    .plural = "replicasets",
    .singular = "replicaset",
    .short_names = {"rs"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":{\"replicas\":\"integer\",\"selector\":" SW_SELECTOR_SCHEMA ","
                   "\"template\":" SW_POD_TEMPLATE_SCHEMA ",\"minReadySeconds\":\"integer\"},"
                   "\"status\":{" WORKLOAD_STATUS ",\"fullyLabeledReplicas\":\"integer\"}}",
    .smp = sw_smp_schema_core,
    .columns = rs_columns,
    .ncolumns = 5,
    .prepare_create = rs_prepare,
    .prepare_update = rs_update,
    .validate = apps_validate,
    .admit = rs_admit,
};

/* ---- StatefulSet ---- */

static int sts_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = spec_of(obj);
    sw_json_default(spec, "replicas", json_integer(1));
    sw_json_default(spec, "podManagementPolicy", json_string("OrderedReady"));
    sw_json_default(spec, "revisionHistoryLimit", json_integer(10));
    sw_json_default(spec, "updateStrategy", json_object());
    json_t *us = json_object_get(spec, "updateStrategy");
    sw_json_default(us, "type", json_string("RollingUpdate"));
    if (sw_str_eq(sw_json_str_at(us, "type"), "RollingUpdate")) {
        sw_json_default(us, "rollingUpdate", json_object());
        sw_json_default(json_object_get(us, "rollingUpdate"), "partition", json_integer(0));
    }
    sw_json_default(spec, "persistentVolumeClaimRetentionPolicy",
                    json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", "Retain"));
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int sts_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return sts_prepare(ctx, obj);
}

static int sts_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const policies[] = {"OrderedReady", "Parallel", NULL};
    static const char *const types[] = {"RollingUpdate", "OnDelete", NULL};
    int error = apps_validate(ctx, obj, old);
    if (error == 0)
        error = sw_kind_check_enum(obj, NULL, "spec.podManagementPolicy", policies, false);
    if (error == 0)
        error = sw_kind_check_enum(obj, NULL, "spec.updateStrategy.type", types, false);
    return error;
}

static const sw_column sts_columns[] = {
    {"Ready", "string", "Ready pods out of the desired replicas", 0, ready_cell, NULL, NULL},
    {"Containers", "string", "The template's containers", 1, sw_workload_containers_cell, NULL,
     NULL},
    {"Images", "string", "The template's images", 1, sw_workload_images_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(sts_admit, "StatefulSet")

const sw_kind sw_kind_statefulset = {
    .group = "apps",
    .version = "v1",
    .kind = "StatefulSet",
    .plural = "statefulsets",
    .singular = "statefulset",
    .short_names = {"sts"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":{\"replicas\":\"integer\",\"selector\":" SW_SELECTOR_SCHEMA ","
                   "\"template\":" SW_POD_TEMPLATE_SCHEMA ",\"volumeClaimTemplates\":[\"any\"],"
                   "\"serviceName\":\"string\",\"podManagementPolicy\":\"string\","
                   "\"updateStrategy\":{\"type\":\"string\",\"rollingUpdate\":{\"partition\":"
                   "\"integer\",\"maxUnavailable\":\"any\"}},\"revisionHistoryLimit\":"
                   "\"integer\",\"minReadySeconds\":\"integer\","
                   "\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":\"string\","
                   "\"whenScaled\":\"string\"},\"ordinals\":{\"start\":\"integer\"}},"
                   "\"status\":{" WORKLOAD_STATUS ",\"currentReplicas\":\"integer\","
                   "\"currentRevision\":\"string\",\"updateRevision\":\"string\"}}",
    .smp = sw_smp_schema_core,
    .columns = sts_columns,
    .ncolumns = 3,
    .prepare_create = sts_prepare,
    .prepare_update = sts_update,
    .validate = sts_validate,
    .admit = sts_admit,
};

/* ---- DaemonSet ---- */

static int ds_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = spec_of(obj);
    sw_json_default(spec, "revisionHistoryLimit", json_integer(10));
    sw_json_default(spec, "updateStrategy", json_object());
    json_t *us = json_object_get(spec, "updateStrategy");
    sw_json_default(us, "type", json_string("RollingUpdate"));
    if (sw_str_eq(sw_json_str_at(us, "type"), "RollingUpdate")) {
        sw_json_default(us, "rollingUpdate", json_object());
        sw_json_default(json_object_get(us, "rollingUpdate"), "maxUnavailable", json_integer(1));
        sw_json_default(json_object_get(us, "rollingUpdate"), "maxSurge", json_integer(0));
    }
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int ds_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return ds_prepare(ctx, obj);
}

static int ds_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const types[] = {"RollingUpdate", "OnDelete", NULL};
    int error = apps_validate(ctx, obj, old);
    if (error == 0)
        error = sw_kind_check_enum(obj, NULL, "spec.updateStrategy.type", types, false);
    return error;
}

static void ds_desired(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.desiredNumberScheduled", 0));
}

static void ds_current(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.currentNumberScheduled", 0));
}

static void ds_ready(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.numberReady", 0));
}

static void ds_updated(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.updatedNumberScheduled", 0));
}

static void ds_available(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "status.numberAvailable", 0));
}

static void ds_selector(const json_t *obj, sw_buf *out)
{
    const json_t *sel = sw_json_at(obj, "spec.template.spec.nodeSelector");
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)sel, k, v)
        sw_buf_printf(out, "%s%s=%s", n++ ? "," : "", k, json_string_value(v) ?: "");
    if (!n)
        sw_buf_puts(out, "<none>");
}

static const sw_column ds_columns[] = {
    {"Desired", "integer", "Nodes that should run the pod", 0, ds_desired, NULL, NULL},
    {"Current", "integer", "Nodes running it", 0, ds_current, NULL, NULL},
    {"Ready", "integer", "Nodes with it ready", 0, ds_ready, NULL, NULL},
    {"Up-to-date", "integer", "Nodes with the newest template", 0, ds_updated, NULL, NULL},
    {"Available", "integer", "Nodes with it available", 0, ds_available, NULL, NULL},
    {"Node Selector", "string", "The template's node selector", 0, ds_selector, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(ds_admit, "DaemonSet")

const sw_kind sw_kind_daemonset = {
    .group = "apps",
    .version = "v1",
    .kind = "DaemonSet",
    .plural = "daemonsets",
    .singular = "daemonset",
    .short_names = {"ds"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text =
        "{\"spec\":{\"selector\":" SW_SELECTOR_SCHEMA ",\"template\":" SW_POD_TEMPLATE_SCHEMA
        ",\"updateStrategy\":{\"type\":\"string\","
        "\"rollingUpdate\":{\"maxUnavailable\":\"any\",\"maxSurge\":\"any\"}},"
        "\"minReadySeconds\":\"integer\",\"revisionHistoryLimit\":\"integer\"},"
        "\"status\":{\"currentNumberScheduled\":\"integer\",\"numberMisscheduled\":"
        "\"integer\",\"desiredNumberScheduled\":\"integer\",\"numberReady\":"
        "\"integer\",\"observedGeneration\":\"integer\",\"updatedNumberScheduled\":"
        "\"integer\",\"numberAvailable\":\"integer\",\"numberUnavailable\":"
        "\"integer\",\"collisionCount\":\"integer\",\"conditions\":[\"any\"]}}",
    .smp = sw_smp_schema_core,
    .columns = ds_columns,
    .ncolumns = 6,
    .prepare_create = ds_prepare,
    .prepare_update = ds_update,
    .validate = ds_validate,
    .admit = ds_admit,
};

/* ---- ControllerRevision ---- */

static int cr_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int64_t rev;
    if (!sw_json_int_at(obj, "revision", &rev) || rev < 0)
        return sw_error_set(SW_EINVALID, "revision: Invalid value: must be a non-negative integer");
    if (old && !sw_json_same(json_object_get(obj, "data"), json_object_get(old, "data")))
        return sw_error_set(SW_EINVALID, "data: Invalid value: field is immutable");
    return 0;
}

static void cr_controller(const json_t *obj, sw_buf *out)
{
    size_t i;
    json_t *r;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, r)
    {
        if (sw_json_bool_at(r, "controller")) {
            const char *av = sw_json_str_at(r, "apiVersion") ?: "";
            const char *slash = strchr(av, '/');
            char kind[64];
            sw_strlcpy(kind, sw_json_str_at(r, "kind") ?: "", sizeof(kind));
            for (char *p = kind; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p - 'A' + 'a');
            sw_buf_printf(out, "%s%s%.*s/%s", kind, slash ? "." : "", slash ? (int)(slash - av) : 0,
                          av, sw_json_str_at(r, "name") ?: "");
            return;
        }
    }
    sw_buf_puts(out, "<none>");
}

static void cr_revision(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%lld", (long long)sw_json_int_or(obj, "revision", 0));
}

static const sw_column cr_columns[] = {
    {"Controller", "string", "The object this revision is of", 0, cr_controller, NULL, NULL},
    {"Revision", "integer", "The revision number", 0, cr_revision, NULL, NULL},
};

const sw_kind sw_kind_controllerrevision = {
    .group = "apps",
    .version = "v1",
    .kind = "ControllerRevision",
    .plural = "controllerrevisions",
    .singular = "controllerrevision",
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"data\":\"any\",\"revision\":\"integer\"}",
    .smp = sw_smp_schema_core,
    .columns = cr_columns,
    .ncolumns = 2,
    .validate = cr_validate,
};
