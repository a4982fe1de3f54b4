/* protobuf: Kubernetes protobuf request bodies to JSON (see protobuf.h).
 * The wire reader is a cursor over [p, end): every length is checked against the bytes left
 * before it is used, and nested messages are only entered where a schema says so, with a depth
 * bound. Field numbers are those of k8s.io/api core/v1, coordination/v1, apps/v1, batch/v1,
 * rbac/v1, authentication/v1 and authorization/v1 generated.proto and
 * k8s.io/apimachinery meta/v1 and runtime generated.proto. */
#include "apiserver/protobuf.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/* 9999-12-31T23:59:59Z: the last second RFC 3339 can write with a four-digit year. */
#define MAX_EPOCH_SECONDS INT64_C(253402300799)

typedef struct pb_reader {
    const unsigned char *p;   /* next unread byte */
    const unsigned char *end; /* one past the last readable byte */
} pb_reader;

/* ---- wire format ---- */

static size_t pb_left(const pb_reader *r)
{
    return (size_t)(r->end - r->p);
}

/* Base-128 varint of at most 10 bytes; the 10th byte may only carry bit 63. */
static int pb_varint(pb_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    const unsigned char *p = r->p;
    for (unsigned shift = 0; shift <= 63; shift += 7) {
        if (p >= r->end)
            return sw_error_set(SW_EBADREQUEST, "protobuf: truncated varint");
        unsigned char b = *p++;
        if (shift == 63 && b > 1)
            break;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            r->p = p;
            *out = v;
            return 0;
        }
    }
    return sw_error_set(SW_EBADREQUEST, "protobuf: varint longer than 64 bits");
}

