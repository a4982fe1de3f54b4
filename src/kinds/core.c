/* core: the v1 core kinds the controllers need: Namespace, Secret, ConfigMap, Event,
 * ServiceAccount. Their strategies are small enough to share a file; each is still its own
 * descriptor. */
#include "kinds/core.h"

#include "meta/names.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

/* ---- Namespace ---- */

#define NS_NAME_LABEL "kubernetes.io/metadata.name"

/* Every namespace carries its name as a label (NamespaceDefaultLabelName), so selectors can
 * name namespaces; clients cannot change or drop it. */
static void ns_label(json_t *obj)
{
    const char *name = sw_json_str_at(obj, "metadata.name");
    json_t *meta = sw_json_obj_path(obj, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    if (name)
        json_object_set_new(labels, NS_NAME_LABEL, json_string(name));
}

static int ns_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    /* the client's finalizers are kept (a namespace can wait for more than its content) and
     * `kubernetes` joins them, as the namespace strategy's PrepareForCreate does */
    json_t *given = sw_json_at(obj, "spec.finalizers");
    json_t *fin = json_is_array(given) ? json_deep_copy(given) : json_array();
    if (!sw_finalizers_has(fin, "kubernetes"))
        json_array_append_new(fin, json_string("kubernetes"));
    sw_json_set_path(obj, "spec.finalizers", fin);
    sw_json_set_path(obj, "status.phase", json_string("Active"));
    ns_label(obj);
    return 0;
}

static int ns_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    ns_label(obj);
    return 0;
}

static int ns_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int error = sw_names_check_finalizers("spec.finalizers", sw_json_at(obj, "spec.finalizers"));
    if (error < 0 || !old)
        return error;
    /* the phase says whether deletion began, and nothing else (ValidateNamespaceStatusUpdate) */
    const char *phase = sw_json_str_at(obj, "status.phase");
    bool deleting = sw_json_at(obj, "metadata.deletionTimestamp") != NULL;
    if (!deleting && !sw_str_eq(phase, "Active"))
        return sw_names_invalid(SW_EINVALID, "status.Phase", phase ? phase : "",
                                "may only be 'Active' if `deletionTimestamp` is empty");
    if (deleting && !sw_str_eq(phase, "Terminating"))
        return sw_names_invalid(SW_EINVALID, "status.Phase", phase ? phase : "",
                                "may only be 'Terminating' if `deletionTimestamp` is not empty");
    return 0;
}

/* The namespace registry's Delete: the first DELETE only starts termination (deletionTimestamp,
 * phase Terminating, the GC finalizers the options ask for); the namespace controller empties
 * it and removes `kubernetes` from spec.finalizers through /finalize; until then a DELETE
 * answers with the namespace as it is. Then the generic rules remove it (or leave it to its
 * metadata.finalizers). */
static int ns_prepare_delete(const sw_kind_ctx *ctx, json_t *obj, const sw_delete_opts *o)
{
    static const char *const kept[] = {"default", "kube-system", "kube-public", NULL};
    const char *name = sw_json_str_at(obj, "metadata.name");
    if (sw_str_one_of(name, kept))
        return sw_error_set(SW_EFORBIDDEN,
                            "namespaces \"%s\" is forbidden: this namespace may not be deleted",
                            name);
    json_t *meta = sw_json_obj_path(obj, "metadata");
    if (!json_object_get(meta, "deletionTimestamp")) {
        char now[32];
        json_t *fin = json_object_get(meta, "finalizers");
        bool orphan = o->orphan_dependents >= 0 ? o->orphan_dependents == 1
                      : o->policy != SW_PROPAGATE_UNSET
                          ? o->policy == SW_PROPAGATE_ORPHAN
                          : sw_finalizers_has(fin, SW_FINALIZER_ORPHAN);
        bool fg = o->orphan_dependents >= 0 ? o->orphan_dependents == 0
                  : o->policy != SW_PROPAGATE_UNSET
                      ? o->policy == SW_PROPAGATE_FOREGROUND
                      : sw_finalizers_has(fin, SW_FINALIZER_FOREGROUND);
        json_t *next = sw_finalizers_for_delete(fin, orphan, fg);
        if (json_array_size(next) || fin)
            json_object_set(meta, "finalizers", next);
        json_decref(next);
        sw_time_format(sw_time_now(), now, sizeof(now));
        json_object_set_new(meta, "deletionTimestamp", json_string(now));
        sw_json_set_path(obj, "status.phase", json_string("Terminating"));
        return SW_DELETE_WRITE;
    }
    if (json_array_size(sw_json_at(obj, "spec.finalizers")))
        return SW_DELETE_KEEP;
    return SW_DELETE_GENERIC;
}

static bool ns_removable(const json_t *obj)
{
    return json_array_size(sw_json_at(obj, "spec.finalizers")) == 0;
}

static void ns_status(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "status.phase", out);
}

static const sw_column ns_columns[] = {
    {"Status", "string", "The status of the namespace", 0, ns_status, NULL, NULL},
};

