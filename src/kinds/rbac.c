/* rbac: rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding
 * (stored; apiserver/authz.c decides with them), and the review kinds of authentication.k8s.io
 * and authorization.k8s.io (SelfSubjectReview, TokenReview, SelfSubjectAccessReview,
 * SelfSubjectRulesReview), which are create-only and answered by apiserver/review.c: they need
 * the request's user, which no kind strategy sees. */
#include "kinds/kind.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <string.h>

#define RBAC_GROUP "rbac.authorization.k8s.io"
#define RULES_SCHEMA                                                                               \
    "[{\"verbs\":[\"string\"],\"apiGroups\":[\"string\"],\"resources\":[\"string\"],"              \
    "\"resourceNames\":[\"string\"],\"nonResourceURLs\":[\"string\"]}]"
#define SUBJECTS_SCHEMA                                                                            \
    "[{\"kind\":\"string\",\"apiGroup\":\"string\",\"name\":\"string\",\"namespace\":\"string\"}]"
#define ROLEREF_SCHEMA "{\"apiGroup\":\"string\",\"kind\":\"string\",\"name\":\"string\"}"

/* Every rule names verbs, and either resources (with apiGroups) or non-resource URLs; a Role's
 * rules are namespaced, so they cannot name URLs. */
static int check_rules(const json_t *obj, bool cluster)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(obj, "rules"), i, r)
    {
        bool urls = json_array_size(json_object_get(r, "nonResourceURLs")) > 0;
        bool res = json_array_size(json_object_get(r, "resources")) > 0;
        if (!json_array_size(json_object_get(r, "verbs")))
            return sw_error_set(SW_EINVALID,
                                "rules[%zu].verbs: Required value: verbs must contain "
                                "at least one value",
                                i);
        if (urls && !cluster)
            return sw_error_set(SW_EINVALID,
                                "rules[%zu].nonResourceURLs: Invalid value: namespaced rules "
                                "cannot apply to non-resource URLs",
                                i);
        if (urls && res)
            return sw_error_set(SW_EINVALID,
                                "rules[%zu].nonResourceURLs: Invalid value: rules cannot apply to "
                                "both regular resources and non-resource URLs",
                                i);
        if (!urls && !res)
            return sw_error_set(SW_EINVALID,
                                "rules[%zu].resources: Required value: resource "
                                "rules must supply at least one resource",
                                i);
        if (res && !json_array_size(json_object_get(r, "apiGroups")))
            return sw_error_set(SW_EINVALID,
                                "rules[%zu].apiGroups: Required value: resource "
                                "rules must supply at least one api group",
                                i);
    }
    return 0;
}

static int role_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    (void)ctx, (void)old;
    return check_rules(obj, false);
}

static int clusterrole_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    (void)ctx, (void)old;
    return check_rules(obj, true);
}

static int check_binding(const json_t *obj, const json_t *old, bool cluster)
{
    static const char *const cluster_kinds[] = {"ClusterRole", NULL};
    static const char *const role_kinds[] = {"Role", "ClusterRole", NULL};
    static const char *const subject_kinds[] = {"User", "Group", "ServiceAccount", NULL};
    const json_t *ref = json_object_get(obj, "roleRef");
    if (!json_is_object(ref))
        return sw_error_set(SW_EINVALID, "roleRef: Required value");
    if (!sw_str_eq(sw_json_str_at(ref, "apiGroup"), RBAC_GROUP))
        return sw_error_set(SW_EINVALID,
                            "roleRef.apiGroup: Unsupported value: \"%.64s\": "
                            "supported values: \"" RBAC_GROUP "\"",
                            sw_json_str_at(ref, "apiGroup") ?: "");
    int error =
        sw_kind_check_enum(obj, NULL, "roleRef.kind", cluster ? cluster_kinds : role_kinds, true);
    if (error < 0)
        return error;
    const char *name = sw_json_str_at(ref, "name");
    if (!name || !*name)
        return sw_error_set(SW_EINVALID, "roleRef.name: Required value");
    if (old && !sw_json_same(ref, json_object_get(old, "roleRef")))
        return sw_error_set(SW_EINVALID, "roleRef: Invalid value: cannot change roleRef");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(obj, "subjects"), i, s)
    {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "subjects[%zu]", i);
        if ((error = sw_kind_check_enum(s, prefix, "kind", subject_kinds, true)) < 0)
            return error;
        const char *kind = sw_json_str_at(s, "kind"), *group = sw_json_str_at(s, "apiGroup");
        const char *sname = sw_json_str_at(s, "name");
        if (!sname || !*sname)
            return sw_error_set(SW_EINVALID, "%s.name: Required value", prefix);
        bool sa = !strcmp(kind, "ServiceAccount");
        if (sa && group && *group)
            return sw_error_set(SW_EINVALID,
                                "%s.apiGroup: Unsupported value: \"%.64s\": "
                                "supported values: \"\"",
                                prefix, group);
        if (!sa && !sw_str_eq(group, RBAC_GROUP))
            return sw_error_set(SW_EINVALID,
                                "%s.apiGroup: Unsupported value: \"%.64s\": "
                                "supported values: \"" RBAC_GROUP "\"",
                                prefix, group ? group : "");
        const char *sns = sw_json_str_at(s, "namespace");
        if (sa && cluster && (!sns || !*sns))
            return sw_error_set(SW_EINVALID, "%s.namespace: Required value", prefix);
    }
    return 0;
}

