/* discovery: /version, /api, /apis, /api/v1 and /apis/<g>/<v> (legacy discovery, which every
 * client understands), generated from the kind table. */
#include "apiserver/api.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

static const char *const verbs[] = {"create", "delete", "deletecollection", "get",
                                    "list",   "patch",  "update",           "watch"};

/* "/apis/<g>/<v>" (nothing after) into group and version. */
static bool split_gv(const char *p, char *group, size_t gn, char *version, size_t vn)
{
    if (!sw_str_prefix(p, "/apis/"))
        return false;
    p += 6;
    const char *slash = strchr(p, '/');
    if (!slash || slash == p || (size_t)(slash - p) >= gn || strchr(slash + 1, '/') ||
        !slash[1] || strlen(slash + 1) >= vn)
        return false;
    memcpy(group, p, (size_t)(slash - p));
    group[slash - p] = '\0';
    sw_strlcpy(version, slash + 1, vn);
    return true;
}

bool sw_discovery_matches(const char *path)
{
    char g[128], v[64];
    return !strcmp(path, "/version") || !strcmp(path, "/api") || !strcmp(path, "/apis") ||
           !strcmp(path, "/api/v1") || split_gv(path, g, sizeof(g), v, sizeof(v));
}

static json_t *str_array(const char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        if (s[i])
            json_array_append_new(a, json_string(s[i]));
    return a;
}

static json_t *resource_list(const char *group, const char *version)
{
    size_t n;
    const sw_kind *const *kinds = sw_kinds_all(&n);
    json_t *res = json_array();
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        if (strcmp(k->group, group) || strcmp(k->version, version))
            continue;
        size_t nv = 0;
        while (k->verbs && k->verbs[nv])
            nv++;
        json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", k->plural, "singularName",
                              k->singular, "namespaced", k->namespaced, "kind", k->kind, "verbs",
                              k->verbs ? str_array(k->verbs, nv) : str_array(verbs, 8));
        json_object_set_new(r, "shortNames", str_array(k->short_names, 4));
        if (k->categories[0])
            json_object_set_new(r, "categories", str_array(k->categories, 2));
        json_array_append_new(res, r);
        for (size_t j = 0; j < k->nsubresources; j++) {
            const sw_subresource *sr = &k->subresources[j];
            char sub[128];
            size_t nsv = 0;
            while (sr->verbs[nsv])
                nsv++;
            snprintf(sub, sizeof(sub), "%s/%s", k->plural, sr->name);
            json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", sub,
                                                 "singularName", "", "namespaced", k->namespaced,
                                                 "kind", sr->kind, "verbs",
                                                 str_array(sr->verbs, nsv)));
        }
        if (k->has_status) {
            char sub[128];
            static const char *const sv[] = {"get", "patch", "update"};
            snprintf(sub, sizeof(sub), "%s/status", k->plural);
            json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", sub,
                                                 "singularName", "", "namespaced", k->namespaced,
                                                 "kind", k->kind, "verbs", str_array(sv, 3)));
        }
    }
    if (json_array_size(res) == 0) {
        json_decref(res);
        return NULL;
    }
    char gv[128];
    snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", res);
}

static json_t *group_list(void)
{
    size_t n;
    const sw_kind *const *kinds = sw_kinds_all(&n);
    json_t *groups = json_array();
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        bool seen = !k->group[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(kinds[j]->group, k->group);
        if (seen)
            continue;
        char gv[128];
        snprintf(gv, sizeof(gv), "%s/%s", k->group, k->version);
        json_t *ver = json_pack("{s:s, s:s}", "groupVersion", gv, "version", k->version);
        json_array_append_new(groups, json_pack("{s:s, s:[O], s:o}", "name", k->group,
                                                "versions", ver, "preferredVersion", ver));
    }
    return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                     groups);
}

void sw_discovery_handle(sw_api *api, const sw_request *req, sw_response *resp)
{
    json_t *out = NULL;
    const char *p = req->path;
    char group[128], version[64];
    if (!strcmp(p, "/version")) {
        out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor",
                        "32", "gitVersion", "v1.32.0-slipway-" SW_VERSION, "gitCommit", "",
                        "gitTreeState", "clean", "buildDate", "", "goVersion", "none",
                        "compiler", "gcc", "platform", "linux/amd64");
    } else if (!strcmp(p, "/api")) {
        out = json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                        "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                        api->listen_addr);
    } else if (!strcmp(p, "/apis")) {
        out = group_list();
    } else if (!strcmp(p, "/api/v1")) {
        out = resource_list("", "v1");
    } else if (split_gv(p, group, sizeof(group), version, sizeof(version))) {
        out = resource_list(group, version);
    }
    if (!out) {
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource", NULL,
                          NULL);
        return;
    }
    sw_response_json(resp, 200, out);
    json_decref(out);
}