/* Moves the next n bytes of r into sub. */
static int pb_take(pb_reader *r, uint64_t n, pb_reader *sub)
{
    if (n > pb_left(r))
        return sw_error_set(SW_EBADREQUEST,
                            "protobuf: length %llu runs past the end of the body (%zu bytes left)",
                            (unsigned long long)n, pb_left(r));
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

/* A length-delimited payload: varint length, then that many bytes (into sub). */
static int pb_len(pb_reader *r, pb_reader *sub)
{
    uint64_t n = 0;
    int error = pb_varint(r, &n);
    if (error < 0)
        return error;
    return pb_take(r, n, sub);
}

/* A field key: field number and wire type. Groups (3, 4) and the unused types 6, 7 are errors. */
static int pb_key(pb_reader *r, uint32_t *num, unsigned *wt)
{
    uint64_t key = 0;
    int error = pb_varint(r, &key);
    if (error < 0)
        return error;
    *wt = (unsigned)(key & 7);
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return sw_error_set(SW_EBADREQUEST, "protobuf: invalid field number %llu",
                            (unsigned long long)(key >> 3));
    if (*wt != WT_VARINT && *wt != WT_FIXED64 && *wt != WT_LEN && *wt != WT_FIXED32)
        return sw_error_set(SW_EBADREQUEST, "protobuf: unsupported wire type %u in field %llu", *wt,
                            (unsigned long long)(key >> 3));
    *num = (uint32_t)(key >> 3);
    return 0;
}

/* Skips the value of a field nobody asked for, without looking inside it. */
static int pb_skip(pb_reader *r, unsigned wt)
{
    uint64_t v = 0;
    pb_reader sub;
    switch (wt) {
    case WT_VARINT:
        return pb_varint(r, &v);
    case WT_FIXED64:
        return pb_take(r, 8, &sub);
    case WT_FIXED32:
        return pb_take(r, 4, &sub);
    default:
        return pb_len(r, &sub);
    }
}

static int pb_want(const char *name, unsigned wt, unsigned want)
{
    if (wt == want)
        return 0;
    return sw_error_set(SW_EBADREQUEST, "protobuf: field %s has wire type %u, expected %u", name,
                        wt, want);
}

/* ---- schemas ---- */

typedef enum pb_type {
    T_STRING,       /* string */
    T_INT32,        /* int32 varint */
    T_INT64,        /* int64 varint */
    T_BOOL,         /* bool varint */
    T_MESSAGE,      /* embedded message -> object (always written, even when empty) */
    T_MESSAGES,     /* repeated message -> array of objects */
    T_STRINGS,      /* repeated string -> array */
    T_MAP_STRING,   /* map<string, string> -> object */
    T_MAP_BYTES,    /* map<string, bytes> -> object of base64 strings */
    T_TIME,         /* meta/v1 Time -> "2006-01-02T15:04:05Z" */
    T_MICROTIME,    /* meta/v1 MicroTime -> "2006-01-02T15:04:05.000000Z" */
    T_FIELDSV1,     /* meta/v1 FieldsV1 {1: raw JSON} -> that JSON */
    T_MAP_QUANTITY, /* map<string, resource.Quantity {1: string}> -> object of strings */
    T_INTORSTR,     /* intstr.IntOrString {1: type, 2: intVal, 3: strVal} -> number or string */
} pb_type;

/* The Go field is a pointer: its presence on the wire means it is set, so a zero value is kept.
 * Other zero scalars are left out, as their omitempty JSON tags would. */
enum { F_KEEP_ZERO = 1 };

struct pb_schema;

typedef struct pb_field {
    uint32_t num;     /* protobuf field number */
    const char *name; /* JSON name */
    pb_type type;
    unsigned flags;              /* F_KEEP_ZERO */
    const struct pb_schema *sub; /* T_MESSAGE / T_MESSAGES */
} pb_field;

typedef struct pb_schema {
    const pb_field *fields;
    size_t count;
    /* A field the table does not list is refused (415), not skipped: the workload kinds list
     * only the fields slipway decodes, and dropping one a client set would lose data. */
    const char *strict; /* the message's name, for the error; NULL: skip unknown fields */
} pb_schema;

#define SCHEMA(var, arr) static const pb_schema var = {arr, sizeof(arr) / sizeof((arr)[0]), NULL}
#define STRICT(var, arr, name)                                                                     \
    static const pb_schema var = {arr, sizeof(arr) / sizeof((arr)[0]), name}

/* k8s.io/apimachinery/pkg/apis/meta/v1 */
static const pb_field owner_reference_f[] = {
    {5, "apiVersion", T_STRING, 0, NULL},
    {1, "kind", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},
    {4, "uid", T_STRING, 0, NULL},
    {6, "controller", T_BOOL, F_KEEP_ZERO, NULL},
    {7, "blockOwnerDeletion", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(owner_reference, owner_reference_f);

static const pb_field managed_fields_entry_f[] = {
    {1, "manager", T_STRING, 0, NULL},     {2, "operation", T_STRING, 0, NULL},
    {3, "apiVersion", T_STRING, 0, NULL},  {4, "time", T_TIME, 0, NULL},
    {6, "fieldsType", T_STRING, 0, NULL},  {7, "fieldsV1", T_FIELDSV1, 0, NULL},
    {8, "subresource", T_STRING, 0, NULL},
};
SCHEMA(managed_fields_entry, managed_fields_entry_f);

static const pb_field object_meta_f[] = {
    {1, "name", T_STRING, 0, NULL},
    {2, "generateName", T_STRING, 0, NULL},
    {3, "namespace", T_STRING, 0, NULL},
    {4, "selfLink", T_STRING, 0, NULL},
    {5, "uid", T_STRING, 0, NULL},
    {6, "resourceVersion", T_STRING, 0, NULL},
    {7, "generation", T_INT64, 0, NULL},
    {8, "creationTimestamp", T_TIME, 0, NULL},
    {9, "deletionTimestamp", T_TIME, 0, NULL},
    {10, "deletionGracePeriodSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {11, "labels", T_MAP_STRING, 0, NULL},
    {12, "annotations", T_MAP_STRING, 0, NULL},
    {13, "ownerReferences", T_MESSAGES, 0, &owner_reference},
    {14, "finalizers", T_STRINGS, 0, NULL},
    {17, "managedFields", T_MESSAGES, 0, &managed_fields_entry},
};
SCHEMA(object_meta, object_meta_f);

static const pb_field preconditions_f[] = {
    {1, "uid", T_STRING, F_KEEP_ZERO, NULL},
    {2, "resourceVersion", T_STRING, F_KEEP_ZERO, NULL},
};
SCHEMA(preconditions, preconditions_f);

static const pb_field delete_options_f[] = {
    {1, "gracePeriodSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {2, "preconditions", T_MESSAGE, 0, &preconditions},
    {3, "orphanDependents", T_BOOL, F_KEEP_ZERO, NULL},
    {4, "propagationPolicy", T_STRING, F_KEEP_ZERO, NULL},
    {5, "dryRun", T_STRINGS, 0, NULL},
    {6, "ignoreStoreReadErrorWithClusterBreakingPotential", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(delete_options, delete_options_f);

/* k8s.io/api/core/v1 */
static const pb_field configmap_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {4, "immutable", T_BOOL, F_KEEP_ZERO, NULL},
    {2, "data", T_MAP_STRING, 0, NULL},
    {3, "binaryData", T_MAP_BYTES, 0, NULL},
};
SCHEMA(configmap, configmap_f);

static const pb_field secret_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {5, "immutable", T_BOOL, F_KEEP_ZERO, NULL},
    {2, "data", T_MAP_BYTES, 0, NULL},
    {4, "stringData", T_MAP_STRING, 0, NULL},
    {3, "type", T_STRING, 0, NULL},
};
SCHEMA(secret, secret_f);

static const pb_field namespace_spec_f[] = {
    {1, "finalizers", T_STRINGS, 0, NULL},
};
SCHEMA(namespace_spec, namespace_spec_f);

static const pb_field namespace_condition_f[] = {
    {1, "type", T_STRING, 0, NULL},
    {2, "status", T_STRING, 0, NULL},
    {4, "lastTransitionTime", T_TIME, 0, NULL},
    {5, "reason", T_STRING, 0, NULL},
    {6, "message", T_STRING, 0, NULL},
};
SCHEMA(namespace_condition, namespace_condition_f);

static const pb_field namespace_status_f[] = {
    {1, "phase", T_STRING, 0, NULL},
    {2, "conditions", T_MESSAGES, 0, &namespace_condition},
};
SCHEMA(namespace_status, namespace_status_f);

static const pb_field namespace_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &namespace_spec},
    {3, "status", T_MESSAGE, 0, &namespace_status},
};
SCHEMA(namespace_, namespace_f);

static const pb_field object_reference_f[] = {
    {1, "kind", T_STRING, 0, NULL},       {2, "namespace", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},       {4, "uid", T_STRING, 0, NULL},
    {5, "apiVersion", T_STRING, 0, NULL}, {6, "resourceVersion", T_STRING, 0, NULL},
    {7, "fieldPath", T_STRING, 0, NULL},
};
SCHEMA(object_reference, object_reference_f);

static const pb_field local_object_reference_f[] = {
    {1, "name", T_STRING, 0, NULL},
};
SCHEMA(local_object_reference, local_object_reference_f);

static const pb_field service_account_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "secrets", T_MESSAGES, 0, &object_reference},
    {3, "imagePullSecrets", T_MESSAGES, 0, &local_object_reference},
    {4, "automountServiceAccountToken", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(service_account, service_account_f);

static const pb_field event_source_f[] = {
    {1, "component", T_STRING, 0, NULL},
    {2, "host", T_STRING, 0, NULL},
};
SCHEMA(event_source, event_source_f);

static const pb_field event_series_f[] = {
    {1, "count", T_INT32, 0, NULL},
    {2, "lastObservedTime", T_MICROTIME, 0, NULL},
};
SCHEMA(event_series, event_series_f);

static const pb_field event_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "involvedObject", T_MESSAGE, 0, &object_reference},
    {3, "reason", T_STRING, 0, NULL},
    {4, "message", T_STRING, 0, NULL},
    {5, "source", T_MESSAGE, 0, &event_source},
    {6, "firstTimestamp", T_TIME, 0, NULL},
    {7, "lastTimestamp", T_TIME, 0, NULL},
    {8, "count", T_INT32, 0, NULL},
    {9, "type", T_STRING, 0, NULL},
    {10, "eventTime", T_MICROTIME, 0, NULL},
    {11, "series", T_MESSAGE, 0, &event_series},
    {12, "action", T_STRING, 0, NULL},
    {13, "related", T_MESSAGE, 0, &object_reference},
    {14, "reportingComponent", T_STRING, 0, NULL},
    {15, "reportingInstance", T_STRING, 0, NULL},
};
SCHEMA(event, event_f);

/* k8s.io/api/coordination/v1 */
static const pb_field lease_spec_f[] = {
    {1, "holderIdentity", T_STRING, F_KEEP_ZERO, NULL},
    {2, "leaseDurationSeconds", T_INT32, F_KEEP_ZERO, NULL},
    {3, "acquireTime", T_MICROTIME, 0, NULL},
    {4, "renewTime", T_MICROTIME, 0, NULL},
    {5, "leaseTransitions", T_INT32, F_KEEP_ZERO, NULL},
    {6, "strategy", T_STRING, F_KEEP_ZERO, NULL},
    {7, "preferredHolder", T_STRING, F_KEEP_ZERO, NULL},
};
SCHEMA(lease_spec, lease_spec_f);

static const pb_field lease_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &lease_spec},
};
SCHEMA(lease, lease_f);

