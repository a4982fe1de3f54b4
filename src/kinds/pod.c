/* pod: v1 Pod and ReplicationController (see workloads.h). A Pod is stored, never run: it is
 * accepted (so manifests apply and image triggers on Pods resolve) and stays Pending. Its spec
 * is immutable but for what kube-apiserver lets change (container images, the active deadline,
 * tolerations). */
#include "kinds/workloads.h"

#include "kinds/imagepolicy.h"
#include "kinds/podspec.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

/* ---- Pod ---- */

static int pod_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    sw_podspec_default(json_object_get(obj, "spec"), NULL);
    json_object_set_new(obj, "status",
                        json_pack("{s:s, s:s}", "phase", "Pending", "qosClass", "BestEffort"));
    return 0;
}

static int pod_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    sw_podspec_default(json_object_get(obj, "spec"), NULL);
    return 0;
}

/* The spec without what a pod update may change. */
static json_t *fixed_part(const json_t *spec)
{
    json_t *s = json_deep_copy(spec);
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(s, lists[l]), i, c)
        {
            if (json_is_object(c))
                json_object_del(c, "image");
        }
    }
    json_object_del(s, "activeDeadlineSeconds");
    json_object_del(s, "tolerations");
    return s;
}

static int pod_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int error = sw_podspec_validate(json_object_get(obj, "spec"), "spec", NULL);
    if (error == 0 && old) {
        json_t *a = fixed_part(json_object_get(obj, "spec"));
        json_t *b = fixed_part(json_object_get(old, "spec"));
        if (!json_equal(a, b))
            error = sw_error_set(SW_EINVALID,
                                 "spec: Forbidden: pod updates may not change fields other than "
                                 "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                                 "`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                                 "additions to existing tolerations)");
        json_decref(a);
        json_decref(b);
    }
    return error;
}

static void pod_ready(const json_t *obj, sw_buf *out)
{
    size_t ready = 0, i;
    json_t *cs;
    json_array_foreach(sw_json_at(obj, "status.containerStatuses"), i, cs) ready +=
        sw_json_bool_at(cs, "ready");
    sw_buf_printf(out, "%zu/%zu", ready, json_array_size(sw_json_at(obj, "spec.containers")));
}

static void pod_status(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "status.phase", out);
}

static void pod_restarts(const json_t *obj, sw_buf *out)
{
    int64_t n = 0, r;
    size_t i;
    json_t *cs;
    json_array_foreach(sw_json_at(obj, "status.containerStatuses"), i, cs)
    {
        if (sw_json_int_at(cs, "restartCount", &r))
            n += r;
    }
    sw_buf_printf(out, "%lld", (long long)n);
}

static void pod_node(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "spec.nodeName", out);
}

static const sw_column pod_columns[] = {
    {"Ready", "string", "Ready containers out of all", 0, pod_ready, NULL, NULL},
    {"Status", "string", "The pod's phase (slipway runs no pods: Pending)", 0, pod_status, NULL,
     NULL},
    {"Restarts", "integer", "Container restarts", 0, pod_restarts, NULL, NULL},
    {"Node", "string", "The node it is bound to", 1, pod_node, NULL, NULL},
};

static const char *const pod_fields[] = {"spec.nodeName",      "spec.restartPolicy",
                                         "spec.schedulerName", "spec.serviceAccountName",
                                         "status.phase",       NULL};

SW_IMAGE_POLICY_ADMIT(pod_admit, "Pod")

const sw_kind sw_kind_pod = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .plural = "pods",
    .singular = "pod",
    .short_names = {"po"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":" SW_POD_SPEC_SCHEMA ",\"status\":\"any\"}",
    .field_selectors = pod_fields,
    .smp = sw_smp_schema_core,
    .columns = pod_columns,
    .ncolumns = 4,
    .prepare_create = pod_prepare,
    .prepare_update = pod_update,
    .validate = pod_validate,
    .admit = pod_admit,
};

/* ---- ReplicationController ---- */

static int rc_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = sw_json_obj_path(obj, "spec");
    sw_json_default(spec, "replicas", json_integer(1));
    const json_t *labels = sw_json_at(obj, "spec.template.metadata.labels");
    if (json_object_size(labels))
        sw_json_default(spec, "selector", json_deep_copy(labels));
    sw_podspec_default(sw_json_at(obj, "spec.template.spec"), NULL);
    return 0;
}

static int rc_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return rc_prepare(ctx, obj);
}

static int rc_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const always[] = {"Always", NULL};
    int error = sw_podspec_check_map_selector(obj);
    if (error < 0)
        return error;
    int64_t r;
    if (sw_json_int_at(obj, "spec.replicas", &r) && r < 0)
        return sw_error_set(SW_EINVALID,
                            "spec.replicas: Invalid value: %lld: must be greater than or equal "
                            "to 0",
                            (long long)r);
    return sw_podtemplate_validate(sw_json_at(obj, "spec.template"), "spec.template", always);
}

static const sw_column rc_columns[] = {
    {"Desired", "integer", "Desired replicas", 0, sw_workload_desired_cell, NULL, NULL},
    {"Current", "integer", "Current replicas", 0, sw_workload_current_cell, NULL, NULL},
    {"Ready", "integer", "Ready replicas", 0, sw_workload_ready_cell, NULL, NULL},
    {"Containers", "string", "The template's containers", 1, sw_workload_containers_cell, NULL,
     NULL},
    {"Images", "string", "The template's images", 1, sw_workload_images_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(rc_admit, "ReplicationController")

const sw_kind sw_kind_replicationcontroller = {
    .group = "",
    .version = "v1",
    .kind = "ReplicationController",
    .plural = "replicationcontrollers",
    .singular = "replicationcontroller",
    .short_names = {"rc"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":{\"replicas\":\"integer\",\"minReadySeconds\":\"integer\","
                   "\"selector\":\"map\",\"template\":" SW_POD_TEMPLATE_SCHEMA "},"
                   "\"status\":{\"replicas\":\"integer\",\"fullyLabeledReplicas\":\"integer\","
                   "\"readyReplicas\":\"integer\",\"availableReplicas\":\"integer\","
                   "\"observedGeneration\":\"integer\",\"conditions\":[\"any\"]}}",
    .smp = sw_smp_schema_core,
    .columns = rc_columns,
    .ncolumns = 5,
    .prepare_create = rc_prepare,
    .prepare_update = rc_update,
    .validate = rc_validate,
    .admit = rc_admit,
};
