/* bootstrap: objects that exist from the first start, as on a Kubernetes cluster: the default,
 * kube-system and kube-public namespaces; the bootstrap RBAC policy (rbacpolicy.c); and the kinds
 * of the stored CRDs, registered before the server serves. */
#include "apiserver/api.h"

#include "apiserver/object.h"
#include "kinds/core.h"
#include "kinds/crd.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

int sw_api_bootstrap(sw_api *api)
{
    static const char *const names[] = {"default", "kube-system", "kube-public"};
    const sw_kind *k = &sw_kind_namespace;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char key[300];
        sw_kv kv = {0};
        sw_api_key(k, NULL, names[i], key, sizeof(key));
        int error = sw_store_get(api->store, key, &kv);
        sw_kv_dispose(&kv);
        if (error == 0)
            continue;
        if (error != SW_ENOTFOUND)
            return error;
        json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                "metadata", "name", names[i]);
        sw_object_init_meta(k, obj);
        k->prepare_create(&api->kctx, obj);
        size_t len;
        int64_t rev;
        char *val = sw_object_encode(obj, &len);
        error = sw_store_create(api->store, key, val, len, &rev);
        sw_free(val);
        json_decref(obj);
        if (error < 0 && error != SW_EEXISTS)
            return error;
    }
    int error = sw_rbac_bootstrap(api);
    if (error < 0)
        return error;
    sw_objects *o = sw_api_objects_new(api);
    sw_crd_register_all(&api->kctx, o);
    sw_api_objects_free(o);
    return 0;
}