/* k8s.io/api core/v1 (pod templates), apps/v1 Deployment, batch/v1 Job and CronJob: the
 * fields `kubectl create deployment|job|cronjob` and typed clients set for simple workloads.
 * Probes, volumes, affinity, security contexts with content and the like are refused (send
 * JSON for those). */
static const pb_field container_port_f[] = {
    {1, "name", T_STRING, 0, NULL},         {2, "hostPort", T_INT32, 0, NULL},
    {3, "containerPort", T_INT32, 0, NULL}, {4, "protocol", T_STRING, 0, NULL},
    {5, "hostIP", T_STRING, 0, NULL},
};
STRICT(container_port, container_port_f, "ContainerPort");

static const pb_field env_var_f[] = {
    {1, "name", T_STRING, 0, NULL},
    {2, "value", T_STRING, 0, NULL},
};
STRICT(env_var, env_var_f, "EnvVar");

static const pb_field resources_f[] = {
    {1, "limits", T_MAP_QUANTITY, 0, NULL},
    {2, "requests", T_MAP_QUANTITY, 0, NULL},
};
STRICT(resources, resources_f, "ResourceRequirements");

static const pb_field container_f[] = {
    {1, "name", T_STRING, 0, NULL},
    {2, "image", T_STRING, 0, NULL},
    {3, "command", T_STRINGS, 0, NULL},
    {4, "args", T_STRINGS, 0, NULL},
    {5, "workingDir", T_STRING, 0, NULL},
    {6, "ports", T_MESSAGES, 0, &container_port},
    {7, "env", T_MESSAGES, 0, &env_var},
    {8, "resources", T_MESSAGE, 0, &resources},
    {13, "terminationMessagePath", T_STRING, 0, NULL},
    {14, "imagePullPolicy", T_STRING, 0, NULL},
    {16, "stdin", T_BOOL, 0, NULL},
    {17, "stdinOnce", T_BOOL, 0, NULL},
    {18, "tty", T_BOOL, 0, NULL},
    {20, "terminationMessagePolicy", T_STRING, 0, NULL},
    {24, "restartPolicy", T_STRING, 0, NULL},
};
STRICT(container, container_f, "Container");

static const pb_field none_f[] = {{0, "", T_STRING, 0, NULL}};
static const pb_schema empty_strict = {none_f, 0, "PodSecurityContext"};
static const pb_schema ignored = {none_f, 0, NULL}; /* a status: skipped, never stored */