static int binding_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    (void)ctx;
    return check_binding(obj, old, false);
}

static int clusterbinding_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    (void)ctx;
    return check_binding(obj, old, true);
}

static void binding_role(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%s/%s", sw_json_str_at(obj, "roleRef.kind") ?: "",
                  sw_json_str_at(obj, "roleRef.name") ?: "");
}

static const sw_column binding_columns[] = {
    {"Role", "string", "The role the binding grants", 0, binding_role, NULL, NULL},
};

const sw_kind sw_kind_role = {
    .group = RBAC_GROUP,
    .version = "v1",
    .kind = "Role",
    .plural = "roles",
    .singular = "role",
    .namespaced = true,
    .name_rule = SW_NAME_PATH_SEGMENT,
    .schema_text = "{\"rules\":" RULES_SCHEMA "}",
    .validate = role_validate,
};

const sw_kind sw_kind_clusterrole = {
    .group = RBAC_GROUP,
    .version = "v1",
    .kind = "ClusterRole",
    .plural = "clusterroles",
    .singular = "clusterrole",
    .name_rule = SW_NAME_PATH_SEGMENT,
    .schema_text = "{\"rules\":" RULES_SCHEMA ",\"aggregationRule\":{\"clusterRoleSelectors\":"
                   "[{\"matchLabels\":\"map\",\"matchExpressions\":[\"any\"]}]}}",
    .validate = clusterrole_validate,
};

const sw_kind sw_kind_rolebinding = {
    .group = RBAC_GROUP,
    .version = "v1",
    .kind = "RoleBinding",
    .plural = "rolebindings",
    .singular = "rolebinding",
    .namespaced = true,
    .name_rule = SW_NAME_PATH_SEGMENT,
    .schema_text = "{\"roleRef\":" ROLEREF_SCHEMA ",\"subjects\":" SUBJECTS_SCHEMA "}",
    .validate = binding_validate,
    .columns = binding_columns,
    .ncolumns = 1,
};

const sw_kind sw_kind_clusterrolebinding = {
    .group = RBAC_GROUP,
    .version = "v1",
    .kind = "ClusterRoleBinding",
    .plural = "clusterrolebindings",
    .singular = "clusterrolebinding",
    .name_rule = SW_NAME_PATH_SEGMENT,
    .schema_text = "{\"roleRef\":" ROLEREF_SCHEMA ",\"subjects\":" SUBJECTS_SCHEMA "}",
    .validate = clusterbinding_validate,
    .columns = binding_columns,
    .ncolumns = 1,
};

/* ---- reviews: create-only, answered by apiserver/review.c ---- */

static const sw_virtual_ops review_ops = {0};
static const char *const review_verbs[] = {"create", NULL};

#define ATTRS_SCHEMA                                                                               \
    "{\"namespace\":\"string\",\"verb\":\"string\",\"group\":\"string\",\"version\":\"string\","   \
    "\"resource\":\"string\",\"subresource\":\"string\",\"name\":\"string\","                      \
    "\"fieldSelector\":\"any\",\"labelSelector\":\"any\"}"

const sw_kind sw_kind_selfsubjectreview = {
    .group = "authentication.k8s.io",
    .version = "v1",
    .kind = "SelfSubjectReview",
    .plural = "selfsubjectreviews",
    .singular = "selfsubjectreview",
    .schema_text = "{\"status\":\"any\"}",
    .virt = &review_ops,
    .verbs = review_verbs,
};

const sw_kind sw_kind_tokenreview = {
    .group = "authentication.k8s.io",
    .version = "v1",
    .kind = "TokenReview",
    .plural = "tokenreviews",
    .singular = "tokenreview",
    .schema_text =
        "{\"spec\":{\"token\":\"string\",\"audiences\":[\"string\"]},\"status\":\"any\"}",
    .virt = &review_ops,
    .verbs = review_verbs,
};

const sw_kind sw_kind_selfsubjectaccessreview = {
    .group = "authorization.k8s.io",
    .version = "v1",
    .kind = "SelfSubjectAccessReview",
    .plural = "selfsubjectaccessreviews",
    .singular = "selfsubjectaccessreview",
    .schema_text = "{\"spec\":{\"resourceAttributes\":" ATTRS_SCHEMA ",\"nonResourceAttributes\":"
                   "{\"path\":\"string\",\"verb\":\"string\"}},\"status\":\"any\"}",
    .virt = &review_ops,
    .verbs = review_verbs,
};

const sw_kind sw_kind_selfsubjectrulesreview = {
    .group = "authorization.k8s.io",
    .version = "v1",
    .kind = "SelfSubjectRulesReview",
    .plural = "selfsubjectrulesreviews",
    .singular = "selfsubjectrulesreview",
    .schema_text = "{\"spec\":{\"namespace\":\"string\"},\"status\":\"any\"}",
    .virt = &review_ops,
    .verbs = review_verbs,
};
