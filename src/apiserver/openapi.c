/* openapi: the minimal OpenAPI v3 that kubectl needs to validate on the server side
 * (k8s-api-compat.md §1.5): an index of group-versions, and per group-version a document whose
 * PATCH operations carry the GVK and the fieldValidation parameter, plus component schemas
 * generated from each kind's strict schema, or a CRD's own (for kubectl explain). v2 is answered
 * 404. */
#include "apiserver/api.h"

#include "kinds/crd.h"
#include "meta/schema.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define OPENAPI_HASH "slipway-" SW_VERSION

bool sw_openapi_matches(const char *path)
{
    return sw_str_prefix(path, "/openapi/");
}

static json_t *index_doc(void)
{
    size_t n;
    const sw_kind **kinds = sw_kinds_list(&n);
    json_t *paths = json_object();
    for (size_t i = 0; i < n; i++) {
        char key[320], url[420];
        if (kinds[i]->group[0])
            snprintf(key, sizeof(key), "apis/%s/%s", kinds[i]->group, kinds[i]->version);
        else
            snprintf(key, sizeof(key), "api/%s", kinds[i]->version);
        snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", key, OPENAPI_HASH);
        json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
    }
    sw_kinds_list_free(kinds, n);
    return json_pack("{s:o}", "paths", paths);
}

/* The patch media types the kind accepts (no strategic merge patch for custom resources). */
static json_t *patch_body(const sw_kind *k)
{
    json_t *content = json_object();
    if (!k->dynamic)
        json_object_set_new(content, "application/strategic-merge-patch+json", json_object());
    json_object_set_new(content, "application/merge-patch+json", json_object());
    json_object_set_new(content, "application/json-patch+json", json_object());
    json_object_set_new(content, "application/apply-patch+yaml", json_object());
    return json_pack("{s:o}", "content", content);
}

/* A schema's name: the group reversed, as kube-apiserver names them ("com.example.stable.v1.
 * CronTab"); the core group is "core". */
static void schema_name(const sw_kind *k, char *out, size_t n)
{
    sw_buf b = SW_BUF_INIT(400);
    const char *g = k->group;
    if (!g[0])
        sw_buf_puts(&b, "core");
    for (const char *end = g + strlen(g); end > g;) {
        const char *dot = end;
        while (dot > g && dot[-1] != '.')
            dot--;
        sw_buf_printf(&b, "%s%.*s", b.len ? "." : "", (int)(end - dot), dot);
        end = dot > g ? dot - 1 : g;
    }
    snprintf(out, n, "%s.%s.%s", sw_buf_cstr(&b), k->version, k->kind);
    sw_buf_dispose(&b);
}

static json_t *operation(const sw_kind *k)
{
    return json_pack("{s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:{s:s}}], s:{s:{s:s}}}",
                     "x-kubernetes-group-version-kind", "group", k->group, "version", k->version,
                     "kind", k->kind, "parameters", "name", "fieldValidation", "in", "query",
                     "schema", "type", "string", "responses", "200", "description", "OK");
}

static json_t *gv_doc(const char *group, const char *version)
{
    size_t n;
    const sw_kind **kinds = sw_kinds_list(&n);
    json_t *paths = json_object(), *schemas = json_object();
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        if (strcmp(k->group, group) || strcmp(k->version, version))
            continue;
        char path[480], base[320], sname[400];
        if (k->group[0])
            snprintf(base, sizeof(base), "/apis/%s/%s", k->group, k->version);
        else
            snprintf(base, sizeof(base), "/api/%s", k->version);
        snprintf(path, sizeof(path), "%s%s/%s/{name}", base,
                 k->namespaced ? "/namespaces/{namespace}" : "", k->plural);
        json_t *patch = operation(k);
        json_object_set_new(patch, "requestBody", patch_body(k));
        json_object_set_new(
            paths, path,
            json_pack("{s:o, s:o, s:o}", "get", operation(k), "put", operation(k), "patch", patch));
        schema_name(k, sname, sizeof(sname));
        json_t *schema = k->dynamic
                             ? sw_cr_openapi(k)
                             : sw_schema_openapi(sw_kind_schema(k), k->group, k->version, k->kind);
        sw_schema_describe(schema, k->docs);
        json_object_set_new(schemas, sname, schema);
    }
    sw_kinds_list_free(kinds, n);
    if (json_object_size(paths) == 0) {
        json_decref(paths);
        json_decref(schemas);
        return NULL;
    }
    return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info", "title",
                     "slipway", "version", SW_VERSION, "paths", paths, "components", "schemas",
                     schemas);
}

void sw_openapi_handle(sw_api *api, const sw_request *req, sw_response *resp)
{
    const char *p = req->path;
    json_t *doc = NULL;
    char group[128] = "", version[64] = "";
    if (!strcmp(p, "/openapi/v3") || !strcmp(p, "/openapi/v3/")) {
        doc = index_doc();
    } else if (sw_str_prefix(p, "/openapi/v3/api/")) {
        sw_strlcpy(version, p + strlen("/openapi/v3/api/"), sizeof(version));
        doc = gv_doc("", version);
    } else if (sw_str_prefix(p, "/openapi/v3/apis/")) {
        const char *g = p + strlen("/openapi/v3/apis/");
        const char *slash = strchr(g, '/');
        if (slash && (size_t)(slash - g) < sizeof(group)) {
            memcpy(group, g, (size_t)(slash - g));
            group[slash - g] = '\0';
            sw_strlcpy(version, slash + 1, sizeof(version));
            doc = gv_doc(group, version);
        }
    }
    if (!doc) {
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource",
                          NULL, NULL);
        return;
    }
    sw_response_json(resp, 200, doc);
    json_decref(doc);
}