static const pb_field pod_spec_f[] = {
    {2, "containers", T_MESSAGES, 0, &container},
    {20, "initContainers", T_MESSAGES, 0, &container},
    {3, "restartPolicy", T_STRING, 0, NULL},
    {4, "terminationGracePeriodSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {5, "activeDeadlineSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {6, "dnsPolicy", T_STRING, 0, NULL},
    {7, "nodeSelector", T_MAP_STRING, 0, NULL},
    {8, "serviceAccountName", T_STRING, 0, NULL},
    {9, "serviceAccount", T_STRING, 0, NULL},
    {10, "nodeName", T_STRING, 0, NULL},
    {11, "hostNetwork", T_BOOL, 0, NULL},
    {12, "hostPID", T_BOOL, 0, NULL},
    {13, "hostIPC", T_BOOL, 0, NULL},
    {14, "securityContext", T_MESSAGE, 0, &empty_strict},
    {15, "imagePullSecrets", T_MESSAGES, 0, &local_object_reference},
    {16, "hostname", T_STRING, 0, NULL},
    {17, "subdomain", T_STRING, 0, NULL},
    {19, "schedulerName", T_STRING, 0, NULL},
    {21, "automountServiceAccountToken", T_BOOL, F_KEEP_ZERO, NULL},
    {24, "priorityClassName", T_STRING, 0, NULL},
    {25, "priority", T_INT32, F_KEEP_ZERO, NULL},
    {27, "shareProcessNamespace", T_BOOL, F_KEEP_ZERO, NULL},
    {29, "runtimeClassName", T_STRING, F_KEEP_ZERO, NULL},
    {30, "enableServiceLinks", T_BOOL, F_KEEP_ZERO, NULL},
    {31, "preemptionPolicy", T_STRING, F_KEEP_ZERO, NULL},
    {35, "setHostnameAsFQDN", T_BOOL, F_KEEP_ZERO, NULL},
    {37, "hostUsers", T_BOOL, F_KEEP_ZERO, NULL},
};
STRICT(pod_spec, pod_spec_f, "PodSpec");

static const pb_field pod_template_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &pod_spec},
};
STRICT(pod_template, pod_template_f, "PodTemplateSpec");

static const pb_field selector_req_f[] = {
    {1, "key", T_STRING, 0, NULL},
    {2, "operator", T_STRING, 0, NULL},
    {3, "values", T_STRINGS, 0, NULL},
};
STRICT(selector_req, selector_req_f, "LabelSelectorRequirement");

static const pb_field selector_f[] = {
    {1, "matchLabels", T_MAP_STRING, 0, NULL},
    {2, "matchExpressions", T_MESSAGES, 0, &selector_req},
};
STRICT(selector, selector_f, "LabelSelector");

static const pb_field rolling_update_f[] = {
    {1, "maxUnavailable", T_INTORSTR, 0, NULL},
    {2, "maxSurge", T_INTORSTR, 0, NULL},
};
STRICT(rolling_update, rolling_update_f, "RollingUpdateDeployment");

static const pb_field strategy_f[] = {
    {1, "type", T_STRING, 0, NULL},
    {2, "rollingUpdate", T_MESSAGE, 0, &rolling_update},
};
STRICT(strategy, strategy_f, "DeploymentStrategy");

static const pb_field deployment_spec_f[] = {
    {1, "replicas", T_INT32, F_KEEP_ZERO, NULL},
    {2, "selector", T_MESSAGE, 0, &selector},
    {3, "template", T_MESSAGE, 0, &pod_template},
    {4, "strategy", T_MESSAGE, 0, &strategy},
    {5, "minReadySeconds", T_INT32, 0, NULL},
    {6, "revisionHistoryLimit", T_INT32, F_KEEP_ZERO, NULL},
    {7, "paused", T_BOOL, 0, NULL},
    {9, "progressDeadlineSeconds", T_INT32, F_KEEP_ZERO, NULL},
};
STRICT(deployment_spec, deployment_spec_f, "DeploymentSpec");

static const pb_field deployment_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &deployment_spec},
    {3, "status", T_MESSAGE, 0, &ignored},
};
STRICT(deployment, deployment_f, "Deployment");

static const pb_field job_spec_f[] = {
    {1, "parallelism", T_INT32, F_KEEP_ZERO, NULL},
    {2, "completions", T_INT32, F_KEEP_ZERO, NULL},
    {3, "activeDeadlineSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {4, "selector", T_MESSAGE, 0, &selector},
    {5, "manualSelector", T_BOOL, F_KEEP_ZERO, NULL},
    {6, "template", T_MESSAGE, 0, &pod_template},
    {7, "backoffLimit", T_INT32, F_KEEP_ZERO, NULL},
    {8, "ttlSecondsAfterFinished", T_INT32, F_KEEP_ZERO, NULL},
    {9, "completionMode", T_STRING, F_KEEP_ZERO, NULL},
    {10, "suspend", T_BOOL, F_KEEP_ZERO, NULL},
    {12, "backoffLimitPerIndex", T_INT32, F_KEEP_ZERO, NULL},
    {13, "maxFailedIndexes", T_INT32, F_KEEP_ZERO, NULL},
    {14, "podReplacementPolicy", T_STRING, F_KEEP_ZERO, NULL},
    {15, "managedBy", T_STRING, F_KEEP_ZERO, NULL},
};
STRICT(job_spec, job_spec_f, "JobSpec");

static const pb_field job_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &job_spec},
    {3, "status", T_MESSAGE, 0, &ignored},
};
STRICT(job, job_f, "Job");

static const pb_field job_template_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &job_spec},
};
STRICT(job_template, job_template_f, "JobTemplateSpec");