static const char *const ns_fields[] = {"status.phase", NULL};
/* no deletecollection: kube-apiserver does not serve it on namespaces */
static const char *const ns_verbs[] = {"create", "delete", "get",   "list",
                                       "patch",  "update", "watch", NULL};

const sw_kind sw_kind_namespace = {
    .group = "",
    .version = "v1",
    .kind = "Namespace",
    .plural = "namespaces",
    .singular = "namespace",
    .short_names = {"ns"},
    .namespaced = false,
    .has_status = true,
    .name_rule = SW_NAME_LABEL,
    .schema_text = "{\"spec\":{\"finalizers\":[\"string\"]},"
                   "\"status\":{\"phase\":\"string\",\"conditions\":[\"any\"]}}",
    .field_selectors = ns_fields,
    .smp = sw_smp_schema_core,
    .columns = ns_columns,
    .ncolumns = 1,
    .prepare_create = ns_prepare_create,
    .prepare_update = ns_prepare_update,
    .validate = ns_validate,
    .spec_subresource = "finalize",
    .verbs = ns_verbs,
    .return_deleted = true,
    .prepare_delete = ns_prepare_delete,
    .removable = ns_removable,
};

/* ---- Secret ---- */

/* stringData is write-only: merged into data (base64) and dropped, as the apiserver does. */
static int secret_fold_string_data(json_t *obj)
{
    json_t *sd = json_object_get(obj, "stringData");
    if (!sd)
        return 0;
    if (!json_is_object(sd) && !json_is_null(sd))
        return sw_error_set(SW_EINVALID, "stringData: Invalid value: must be a map of strings");
    const char *k;
    json_t *v;
    json_object_foreach(sd, k, v)
    {
        if (!json_is_string(v))
            return sw_error_set(SW_EINVALID, "stringData[%s]: Invalid value: must be a string", k);
        char *enc = sw_base64_encode(json_string_value(v), json_string_length(v));
        json_object_set_new(sw_json_obj_path(obj, "data"), k, json_string(enc));
        sw_free(enc);
    }
    json_object_del(obj, "stringData");
    return 0;
}

static int secret_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    if (!sw_json_str_at(obj, "type"))
        json_object_set_new(obj, "type", json_string("Opaque"));
    return secret_fold_string_data(obj);
}

static int secret_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return secret_prepare(ctx, obj);
}

static bool same_field(const json_t *a, const json_t *b, const char *field)
{
    return sw_json_same(json_object_get(a, field), json_object_get(b, field));
}

/* A ConfigMap or Secret marked immutable keeps its data and the mark, as in Kubernetes. */
static int check_immutable(const json_t *obj, const json_t *old)
{
    static const char *const fields[] = {"immutable", "data", "binaryData", NULL};
    if (!old || !sw_json_bool_at(old, "immutable"))
        return 0;
    for (size_t i = 0; fields[i]; i++)
        if (!same_field(obj, old, fields[i]))
            return sw_error_set(SW_EINVALID,
                                "%s: Forbidden: field is immutable when `immutable` is set",
                                fields[i]);
    return 0;
}

static int cm_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    return check_immutable(obj, old);
}

static int secret_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int error = check_immutable(obj, old);
    if (error < 0)
        return error;
    json_t *data = json_object_get(obj, "data");
    const char *k;
    json_t *v;
    if (data && !json_is_object(data) && !json_is_null(data))
        return sw_error_set(SW_EINVALID, "data: Invalid value: must be a map");
    json_object_foreach(data, k, v)
    {
        unsigned char *dec = NULL;
        size_t n = 0;
        if (!json_is_string(v) ||
            sw_base64_decode(json_string_value(v), json_string_length(v), &dec, &n) < 0)
            return sw_error_set(SW_EINVALID,
                                "data[%s]: Invalid value: illegal base64 data in a Secret", k);
        sw_free(dec);
    }
    if (old && !sw_str_eq(sw_json_str_at(obj, "type"), sw_json_str_at(old, "type")))
        return sw_error_set(SW_EINVALID, "type: Invalid value: field is immutable");
    return 0;
}

static void count_data(const json_t *obj, sw_buf *out)
{
    size_t n = json_object_size(json_object_get(obj, "data")) +
               json_object_size(json_object_get(obj, "binaryData"));
    sw_buf_printf(out, "%zu", n);
}

static void secret_type(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "type", out);
}

static const sw_column secret_columns[] = {
    {"Type", "string", "The type of the secret", 0, secret_type, NULL, NULL},
    {"Data", "string", "The number of keys in the secret", 0, count_data, NULL, NULL},
};

static const char *const secret_fields[] = {"type", NULL};

const sw_kind sw_kind_secret = {
    .group = "",
    .version = "v1",
    .kind = "Secret",
    .plural = "secrets",
    .singular = "secret",
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"data\":\"map\",\"stringData\":\"map\",\"type\":\"string\","
                   "\"immutable\":\"boolean\"}",
    .field_selectors = secret_fields,
    .smp = sw_smp_schema_core,
    .columns = secret_columns,
    .ncolumns = 2,
    .prepare_create = secret_prepare,
    .prepare_update = secret_prepare_update,
    .validate = secret_validate,
};

