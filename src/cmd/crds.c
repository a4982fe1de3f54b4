/* crds: `slipway crds` writes CustomResourceDefinition YAML for slipway's stored OpenShift-style
 * kinds (ImageStream, Image, BuildConfig, Build, DeploymentConfig, ManagedImage), so an
 * operator's envtest or a vanilla cluster can serve them: their full structural schemas (from
 * the same strict schemas slipway validates with), status subresources, names and printer
 * columns. Nothing here talks to a server. */
#include "cmd/cmd.h"

#include "kinds/kind.h"
#include "meta/schema.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/str.h"
#include "util/yaml.h"

#include <stdio.h>
#include <string.h>

static const char *const groups[] = {"image.openshift.io", "build.openshift.io",
                                     "apps.openshift.io", "image.slipway.dev", NULL};

/* The printer columns of each kind as JSONPaths (slipway's own columns are computed). */
static const struct {
    const char *kind, *name, *type, *path;
    int priority;
} columns[] = {
    {"ImageStream", "Image Repository", "string", ".status.dockerImageRepository", 0},
    {"ImageStream", "Public Repository", "string", ".status.publicDockerImageRepository", 1},
    {"Image", "Image Reference", "string", ".dockerImageReference", 0},
    {"BuildConfig", "Type", "string", ".spec.strategy.type", 0},
    {"BuildConfig", "From", "string", ".spec.source.type", 0},
    {"BuildConfig", "Latest", "integer", ".status.lastVersion", 0},
    {"Build", "Type", "string", ".spec.strategy.type", 0},
    {"Build", "From", "string", ".spec.source.type", 0},
    {"Build", "Status", "string", ".status.phase", 0},
    {"Build", "Started", "date", ".status.startTimestamp", 0},
    {"DeploymentConfig", "Revision", "integer", ".status.latestVersion", 0},
    {"DeploymentConfig", "Desired", "integer", ".spec.replicas", 0},
    {"DeploymentConfig", "Current", "integer", ".status.availableReplicas", 0},
    {"ManagedImage", "Image", "string", ".status.latestImage", 0},
    {"ManagedImage", "Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status", 0},
    {"ManagedImage", "Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason", 1},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: slipway crds [--group GROUP]...\n\n"
               "Writes CustomResourceDefinition YAML for slipway's stored OpenShift-style kinds\n"
               "(ImageStream, Image, BuildConfig, Build, DeploymentConfig, ManagedImage), with\n"
               "their structural schemas, status subresources and printer columns, so envtest or\n"
               "a cluster without OpenShift can serve them: slipway crds | kubectl apply -f -\n\n"
               "Options:\n"
               "  --group GROUP  only the kinds of GROUP (repeatable): image.openshift.io,\n"
               "                 build.openshift.io, apps.openshift.io, image.slipway.dev\n"
               "  -h, --help     this help\n");
}

/* Structural: a field that takes anything has no type, only preserve-unknown-fields. */
static void structural(json_t *s)
{
    if (!json_is_object(s))
        return;
    json_object_del(s, "x-kubernetes-group-version-kind");
    if (json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields")) &&
        !json_object_get(s, "properties"))
        json_object_del(s, "type");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(s, "properties"), k, v) structural(v);
    structural(json_object_get(s, "items"));
    structural(json_object_get(s, "additionalProperties"));
}