static const pb_field cronjob_spec_f[] = {
    {1, "schedule", T_STRING, 0, NULL},
    {8, "timeZone", T_STRING, F_KEEP_ZERO, NULL},
    {2, "startingDeadlineSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {3, "concurrencyPolicy", T_STRING, 0, NULL},
    {4, "suspend", T_BOOL, F_KEEP_ZERO, NULL},
    {5, "jobTemplate", T_MESSAGE, 0, &job_template},
    {6, "successfulJobsHistoryLimit", T_INT32, F_KEEP_ZERO, NULL},
    {7, "failedJobsHistoryLimit", T_INT32, F_KEEP_ZERO, NULL},
};
STRICT(cronjob_spec, cronjob_spec_f, "CronJobSpec");

static const pb_field cronjob_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &cronjob_spec},
    {3, "status", T_MESSAGE, 0, &ignored},
};
STRICT(cronjob, cronjob_f, "CronJob");

/* rbac.authorization.k8s.io/v1 and the authentication/authorization reviews */
static const pb_field policy_rule_f[] = {
    {1, "verbs", T_STRINGS, 0, NULL},           {2, "apiGroups", T_STRINGS, 0, NULL},
    {3, "resources", T_STRINGS, 0, NULL},       {4, "resourceNames", T_STRINGS, 0, NULL},
    {5, "nonResourceURLs", T_STRINGS, 0, NULL},
};
STRICT(policy_rule, policy_rule_f, "PolicyRule");

static const pb_field aggregation_rule_f[] = {
    {1, "clusterRoleSelectors", T_MESSAGES, 0, &selector},
};
STRICT(aggregation_rule, aggregation_rule_f, "AggregationRule");

static const pb_field role_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "rules", T_MESSAGES, 0, &policy_rule},
    {3, "aggregationRule", T_MESSAGE, 0, &aggregation_rule},
};
STRICT(role, role_f, "Role");

static const pb_field subject_f[] = {
    {1, "kind", T_STRING, 0, NULL},
    {2, "apiGroup", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},
    {4, "namespace", T_STRING, 0, NULL},
};
STRICT(subject, subject_f, "Subject");

static const pb_field role_ref_f[] = {
    {1, "apiGroup", T_STRING, 0, NULL},
    {2, "kind", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},
};
STRICT(role_ref, role_ref_f, "RoleRef");

static const pb_field role_binding_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "subjects", T_MESSAGES, 0, &subject},
    {3, "roleRef", T_MESSAGE, 0, &role_ref},
};
STRICT(role_binding, role_binding_f, "RoleBinding");

static const pb_field bound_ref_f[] = {
    {1, "kind", T_STRING, 0, NULL},
    {2, "apiVersion", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},
    {4, "uid", T_STRING, 0, NULL},
};
STRICT(bound_ref, bound_ref_f, "BoundObjectReference");

static const pb_field token_request_spec_f[] = {
    {1, "audiences", T_STRINGS, 0, NULL},
    {3, "boundObjectRef", T_MESSAGE, 0, &bound_ref},
    {4, "expirationSeconds", T_INT64, F_KEEP_ZERO, NULL},
};
STRICT(token_request_spec, token_request_spec_f, "TokenRequestSpec");

static const pb_field token_review_spec_f[] = {
    {1, "token", T_STRING, 0, NULL},
    {2, "audiences", T_STRINGS, 0, NULL},
};
STRICT(token_review_spec, token_review_spec_f, "TokenReviewSpec");

static const pb_field resource_attributes_f[] = {
    {1, "namespace", T_STRING, 0, NULL},
    {2, "verb", T_STRING, 0, NULL},
    {3, "group", T_STRING, 0, NULL},
    {4, "version", T_STRING, 0, NULL},
    {5, "resource", T_STRING, 0, NULL},
    {6, "subresource", T_STRING, 0, NULL},
    {7, "name", T_STRING, 0, NULL},
    {8, "fieldSelector", T_MESSAGE, 0, &ignored},
    {9, "labelSelector", T_MESSAGE, 0, &ignored},
};
STRICT(resource_attributes, resource_attributes_f, "ResourceAttributes");

static const pb_field non_resource_attributes_f[] = {
    {1, "path", T_STRING, 0, NULL},
    {2, "verb", T_STRING, 0, NULL},
};
STRICT(non_resource_attributes, non_resource_attributes_f, "NonResourceAttributes");

static const pb_field access_review_spec_f[] = {
    {1, "resourceAttributes", T_MESSAGE, 0, &resource_attributes},
    {2, "nonResourceAttributes", T_MESSAGE, 0, &non_resource_attributes},
};
STRICT(access_review_spec, access_review_spec_f, "SelfSubjectAccessReviewSpec");

static const pb_field rules_review_spec_f[] = {
    {1, "namespace", T_STRING, 0, NULL},
};
STRICT(rules_review_spec, rules_review_spec_f, "SelfSubjectRulesReviewSpec");

#define REVIEW(var, spec, name)                                                                    \
    static const pb_field var##_f[] = {                                                            \
        {1, "metadata", T_MESSAGE, 0, &object_meta},                                               \
        {2, "spec", T_MESSAGE, 0, &spec},                                                          \
        {3, "status", T_MESSAGE, 0, &ignored},                                                     \
    };                                                                                             \
    STRICT(var, var##_f, name)
REVIEW(token_request, token_request_spec, "TokenRequest");
REVIEW(token_review, token_review_spec, "TokenReview");
REVIEW(access_review, access_review_spec, "SelfSubjectAccessReview");
REVIEW(rules_review, rules_review_spec, "SelfSubjectRulesReview");

static const pb_field self_subject_review_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "status", T_MESSAGE, 0, &ignored},
};
STRICT(self_subject_review, self_subject_review_f, "SelfSubjectReview");

