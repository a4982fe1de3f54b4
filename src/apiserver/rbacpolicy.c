/* rbacpolicy: the ClusterRoles and ClusterRoleBindings a cluster starts with, as
 * kube-apiserver's bootstrap policy writes them (cluster-admin, admin, edit, view built by
 * aggregation, system:discovery, system:basic-user, system:public-info-viewer,
 * system:monitoring, system:auth-delegator) and OpenShift's image roles (system:image-puller,
 * system:image-pusher, system:image-builder, registry-viewer, registry-editor), with slipway's
 * image, build and workload resources in admin/edit/view. Created when missing at every start;
 * one that carries rbac.authorization.kubernetes.io/autoupdate: "true" (as these are created)
 * gets its rules back when they differ, so an upgrade brings new permissions, and an operator
 * who sets the annotation to "false" keeps an edited role. */
#include "apiserver/rest.h"

#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define AGG "rbac.authorization.k8s.io/aggregate-to-"
#define AUTOUPDATE "rbac.authorization.kubernetes.io/autoupdate"

#define RW "create,delete,deletecollection,patch,update"
#define READ "get,list,watch"

/* A rule: "verbs;apiGroups;resources" or "verbs;;;urls" (non-resource); lists comma-separated,
 * "core" for the "" group. */
typedef struct policy_role {
    const char *name;
    const char *label;     /* aggregate-to-<label>="true", or NULL */
    const char *aggregate; /* an aggregationRule selecting aggregate-to-<this>, or NULL */
    const char *rules[16];
} policy_role;

static const policy_role roles[] = {
    {"cluster-admin", NULL, NULL, {"*;*;*", "*;;;*"}},
    {"admin", NULL, "admin", {NULL}},
    {"edit", "admin", "edit", {NULL}},
    {"view", "edit", "view", {NULL}},
    {"system:aggregate-to-admin",
     "admin",
     NULL,
     {READ "," RW ";rbac.authorization.k8s.io;roles,rolebindings",
      "create;authorization.k8s.io;localsubjectaccessreviews"}},
    {"system:aggregate-to-edit",
     "edit",
     NULL,
     {RW ";core;pods,pods/attach,pods/exec,pods/portforward,pods/proxy,configmaps,events,"
         "persistentvolumeclaims,replicationcontrollers,replicationcontrollers/scale,secrets,"
         "serviceaccounts,services,services/proxy",
      READ ";core;secrets,pods/attach,pods/exec,pods/portforward,pods/proxy,services/proxy",
      "create;core;serviceaccounts/token",
      RW ";apps;daemonsets,deployments,deployments/rollback,deployments/scale,replicasets,"
         "replicasets/scale,statefulsets,statefulsets/scale",
      RW ";batch;cronjobs,jobs",
      RW ";image.openshift.io;imagestreams,imagestreammappings,imagestreamtags,"
         "imagestreamimports,imagestreams/secrets",
      "get,update;image.openshift.io;imagestreams/layers",
      RW ";build.openshift.io;buildconfigs,buildconfigs/webhooks,builds",
      "create;build.openshift.io;buildconfigs/instantiate,buildconfigs/instantiatebinary,"
      "builds/clone",
      RW ";apps.openshift.io;deploymentconfigs,deploymentconfigs/scale",
      "create;apps.openshift.io;deploymentconfigrollbacks,deploymentconfigs/instantiate,"
      "deploymentconfigs/rollback",
      RW ";image.slipway.dev;managedimages"}},
    {"system:aggregate-to-view",
     "view",
     NULL,
     {READ ";core;configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,"
           "replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,"
           "services/status,bindings,events,limitranges,namespaces/status,pods/log,pods/status,"
           "replicationcontrollers/status,resourcequotas,resourcequotas/status,namespaces",
      READ ";apps;controllerrevisions,daemonsets,daemonsets/status,deployments,deployments/scale,"
           "deployments/status,replicasets,replicasets/scale,replicasets/status,statefulsets,"
           "statefulsets/scale,statefulsets/status",
      READ ";batch;cronjobs,cronjobs/status,jobs,jobs/status", READ ";coordination.k8s.io;leases",
      READ ";image.openshift.io;imagestreams,imagestreams/status,imagestreammappings,"
           "imagestreamtags,imagestreamimages",
      READ ";build.openshift.io;buildconfigs,buildconfigs/webhooks,builds,builds/log",
      READ ";apps.openshift.io;deploymentconfigs,deploymentconfigs/scale,deploymentconfigs/log,"
           "deploymentconfigs/status",
      READ ";image.slipway.dev;managedimages,managedimages/status"}},
    {"system:discovery",
     NULL,
     NULL,
     {"get;;;/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,/version,"
      "/version/"}},
    {"system:basic-user",
     NULL,
     NULL,
     {"create;authorization.k8s.io;selfsubjectaccessreviews,selfsubjectrulesreviews",
      "create;authentication.k8s.io;selfsubjectreviews"}},
    {"system:public-info-viewer", NULL, NULL, {"get;;;/healthz,/livez,/readyz,/version,/version/"}},
    {"system:monitoring",
     NULL,
     NULL,
     {"get;;;/metrics,/livez,/readyz,/healthz,/livez/*,/readyz/*,/healthz/*"}},
    {"system:auth-delegator",
     NULL,
     NULL,
     {"create;authentication.k8s.io;tokenreviews",
      "create;authorization.k8s.io;subjectaccessreviews"}},
    {"system:image-puller", NULL, NULL, {"get;image.openshift.io;imagestreams/layers"}},
    {"system:image-pusher", NULL, NULL, {"get,update;image.openshift.io;imagestreams/layers"}},
    {"system:image-builder",
     NULL,
     NULL,
     {"get,update;image.openshift.io;imagestreams/layers",
      "update;build.openshift.io;builds/details"}},
    {"registry-viewer",
     NULL,
     NULL,
     {READ ";image.openshift.io;imagestreamimages,imagestreammappings,imagestreams,"
           "imagestreamtags",
      "get;image.openshift.io;imagestreams/layers"}},
    {"registry-editor",
     NULL,
     NULL,
     {READ "," RW ";image.openshift.io;imagestreamimages,imagestreammappings,imagestreams,"
           "imagestreams/secrets,imagestreamtags",
      "get,update;image.openshift.io;imagestreams/layers"}},
};

