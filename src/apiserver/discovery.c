/* discovery: /version, /api, /apis, /api/v1, /apis/<g> and /apis/<g>/<v> (legacy discovery,
 * which every client understands), each also with a trailing slash (the Python client's typed
 * calls add one), generated from the kind table. */
#include "apiserver/api.h"
#include "kinds/crd.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
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
    if (!slash || slash == p || (size_t)(slash - p) >= gn || strchr(slash + 1, '/') || !slash[1] ||
        strlen(slash + 1) >= vn)
        return false;
    memcpy(group, p, (size_t)(slash - p));
    group[slash - p] = '\0';
    sw_strlcpy(version, slash + 1, vn);
    return true;
}

/* "/apis/<g>" (nothing after) into group. */
static bool split_group(const char *p, char *group, size_t gn)
{
    if (!sw_str_prefix(p, "/apis/") || !p[6] || strchr(p + 6, '/') || strlen(p + 6) >= gn)
        return false;
    sw_strlcpy(group, p + 6, gn);
    return true;
}

/* path without one trailing slash (but "/") into out; false when it does not fit. */
static bool trimmed(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    if (len > 1 && path[len - 1] == '/')
        len--;
    if (len >= n)
        return false;
    memcpy(out, path, len);
    out[len] = '\0';
    return true;
}

bool sw_discovery_matches(const char *path)
{
    char g[256], v[64], p[512];
    if (!trimmed(path, p, sizeof(p)))
        return false;
    return !strcmp(p, "/version") || !strcmp(p, "/api") || !strcmp(p, "/apis") ||
           !strcmp(p, "/api/v1") || split_gv(p, g, sizeof(g), v, sizeof(v)) ||
           split_group(p, g, sizeof(g));
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
    const sw_kind **kinds = sw_kinds_list(&n);
    json_t *res = json_array();
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        if (strcmp(k->group, group) || strcmp(k->version, version))
            continue;
        const char *const *kv = k->dynamic ? sw_cr_verbs(k) : k->verbs;
        size_t nv = 0;
        while (kv && kv[nv])
            nv++;
        json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", k->plural, "singularName",
                              k->singular, "namespaced", k->namespaced, "kind", k->kind, "verbs",
                              kv ? str_array(kv, nv) : str_array(verbs, 8));
        json_object_set_new(r, "shortNames", str_array(k->short_names, SW_KIND_MAX_NAMES));
        if (k->categories[0])
            json_object_set_new(r, "categories", str_array(k->categories, SW_KIND_MAX_NAMES));
        json_array_append_new(res, r);
        for (size_t j = 0; j < k->nsubresources; j++) {
            const sw_subresource *sr = &k->subresources[j];
            char sub[128];
            size_t nsv = 0;
            while (sr->verbs[nsv])
                nsv++;
            snprintf(sub, sizeof(sub), "%s/%s", k->plural, sr->name);
            json_array_append_new(res,
                                  json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", sub,
                                            "singularName", "", "namespaced", k->namespaced, "kind",
                                            sr->kind, "verbs", str_array(sr->verbs, nsv)));
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
    sw_kinds_list_free(kinds, n);
    if (json_array_size(res) == 0) {
        json_decref(res);
        return NULL;
    }
    char gv[320];
    snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", res);
}

/* Kubernetes' version priority: GA before beta before alpha, then others; higher numbers
 * first within each (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo). -1 when a comes first. */
static int version_order(const char *a, const char *b)
{
    long na = 0, nb = 0, ma = 0, mb = 0;
    int ra = 3, rb = 3; /* 0 GA, 1 beta, 2 alpha, 3 other */
    char sa[16] = "", sb[16] = "";
    const char *v[2] = {a, b};
    long *n[2] = {&na, &nb}, *m[2] = {&ma, &mb};
    int *r[2] = {&ra, &rb};
    char *suf[2] = {sa, sb};
    for (int i = 0; i < 2; i++) {
        const char *p = v[i];
        if (p[0] != 'v' || p[1] < '1' || p[1] > '9')
            continue;
        char *end;
        *n[i] = strtol(p + 1, &end, 10);
        if (!*end) {
            *r[i] = 0;
        } else if (!strncmp(end, "beta", 4) || !strncmp(end, "alpha", 5)) {
            int beta = end[0] == 'b';
            char *end2;
            const char *q = end + (beta ? 4 : 5);
            if (*q >= '1' && *q <= '9') {
                *m[i] = strtol(q, &end2, 10);
                if (!*end2) {
                    *r[i] = beta ? 1 : 2;
                    snprintf(suf[i], 16, "%s", beta ? "beta" : "alpha");
                }
            }
        }
    }
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra == 3)
        return strcmp(a, b);
    if (na != nb)
        return na > nb ? -1 : 1;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    return 0;
}

/* The APIGroup of group: every version some kind serves, the preferred one first by
 * Kubernetes' priority; NULL when no kind is in the group. */
static json_t *api_group(const sw_kind **kinds, size_t n, const char *group)
{
    const char *vs[64];
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kinds[i]->group, group))
            continue;
        bool seen = false;
        for (size_t j = 0; j < nv && !seen; j++)
            seen = !strcmp(vs[j], kinds[i]->version);
        if (!seen && nv < sizeof(vs) / sizeof(vs[0]))
            vs[nv++] = kinds[i]->version;
    }
    if (!nv)
        return NULL;
    for (size_t a = 1; a < nv; a++) /* insertion sort: a group has a few versions */
        for (size_t b = a; b > 0 && version_order(vs[b - 1], vs[b]) > 0; b--) {
            const char *t = vs[b];
            vs[b] = vs[b - 1];
            vs[b - 1] = t;
        }
    json_t *versions = json_array();
    for (size_t i = 0; i < nv; i++) {
        char gv[320];
        snprintf(gv, sizeof(gv), "%s/%s", group, vs[i]);
        json_array_append_new(versions,
                              json_pack("{s:s, s:s}", "groupVersion", gv, "version", vs[i]));
    }
    return json_pack("{s:s, s:o, s:O}", "name", group, "versions", versions, "preferredVersion",
                     json_array_get(versions, 0));
}

static json_t *group_list(void)
{
    size_t n;
    const sw_kind **kinds = sw_kinds_list(&n);
    json_t *groups = json_array();
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        bool seen = !k->group[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(kinds[j]->group, k->group);
        if (!seen)
            json_array_append_new(groups, api_group(kinds, n, k->group));
    }
    sw_kinds_list_free(kinds, n);
    return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                     groups);
}

void sw_discovery_handle(sw_api *api, const sw_request *req, sw_response *resp)
{
    json_t *out = NULL;
    char p[512], group[256], version[64];
    if (!trimmed(req->path, p, sizeof(p)))
        p[0] = '\0';
    if (!strcmp(p, "/version")) {
        out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor",
                        "32", "gitVersion", "v1.32.0-slipway-" SW_VERSION, "gitCommit", "",
                        "gitTreeState", "clean", "buildDate", "", "goVersion", "none", "compiler",
                        "gcc", "platform", "linux/amd64");
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
    } else if (split_group(p, group, sizeof(group)) && group[0]) {
        size_t n;
        const sw_kind **kinds = sw_kinds_list(&n);
        if ((out = api_group(kinds, n, group))) {
            json_object_set_new(out, "kind", json_string("APIGroup"));
            json_object_set_new(out, "apiVersion", json_string("v1"));
        }
        sw_kinds_list_free(kinds, n);
    }
    if (!out) {
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource",
                          NULL, NULL);
        return;
    }
    sw_response_json(resp, 200, out);
    json_decref(out);
}