typedef struct pb_kind {
    const char *api_version; /* NULL: any (DeleteOptions is registered in every group) */
    const char *kind;
    const pb_schema *schema;
} pb_kind;

static const pb_kind kinds[] = {
    {"v1", "ConfigMap", &configmap},
    {"v1", "Secret", &secret},
    {"v1", "Namespace", &namespace_},
    {"v1", "ServiceAccount", &service_account},
    {"v1", "Event", &event},
    {"coordination.k8s.io/v1", "Lease", &lease},
    {"apps/v1", "Deployment", &deployment},
    {"batch/v1", "Job", &job},
    {"batch/v1", "CronJob", &cronjob},
    {"rbac.authorization.k8s.io/v1", "Role", &role},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", &role},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", &role_binding},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &role_binding},
    {"authentication.k8s.io/v1", "TokenRequest", &token_request},
    {"authentication.k8s.io/v1", "TokenReview", &token_review},
    {"authentication.k8s.io/v1", "SelfSubjectReview", &self_subject_review},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", &access_review},
    {"authorization.k8s.io/v1", "SelfSubjectRulesReview", &rules_review},
    {NULL, "DeleteOptions", &delete_options},
};

/* ---- decoding ---- */

static int decode_message(pb_reader *r, const pb_schema *s, int depth, json_t *obj);

static bool view_eq(const pb_reader *v, const char *s)
{
    size_t n = strlen(s);
    return pb_left(v) == n && !memcmp(v->p, s, n);
}

/* A JSON string of the bytes in v; NULL (with the error set) when they are not UTF-8. */
static json_t *view_string(const pb_reader *v, const char *name)
{
    json_t *j = json_stringn((const char *)v->p, pb_left(v));
    if (!j)
        sw_error_set(SW_EBADREQUEST, "protobuf: field %s is not valid UTF-8", name);
    return j;
}

/* Sets obj[name] = value (stolen), or removes the key when the value is zero and the field
 * is not a pointer in Go. */
static void set_value(json_t *obj, const pb_field *f, json_t *value, bool zero)
{
    if (zero && !(f->flags & F_KEEP_ZERO)) {
        json_decref(value);
        json_object_del(obj, f->name);
        return;
    }
    json_object_set_new(obj, f->name, value);
}

/* obj[name] as an object or array, created (or replacing another type) when missing. */
static json_t *child(json_t *obj, const char *name, bool array)
{
    json_t *c = json_object_get(obj, name);
    if (array ? json_is_array(c) : json_is_object(c))
        return c;
    c = array ? json_array() : json_object();
    json_object_set_new(obj, name, c);
    return c;
}

static int decode_scalar(pb_reader *r, const pb_field *f, json_t *obj)
{
    uint64_t v = 0;
    int error = pb_varint(r, &v);
    if (error < 0)
        return error;
    if (f->type == T_INT32) {
        int32_t x = (int32_t)(uint32_t)v; /* Go truncates int32 varints the same way */
        set_value(obj, f, json_integer(x), x == 0);
    } else if (f->type == T_INT64) {
        int64_t x = (int64_t)v;
        set_value(obj, f, json_integer(x), x == 0);
    } else {
        set_value(obj, f, json_boolean(v != 0), v == 0);
    }
    return 0;
}

/* One map<string, string|bytes|Quantity> entry {1: key, 2: value}; later keys replace earlier
 * ones. A Quantity is the message {1: string}: its string is the value. */
static int decode_map_entry(pb_reader *r, const pb_field *f, json_t *map)
{
    pb_reader key = {r->p, r->p}, val = {r->p, r->p};
    char *k = NULL;
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        error = pb_key(r, &num, &wt);
        if (error == 0 && (num == 1 || num == 2))
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1 ? pb_len(r, &key) : num == 2 ? pb_len(r, &val) : pb_skip(r, wt);
    }
    if (error < 0)
        return error;
    if (memchr(key.p, '\0', pb_left(&key)))
        return sw_error_set(SW_EBADREQUEST, "protobuf: a key of %s contains a NUL byte", f->name);
    pb_reader str = {val.p, val.p};
    while (f->type == T_MAP_QUANTITY && error == 0 && val.p < val.end) {
        uint32_t num = 0; /* resource.Quantity {1: string} */
        unsigned wt;
        error = pb_key(&val, &num, &wt);
        if (error == 0 && num == 1)
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1 ? pb_len(&val, &str) : pb_skip(&val, wt);
    }
    if (error < 0)
        return error;
    if (f->type == T_MAP_QUANTITY)
        val = str;
    json_t *value;
    if (f->type == T_MAP_BYTES) {
        char *b64 = sw_base64_encode(val.p, pb_left(&val));
        value = json_string(b64);
        sw_free(b64);
    } else {
        value = view_string(&val, f->name);
        if (!value)
            return SW_EBADREQUEST;
    }
    k = sw_strndup((const char *)key.p, pb_left(&key));
    if (json_object_set_new(map, k, value) < 0)
        error = sw_error_set(SW_EBADREQUEST, "protobuf: a key of %s is not valid UTF-8", f->name);
    sw_free(k);
    return error;
}

