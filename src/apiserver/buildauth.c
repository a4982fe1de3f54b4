/* buildauth: what a build-scoped token (kinds/buildtoken.c) may do: read its own Build and its
 * uploaded source, and write that Build's details (anything else is 403); and whether a
 * webhook call's secret is good, judged before its body is read. */
#include "apiserver/api.h"

#include "kinds/build.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

int sw_api_build_token_check(sw_api *api, const char *token, const char *method, const char *path)
{
    char ns[256], name[256], key[600], base[700];
    sw_kv kv = {0};
    json_t *b = NULL;
    if (sw_build_token_subject(token, ns, sizeof(ns), name, sizeof(name)) < 0)
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    sw_api_key(&sw_kind_build, ns, name, key, sizeof(key));
    int error = sw_store_get(api->store, key, &kv);
    if (error == 0)
        error = sw_api_decode(api, &sw_kind_build, kv.value, kv.value_len, kv.mod_rev, &b);
    bool valid = error == 0 &&
                 sw_build_token_valid(api->kctx.build_token_key, api->kctx.build_token_key_len,
                                      token, ns, name, sw_json_str_at(b, "metadata.uid") ?: "");
    /* A token lives as long as its build runs: once the build is finished (or marked lost
     * after a crash), a builder that outlived it, or a copy of its token, can do nothing. */
    valid = valid && !sw_build_phase_terminal(sw_json_str_at(b, "status.phase"));
    json_decref(b);
    sw_kv_dispose(&kv);
    if (!valid)
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    snprintf(base, sizeof(base), "/apis/build.openshift.io/v1/namespaces/%s/builds/%s", ns, name);
    const char *rest = sw_str_prefix(path, base) ? path + strlen(base) : NULL;
    bool read = !strcmp(method, "GET") && rest && (!*rest || !strcmp(rest, "/source"));
    bool details =
        (!strcmp(method, "PUT") || !strcmp(method, "POST")) && rest && !strcmp(rest, "/details");
    if (read || details)
        return 0;
    return sw_error_set(SW_EFORBIDDEN,
                        "a build token may only read build %s/%s and its source, and write its "
                        "details",
                        ns, name);
}

int sw_api_webhook_check(sw_api *api, const char *ns, const char *bc, const char *secret,
                         const char *type)
{
    sw_objects *o = sw_api_objects_new(api);
    bool ok = sw_build_webhook_allowed(o, ns, bc, secret, type);
    sw_api_objects_free(o);
    return ok ? 0 : sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
}