static json_t *crd_of(const sw_kind *k)
{
    json_t *schema = sw_schema_openapi(sw_kind_schema(k), k->group, k->version, k->kind);
    sw_schema_describe(schema, k->docs);
    structural(schema);
    json_t *props = json_object_get(schema, "properties");
    /* metadata is ObjectMeta, which a CRD's schema leaves implicit */
    json_object_set_new(props, "metadata", json_pack("{s:s}", "type", "object"));
    char name[400], list_kind[128];
    snprintf(name, sizeof(name), "%s.%s", k->plural, k->group);
    snprintf(list_kind, sizeof(list_kind), "%sList", k->kind);
    json_t *names = json_pack("{s:s, s:s, s:s, s:s}", "plural", k->plural, "singular", k->singular,
                              "kind", k->kind, "listKind", list_kind);
    json_t *shorts = json_array(), *cats = json_array();
    for (size_t i = 0; i < SW_KIND_MAX_NAMES && k->short_names[i]; i++)
        json_array_append_new(shorts, json_string(k->short_names[i]));
    for (size_t i = 0; i < SW_KIND_MAX_NAMES && k->categories[i]; i++)
        json_array_append_new(cats, json_string(k->categories[i]));
    if (json_array_size(shorts))
        json_object_set(names, "shortNames", shorts);
    if (json_array_size(cats))
        json_object_set(names, "categories", cats);
    json_decref(shorts);
    json_decref(cats);
    json_t *cols = json_array();
    for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
        if (!sw_str_eq(columns[i].kind, k->kind))
            continue;
        json_t *c = json_pack("{s:s, s:s, s:s}", "name", columns[i].name, "type", columns[i].type,
                              "jsonPath", columns[i].path);
        if (columns[i].priority)
            json_object_set_new(c, "priority", json_integer(columns[i].priority));
        json_array_append_new(cols, c);
    }
    json_array_append_new(cols, json_pack("{s:s, s:s, s:s}", "name", "Age", "type", "date",
                                          "jsonPath", ".metadata.creationTimestamp"));
    json_t *version =
        json_pack("{s:s, s:b, s:b, s:{s:o}, s:o}", "name", k->version, "served", 1, "storage", 1,
                  "schema", "openAPIV3Schema", schema, "additionalPrinterColumns", cols);
    if (k->has_status)
        json_object_set_new(version, "subresources", json_pack("{s:{}}", "status"));
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s, s:o, s:[o]}}", "apiVersion",
                     "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
                     "name", name, "labels", "app.kubernetes.io/managed-by", "slipway", "spec",
                     "group", k->group, "scope", k->namespaced ? "Namespaced" : "Cluster", "names",
                     names, "versions", version);
}

int sw_cmd_crds(int argc, char **argv)
{
    const char *want[8];
    size_t nwant = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *g = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--group") && i + 1 < argc)
            g = argv[++i];
        else if (sw_str_prefix(a, "--group="))
            g = a + strlen("--group=");
        if (!g) {
            fprintf(stderr, "error: unknown argument \"%.100s\"\nSee 'slipway crds --help'.\n", a);
            return 2;
        }
        if (!sw_str_one_of(g, groups)) {
            fprintf(stderr,
                    "error: --group must be one of image.openshift.io, build.openshift.io, "
                    "apps.openshift.io, image.slipway.dev (got \"%.100s\")\n",
                    g);
            return 2;
        }
        if (nwant < sizeof(want) / sizeof(want[0]))
            want[nwant++] = g;
    }
    size_t n;
    const sw_kind **kinds = sw_kinds_list(&n);
    sw_buf out = SW_BUF_INIT(64 << 20);
    for (size_t i = 0; i < n; i++) {
        const sw_kind *k = kinds[i];
        bool picked = nwant == 0 && sw_str_one_of(k->group, groups);
        for (size_t j = 0; j < nwant; j++)
            picked = picked || sw_str_eq(k->group, want[j]);
        if (!picked || k->virt || !sw_kind_schema(k))
            continue;
        json_t *crd = crd_of(k);
        sw_yaml_emit(crd, &out);
        json_decref(crd);
    }
    sw_kinds_list_free(kinds, n);
    int rc = sw_buf_error(&out) < 0 ? 1 : 0;
    if (rc == 0)
        fwrite(sw_buf_cstr(&out), 1, out.len, stdout);
    else
        fprintf(stderr, "error: the manifests do not fit in memory\n");
    sw_buf_dispose(&out);
    return rc;
}