/* meta/v1 Time or MicroTime {1: seconds, 2: nanos}; the zero time is JSON null (left out). */
static int decode_time(pb_reader *r, const pb_field *f, json_t *obj)
{
    int64_t secs = 0;
    int32_t nanos = 0;
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        uint64_t v = 0;
        error = pb_key(r, &num, &wt);
        if (error == 0 && (num == 1 || num == 2))
            error = pb_want(f->name, wt, WT_VARINT);
        if (error == 0)
            error = num == 1 || num == 2 ? pb_varint(r, &v) : pb_skip(r, wt);
        if (num == 1)
            secs = (int64_t)v;
        else if (num == 2)
            nanos = (int32_t)(uint32_t)v;
    }
    if (error < 0)
        return error;
    if (secs == 0 && nanos == 0) {
        json_object_del(obj, f->name);
        return 0;
    }
    if (secs < 0 || secs > MAX_EPOCH_SECONDS || nanos < 0 || nanos > 999999999)
        return sw_error_set(SW_EBADREQUEST, "protobuf: field %s is out of range (%lld s, %d ns)",
                            f->name, (long long)secs, (int)nanos);
    char buf[40];
    if (f->type == T_TIME)
        sw_time_format(secs, buf, sizeof(buf));
    else
        sw_time_format_micro(secs * 1000000 + nanos / 1000, buf, sizeof(buf));
    json_object_set_new(obj, f->name, json_string(buf));
    return 0;
}

/* meta/v1 FieldsV1 {1: raw}: raw is JSON, and the JSON form of FieldsV1 is that JSON itself. */
static int decode_fields_v1(pb_reader *r, const pb_field *f, json_t *obj)
{
    pb_reader raw = {r->p, r->p};
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        error = pb_key(r, &num, &wt);
        if (error == 0 && num == 1)
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1 ? pb_len(r, &raw) : pb_skip(r, wt);
    }
    if (error < 0)
        return error;
    if (raw.p == raw.end) {
        json_object_del(obj, f->name);
        return 0;
    }
    json_t *j = NULL;
    error = sw_json_parse((const char *)raw.p, pb_left(&raw), SW_JSON_MAX_DEPTH, 0, &j);
    if (error < 0)
        return error;
    json_object_set_new(obj, f->name, j);
    return 0;
}

/* intstr.IntOrString {1: type (0 int, 1 string), 2: intVal, 3: strVal}. */
static int decode_int_or_string(pb_reader *r, const pb_field *f, json_t *obj)
{
    uint64_t type = 0, iv = 0;
    pb_reader sv = {r->p, r->p};
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        error = pb_key(r, &num, &wt);
        if (error == 0 && (num == 1 || num == 2))
            error = pb_want(f->name, wt, WT_VARINT);
        else if (error == 0 && num == 3)
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1   ? pb_varint(r, &type)
                    : num == 2 ? pb_varint(r, &iv)
                    : num == 3 ? pb_len(r, &sv)
                               : pb_skip(r, wt);
    }
    if (error < 0)
        return error;
    if (type == 1) {
        json_t *s = view_string(&sv, f->name);
        if (!s)
            return SW_EBADREQUEST;
        json_object_set_new(obj, f->name, s);
    } else {
        json_object_set_new(obj, f->name, json_integer((int32_t)(uint32_t)iv));
    }
    return 0;
}

static int decode_nested(pb_reader *sub, const pb_field *f, int depth, json_t *obj)
{
    json_t *item;
    switch (f->type) {
    case T_MESSAGE:
        return decode_message(sub, f->sub, depth + 1, child(obj, f->name, false));
    case T_MESSAGES:
        item = json_object();
        json_array_append_new(child(obj, f->name, true), item);
        return decode_message(sub, f->sub, depth + 1, item);
    case T_STRINGS:
        item = view_string(sub, f->name);
        if (!item)
            return SW_EBADREQUEST;
        json_array_append_new(child(obj, f->name, true), item);
        return 0;
    case T_MAP_STRING:
    case T_MAP_BYTES:
        return decode_map_entry(sub, f, child(obj, f->name, false));
    case T_TIME:
    case T_MICROTIME:
        return decode_time(sub, f, obj);
    case T_FIELDSV1:
        return decode_fields_v1(sub, f, obj);
    case T_MAP_QUANTITY:
        return decode_map_entry(sub, f, child(obj, f->name, false));
    case T_INTORSTR:
        return decode_int_or_string(sub, f, obj);
    default: /* T_STRING */
        item = view_string(sub, f->name);
        if (!item)
            return SW_EBADREQUEST;
        set_value(obj, f, item, sub->p == sub->end);
        return 0;
    }
}

static int decode_field(pb_reader *r, const pb_field *f, unsigned wt, int depth, json_t *obj)
{
    bool scalar = f->type == T_INT32 || f->type == T_INT64 || f->type == T_BOOL;
    int error = pb_want(f->name, wt, scalar ? WT_VARINT : WT_LEN);
    if (error < 0)
        return error;
    if (scalar)
        return decode_scalar(r, f, obj);
    pb_reader sub;
    error = pb_len(r, &sub);
    if (error < 0)
        return error;
    return decode_nested(&sub, f, depth, obj);
}

static const pb_field *find_field(const pb_schema *s, uint32_t num)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->fields[i].num == num)
            return &s->fields[i];
    return NULL;
}

