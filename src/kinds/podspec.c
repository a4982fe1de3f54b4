/* podspec: PodSpec defaults and validation (see podspec.h). */
#include "kinds/podspec.h"

#include "kinds/kind.h"
#include "meta/names.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

/* Kubernetes' rule: Always when the image has no tag or the tag is latest (a digest pins). */
static const char *pull_policy(const char *image)
{
    if (!image || strchr(image, '@'))
        return "IfNotPresent";
    const char *slash = strrchr(image, '/');
    const char *colon = strrchr(slash ? slash : image, ':');
    if (!colon || !strcmp(colon + 1, "latest"))
        return "Always";
    return "IfNotPresent";
}

static void default_containers(json_t *list)
{
    size_t i, j;
    json_t *c, *p;
    json_array_foreach(list, i, c)
    {
        if (!json_is_object(c))
            continue;
        sw_json_default(c, "terminationMessagePath", json_string("/dev/termination-log"));
        sw_json_default(c, "terminationMessagePolicy", json_string("File"));
        sw_json_default(c, "imagePullPolicy", json_string(pull_policy(sw_json_str_at(c, "image"))));
        json_array_foreach(json_object_get(c, "ports"), j, p)
        {
            if (json_is_object(p))
                sw_json_default(p, "protocol", json_string("TCP"));
        }
    }
}

void sw_podspec_default(json_t *spec, const char *dflt_restart)
{
    if (!json_is_object(spec))
        return;
    sw_json_default(spec, "restartPolicy", json_string(dflt_restart ? dflt_restart : "Always"));
    sw_json_default(spec, "terminationGracePeriodSeconds", json_integer(30));
    sw_json_default(spec, "dnsPolicy", json_string("ClusterFirst"));
    sw_json_default(spec, "schedulerName", json_string("default-scheduler"));
    sw_json_default(spec, "securityContext", json_object());
    default_containers(json_object_get(spec, "containers"));
    default_containers(json_object_get(spec, "initContainers"));
}

static int check_containers(const json_t *spec, const char *field, const char *key, json_t *seen)
{
    static const char *const protocols[] = {"TCP", "UDP", "SCTP", NULL};
    size_t i, j;
    json_t *c, *p;
    json_array_foreach(json_object_get(spec, key), i, c)
    {
        char path[300];
        snprintf(path, sizeof(path), "%s.%s[%zu]", field, key, i);
        const char *name = sw_json_str_at(c, "name");
        const char *image = sw_json_str_at(c, "image");
        if (!name || !*name)
            return sw_error_set(SW_EINVALID, "%s.name: Required value", path);
        if (sw_names_check_label(name) < 0)
            return sw_names_invalid(SW_EINVALID, path, name, sw_error_msg());
        if (json_object_get(seen, name))
            return sw_error_set(SW_EINVALID, "%s.name: Duplicate value: \"%s\"", path, name);
        json_object_set_new(seen, name, json_true());
        if (!image || !*image)
            return sw_error_set(SW_EINVALID, "%s.image: Required value", path);
        if (strlen(image) != strcspn(image, " \t\r\n"))
            return sw_error_set(SW_EINVALID,
                                "%s.image: Invalid value: \"%.200s\": must not have leading or "
                                "trailing whitespace",
                                path, image);
        json_array_foreach(json_object_get(c, "ports"), j, p)
        {
            int64_t port = 0;
            if (!sw_json_int_at(p, "containerPort", &port) || port < 1 || port > 65535)
                return sw_error_set(SW_EINVALID,
                                    "%s.ports[%zu].containerPort: Invalid value: %lld: must be "
                                    "between 1 and 65535, inclusive",
                                    path, j, (long long)port);
            char pf[400];
            snprintf(pf, sizeof(pf), "%s.ports[%zu]", path, j);
            int error = sw_kind_check_enum(p, pf, "protocol", protocols, false);
            if (error < 0)
                return error;
        }
    }
    return 0;
}