/* ---- ConfigMap ---- */

static const sw_column cm_columns[] = {
    {"Data", "string", "The number of keys in the config map", 0, count_data, NULL, NULL},
};

const sw_kind sw_kind_configmap = {
    .group = "",
    .version = "v1",
    .kind = "ConfigMap",
    .plural = "configmaps",
    .singular = "configmap",
    .short_names = {"cm"},
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"data\":\"map\",\"binaryData\":\"map\",\"immutable\":\"boolean\"}",
    .smp = sw_smp_schema_core,
    .columns = cm_columns,
    .ncolumns = 1,
    .validate = cm_validate,
};

/* ---- Event ---- */

static void ev_last_seen(const json_t *obj, sw_buf *out)
{
    const char *t = sw_json_str_at(obj, "lastTimestamp");
    if (!t || !*t)
        t = sw_json_str_at(obj, "eventTime");
    if (!t || !*t)
        t = sw_json_str_at(obj, "metadata.creationTimestamp");
    int64_t secs;
    char age[32];
    if (!t || sw_time_parse(t, &secs) < 0) {
        sw_buf_puts(out, "<unknown>");
        return;
    }
    sw_time_human(sw_time_now() - secs, age, sizeof(age));
    sw_buf_puts(out, age);
}

static void ev_type(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "type", out);
}

static void ev_reason(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "reason", out);
}

static void ev_object(const json_t *obj, sw_buf *out)
{
    const char *kind = sw_json_str_at(obj, "involvedObject.kind");
    const char *name = sw_json_str_at(obj, "involvedObject.name");
    char lower[64];
    size_t i = 0;
    for (; kind && kind[i] && i < sizeof(lower) - 1; i++)
        lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
    lower[i] = '\0';
    sw_buf_printf(out, "%s/%s", lower, name ? name : "");
}

static void ev_message(const json_t *obj, sw_buf *out)
{
    const char *m = sw_json_str_at(obj, "message");
    sw_buf_puts(out, m ? m : "");
}

static const sw_column ev_columns[] = {
    {"Last Seen", "string", "Time of the last occurrence", 0, ev_last_seen, NULL, NULL},
    {"Type", "string", "Normal or Warning", 0, ev_type, NULL, NULL},
    {"Reason", "string", "Why the event happened", 0, ev_reason, NULL, NULL},
    {"Object", "string", "The object the event is about", 0, ev_object, NULL, NULL},
    {"Message", "string", "What happened", 0, ev_message, NULL, NULL},
};

static const char *const ev_fields[] = {"involvedObject.kind",
                                        "involvedObject.namespace",
                                        "involvedObject.name",
                                        "involvedObject.uid",
                                        "involvedObject.apiVersion",
                                        "involvedObject.resourceVersion",
                                        "involvedObject.fieldPath",
                                        "reason",
                                        "reportingComponent",
                                        "source",
                                        "type",
                                        NULL};

const sw_kind sw_kind_event = {
    .group = "",
    .version = "v1",
    .kind = "Event",
    .plural = "events",
    .singular = "event",
    .short_names = {"ev"},
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text =
        "{\"involvedObject\":{\"kind\":\"string\",\"namespace\":\"string\",\"name\":\"string\","
        "\"uid\":\"string\",\"apiVersion\":\"string\",\"resourceVersion\":\"string\","
        "\"fieldPath\":\"string\"},\"reason\":\"string\",\"message\":\"string\","
        "\"source\":{\"component\":\"string\",\"host\":\"string\"},"
        "\"firstTimestamp\":\"string\",\"lastTimestamp\":\"string\",\"count\":\"integer\","
        "\"type\":\"string\",\"eventTime\":\"string\",\"series\":\"any\",\"action\":\"string\","
        "\"related\":\"any\",\"reportingComponent\":\"string\",\"reportingInstance\":\"string\"}",
    .field_selectors = ev_fields,
    .smp = sw_smp_schema_core,
    .columns = ev_columns,
    .ncolumns = 5,
};

/* ---- ServiceAccount ---- */

static void sa_secrets(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%zu", json_array_size(json_object_get(obj, "secrets")));
}

static const char *const sa_token_verbs[] = {"create", NULL};
static const sw_subresource sa_subresources[] = {
    {"token", "TokenRequest", sa_token_verbs, false, sw_sa_token_request},
};

static const sw_column sa_columns[] = {
    {"Secrets", "string", "The number of secrets", 0, sa_secrets, NULL, NULL},
};

const sw_kind sw_kind_serviceaccount = {
    .group = "",
    .version = "v1",
    .kind = "ServiceAccount",
    .plural = "serviceaccounts",
    .singular = "serviceaccount",
    .short_names = {"sa"},
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"secrets\":[\"any\"],\"imagePullSecrets\":[{\"name\":\"string\"}],"
                   "\"automountServiceAccountToken\":\"boolean\"}",
    .smp = sw_smp_schema_core,
    .columns = sa_columns,
    .ncolumns = 1,
    .return_deleted = true,
    .subresources = sa_subresources,
    .nsubresources = 1,
};