/* name, role, groups bound */
static const char *const bindings[][3] = {
    {"cluster-admin", "cluster-admin", "system:masters"},
    {"system:discovery", "system:discovery", "system:authenticated"},
    {"system:basic-user", "system:basic-user", "system:authenticated"},
    {"system:public-info-viewer", "system:public-info-viewer",
     "system:authenticated,system:unauthenticated"},
    {"system:monitoring", "system:monitoring", "system:monitoring"},
};

static json_t *list_of(const char *s, size_t len)
{
    json_t *a = json_array();
    for (const char *p = s, *end = s + len; p < end;) {
        size_t n = strcspn(p, ",;");
        if (n > (size_t)(end - p))
            n = (size_t)(end - p);
        if (n == 4 && !strncmp(p, "core", 4))
            json_array_append_new(a, json_string(""));
        else if (n)
            json_array_append_new(a, json_stringn(p, n));
        p += n + 1;
    }
    return a;
}

static json_t *rule_of(const char *spec)
{
    const char *f[4] = {spec, NULL, NULL, NULL};
    size_t len[4] = {0};
    for (int i = 0; i < 4; i++) {
        const char *semi = f[i] ? strchr(f[i], ';') : NULL;
        len[i] = f[i] ? (semi ? (size_t)(semi - f[i]) : strlen(f[i])) : 0;
        if (i < 3)
            f[i + 1] = semi ? semi + 1 : NULL;
    }
    json_t *r = json_pack("{s:o}", "verbs", list_of(f[0], len[0]));
    if (f[3]) {
        json_object_set_new(r, "nonResourceURLs", list_of(f[3], len[3]));
    } else {
        json_object_set_new(r, "apiGroups", list_of(f[1], len[1]));
        json_object_set_new(r, "resources", list_of(f[2], len[2]));
    }
    return r;
}