/* Decodes the message in r into obj by schema s. Unknown fields are skipped (refused in a strict
 * schema); a repeated scalar or message field overwrites or merges, as protobuf's "last one
 * wins" rule says. */
static int decode_message(pb_reader *r, const pb_schema *s, int depth, json_t *obj)
{
    if (depth > SW_PROTOBUF_MAX_DEPTH)
        return sw_error_set(SW_EBADREQUEST, "protobuf: messages nested deeper than %d",
                            SW_PROTOBUF_MAX_DEPTH);
    while (r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        int error = pb_key(r, &num, &wt);
        if (error < 0)
            return error;
        const pb_field *f = find_field(s, num);
        if (!f && s->strict)
            return sw_error_set(SW_EUNSUPPORTED,
                                "protobuf: field %u of %s is not decoded by slipway; send this "
                                "object as application/json",
                                (unsigned)num, s->strict);
        error = f ? decode_field(r, f, wt, depth, obj) : pb_skip(r, wt);
        if (error < 0)
            return error;
    }
    return 0;
}

/* ---- runtime.Unknown envelope ---- */

typedef struct pb_unknown {
    pb_reader api_version; /* typeMeta.apiVersion */
    pb_reader kind;        /* typeMeta.kind */
    pb_reader raw;         /* the kind's message */
    pb_reader encoding;    /* contentEncoding ("" or absent) */
} pb_unknown;

/* Reads a message whose fields 1..n (all length-delimited) land in outs[0..n-1]. */
static int decode_views(pb_reader *r, const char *what, pb_reader *outs, uint32_t n)
{
    while (r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        int error = pb_key(r, &num, &wt);
        if (error == 0 && num >= 1 && num <= n)
            error = pb_want(what, wt, WT_LEN);
        if (error == 0)
            error = num >= 1 && num <= n ? pb_len(r, &outs[num - 1]) : pb_skip(r, wt);
        if (error < 0)
            return error;
    }
    return 0;
}

static int decode_unknown(pb_reader *r, pb_unknown *u)
{
    pb_reader env[4] = {{r->p, r->p}, {r->p, r->p}, {r->p, r->p}, {r->p, r->p}};
    int error = decode_views(r, "runtime.Unknown", env, 4);
    if (error < 0)
        return error;
    pb_reader tm[2] = {{r->p, r->p}, {r->p, r->p}};
    error = decode_views(&env[0], "runtime.TypeMeta", tm, 2);
    if (error < 0)
        return error;
    u->api_version = tm[0];
    u->kind = tm[1];
    u->raw = env[1];
    u->encoding = env[2];
    return 0;
}

static const pb_kind *find_kind(const pb_unknown *u)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (view_eq(&u->kind, kinds[i].kind) &&
            (!kinds[i].api_version || view_eq(&u->api_version, kinds[i].api_version)))
            return &kinds[i];
    return NULL;
}

/* The printable prefix of a view, for messages. */
static int view_printable(const pb_reader *v)
{
    size_t n = 0;
    while (n < pb_left(v) && n < 100 && v->p[n] >= 0x20 && v->p[n] < 0x7f)
        n++;
    return (int)n;
}

static int unsupported_kind(const pb_unknown *u)
{
    return sw_error_set(SW_EUNSUPPORTED,
                        "protobuf request bodies are not supported for %.*s %.*s (supported: v1 "
                        "Secret, ConfigMap, Namespace, ServiceAccount, Event, "
                        "coordination.k8s.io/v1 Lease, apps/v1 Deployment, batch/v1 Job and "
                        "CronJob, the rbac.authorization.k8s.io/v1 kinds, TokenRequest and the "
                        "authentication/authorization reviews, DeleteOptions); send "
                        "application/json",
                        view_printable(&u->api_version), (const char *)u->api_version.p,
                        view_printable(&u->kind), (const char *)u->kind.p);
}

int sw_protobuf_decode(const char *body, size_t len, json_t **out)
{
    json_t *obj = NULL, *av = NULL;
    pb_unknown u;
    int error;
    if (len < 4 || memcmp(body, "k8s\0", 4) != 0)
        return sw_error_set(SW_EBADREQUEST,
                            "protobuf: the body does not start with the k8s\\0 magic bytes");
    pb_reader r = {(const unsigned char *)body + 4, (const unsigned char *)body + len};
    error = decode_unknown(&r, &u);
    if (error < 0)
        return error;
    if (u.kind.p == u.kind.end)
        return sw_error_set(SW_EBADREQUEST, "protobuf: the body names no kind (typeMeta.kind)");
    const pb_kind *k = find_kind(&u);
    if (!k)
        return unsupported_kind(&u);
    if (u.encoding.p != u.encoding.end)
        return sw_error_set(
            SW_EUNSUPPORTED,
            "protobuf: contentEncoding %.*s is not supported; send application/json",
            view_printable(&u.encoding), (const char *)u.encoding.p);
    av = view_string(&u.api_version, "typeMeta.apiVersion");
    if (!av)
        return SW_EBADREQUEST;
    obj = json_object();
    if (json_string_length(av))
        json_object_set_new(obj, "apiVersion", av);
    else
        json_decref(av);
    json_object_set_new(obj, "kind", json_string(k->kind));
    error = decode_message(&u.raw, k->schema, 1, obj);
    if (error < 0)
        goto done;
    *out = obj;
    obj = NULL;
done:
    json_decref(obj);
    return error;
}