int sw_podspec_validate(const json_t *spec, const char *field, const char *const *allowed_restart)
{
    static const char *const restarts[] = {"Always", "OnFailure", "Never", NULL};
    if (!json_is_object(spec))
        return sw_error_set(SW_EINVALID, "%s: Required value", field);
    if (!json_array_size(json_object_get(spec, "containers")))
        return sw_error_set(SW_EINVALID, "%s.containers: Required value", field);
    json_t *seen = json_object();
    int error = check_containers(spec, field, "containers", seen);
    if (error == 0)
        error = check_containers(spec, field, "initContainers", seen);
    json_decref(seen);
    if (error == 0)
        error = sw_kind_check_enum(spec, field, "restartPolicy",
                                   allowed_restart ? allowed_restart : restarts, false);
    int64_t g;
    if (error == 0 && sw_json_int_at(spec, "terminationGracePeriodSeconds", &g) && g < 0)
        error = sw_error_set(SW_EINVALID,
                             "%s.terminationGracePeriodSeconds: Invalid value: %lld: must be "
                             "greater than or equal to 0",
                             field, (long long)g);
    return error;
}

int sw_podtemplate_validate(const json_t *tmpl, const char *field,
                            const char *const *allowed_restart)
{
    char path[300];
    const json_t *meta = json_object_get(tmpl, "metadata");
    if (meta && !json_is_object(meta) && !json_is_null(meta))
        return sw_error_set(SW_EINVALID, "%s.metadata: Invalid value: must be an object", field);
    if (json_is_object(meta) && sw_names_check_meta(meta) < 0) {
        char msg[600];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        return sw_error_set(SW_EINVALID, "%s.%s", field, msg);
    }
    snprintf(path, sizeof(path), "%s.spec", field);
    return sw_podspec_validate(json_object_get(tmpl, "spec"), path, allowed_restart);
}

int sw_podspec_check_selector(const json_t *obj)
{
    const json_t *sel = sw_json_at(obj, "spec.selector");
    const json_t *ml = json_object_get(sel, "matchLabels");
    if (!json_object_size(ml) && !json_array_size(json_object_get(sel, "matchExpressions")))
        return sw_error_set(SW_EINVALID, "spec.selector: Required value");
    const json_t *labels = sw_json_at(obj, "spec.template.metadata.labels");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ml, k, v)
    {
        if (!json_is_string(v) || !sw_json_same(json_object_get(labels, k), v))
            return sw_error_set(SW_EINVALID,
                                "spec.template.metadata.labels: Invalid value: "
                                "map[string]string{...}: `selector` does not match template "
                                "`labels`");
    }
    return 0;
}

int sw_podspec_check_map_selector(const json_t *obj)
{
    const json_t *sel = sw_json_at(obj, "spec.selector");
    const json_t *labels = sw_json_at(obj, "spec.template.metadata.labels");
    if (!json_object_size(sel))
        return sw_error_set(SW_EINVALID, "spec.selector: Required value");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sel, k, v)
    {
        if (!sw_json_same(json_object_get(labels, k), v))
            return sw_error_set(SW_EINVALID,
                                "spec.template.metadata.labels: Invalid value: "
                                "map[string]string{...}: `selector` does not match template "
                                "`labels`");
    }
    return 0;
}

const char *sw_podspec_path(const char *kind)
{
    if (sw_str_eq(kind, "Pod"))
        return "spec";
    if (sw_str_eq(kind, "CronJob"))
        return "spec.jobTemplate.spec.template.spec";
    if (sw_str_eq(kind, "Deployment") || sw_str_eq(kind, "StatefulSet") ||
        sw_str_eq(kind, "DaemonSet") || sw_str_eq(kind, "ReplicaSet") || sw_str_eq(kind, "Job") ||
        sw_str_eq(kind, "ReplicationController") || sw_str_eq(kind, "DeploymentConfig"))
        return "spec.template.spec";
    return NULL;
}