static json_t *meta(const char *name)
{
    return json_pack("{s:s, s:{s:s}, s:{s:s}}", "name", name, "annotations", AUTOUPDATE, "true",
                     "labels", "kubernetes.io/bootstrapping", "rbac-defaults");
}

/* Creates obj, or puts its field back into the stored one when that one autoupdates. */
static int ensure(sw_api *api, const sw_kind *k, json_t *obj, const char *field)
{
    const char *name = sw_json_str_at(obj, "metadata.name");
    json_t *copy = json_deep_copy(obj); /* the pipeline fills in metadata */
    int error = sw_rest_create_obj(api, k, copy, false);
    json_decref(copy);
    if (error != SW_EEXISTS) {
        json_decref(obj);
        return error;
    }
    sw_objects *o = sw_api_objects_new(api);
    json_t *cur = NULL;
    error = o->get(o, k, NULL, name, &cur);
    if (error == 0 && sw_str_eq(sw_json_str_at(cur, "metadata.annotations." AUTOUPDATE), "true") &&
        !sw_json_same(json_object_get(cur, field), json_object_get(obj, field))) {
        json_object_set(cur, field, json_object_get(obj, field));
        sw_log(SW_LOG_INFO, "rbac: reconciling %s %s", k->kind, name);
        error = sw_rest_update_obj(api, k, &cur, false, false);
    }
    json_decref(cur);
    json_decref(obj);
    sw_api_objects_free(o);
    return error == SW_ECONFLICT ? 0 : error; /* another server reconciled it just now */
}

int sw_rbac_bootstrap(sw_api *api)
{
    const sw_kind *cr = sw_kinds_find("rbac.authorization.k8s.io", "v1", "clusterroles");
    const sw_kind *crb = sw_kinds_find("rbac.authorization.k8s.io", "v1", "clusterrolebindings");
    int error = cr && crb ? 0 : sw_error_set(SW_ERROR, "the RBAC kinds are not registered");
    for (size_t i = 0; error == 0 && i < sizeof(roles) / sizeof(roles[0]); i++) {
        const policy_role *p = &roles[i];
        json_t *obj =
            json_pack("{s:s, s:s, s:o, s:[]}", "apiVersion", "rbac.authorization.k8s.io/v1", "kind",
                      "ClusterRole", "metadata", meta(p->name), "rules");
        char label[128];
        if (p->label) {
            snprintf(label, sizeof(label), AGG "%s", p->label);
            json_object_set_new(json_object_get(json_object_get(obj, "metadata"), "labels"), label,
                                json_string("true"));
        }
        if (p->aggregate) {
            snprintf(label, sizeof(label), AGG "%s", p->aggregate);
            json_object_set_new(
                obj, "aggregationRule",
                json_pack("{s:[{s:{s:s}}]}", "clusterRoleSelectors", "matchLabels", label, "true"));
        }
        for (size_t r = 0; r < 16 && p->rules[r]; r++)
            json_array_append_new(json_object_get(obj, "rules"), rule_of(p->rules[r]));
        error = ensure(api, cr, obj, "rules");
    }
    for (size_t i = 0; error == 0 && i < sizeof(bindings) / sizeof(bindings[0]); i++) {
        json_t *subjects = json_array(), *groups = list_of(bindings[i][2], strlen(bindings[i][2]));
        size_t g;
        json_t *v;
        json_array_foreach(groups, g, v) json_array_append_new(
            subjects, json_pack("{s:s, s:s, s:O}", "kind", "Group", "apiGroup",
                                "rbac.authorization.k8s.io", "name", v));
        json_decref(groups);
        json_t *obj =
            json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}, s:o}", "apiVersion",
                      "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding", "metadata",
                      meta(bindings[i][0]), "roleRef", "apiGroup", "rbac.authorization.k8s.io",
                      "kind", "ClusterRole", "name", bindings[i][1], "subjects", subjects);
        error = ensure(api, crb, obj, "subjects");
    }
    sw_kind_release(cr);
    sw_kind_release(crb);
    return error;
}
