/* controllers: the selection (--controllers), the shared API client and informer factory, and
 * the order things start and stop in (see controllers.h). */
#include "controllers/controllers.h"

#include "client/kubeconfig.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <string.h>

enum { C_IMPORT, C_BUILD, C_GC, C_NAMESPACE, NCONTROLLERS };

static const char *const names[NCONTROLLERS] = {"import", "build", "garbagecollector",
                                                "namespace"};

struct sw_controllers {
    sw_client *client;
    sw_informers *informers;
    sw_import_controller *import;
    sw_build_controller *build;
    sw_gc *gc;
    sw_namespace_controller *ns;
};

/* One token's controller index, or -1. */
static int find(const char *tok, size_t len)
{
    for (int i = 0; i < NCONTROLLERS; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], tok, len))
            return i;
    return -1;
}

/* want[i]: 0 off, 1 on by default, 2 named. */
static int parse(const char *enabled, int want[NCONTROLLERS])
{
    const char *p = enabled ? enabled : "*";
    memset(want, 0, NCONTROLLERS * sizeof(*want));
    while (*p) {
        size_t len = strcspn(p, ",");
        bool off = len && *p == '-';
        const char *tok = off ? p + 1 : p;
        size_t tlen = off ? len - 1 : len;
        if (tlen == 1 && *tok == '*' && !off) {
            for (int i = 0; i < NCONTROLLERS; i++)
                if (!want[i])
                    want[i] = 1;
        } else if (tlen) {
            int i = find(tok, tlen);
            if (i < 0)
                return sw_error_set(SW_EINVALID,
                                    "--controllers: unknown controller \"%.*s\" (known: import, "
                                    "build, garbagecollector, namespace, *)",
                                    (int)(tlen > 64 ? 64 : tlen), tok);
            want[i] = off ? -1 : 2;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    for (int i = 0; i < NCONTROLLERS; i++)
        if (want[i] < 0)
            want[i] = 0;
    return 0;
}

int sw_controllers_check(const char *enabled)
{
    int want[NCONTROLLERS];
    return parse(enabled, want);
}

/* Whether the API server is slipway's own (its /version says so); a server not up yet is
 * waited for up to 10 s. */
static bool slipway_server(sw_client *c)
{
    json_t *v = NULL;
    int error = SW_EUNAVAILABLE;
    for (int i = 0; i < 20 && error == SW_EUNAVAILABLE; i++) {
        if (i)
            sw_time_sleep_ms(500);
        error = sw_client_request(c, "GET", "/version", NULL, NULL, NULL, &v);
    }
    bool yes = error == 0 && strstr(sw_json_str_at(v, "gitVersion") ?: "", "-slipway-");
    json_decref(v);
    return yes;
}

int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts)
{
    sw_kubeconfig *kc = NULL;
    sw_controllers *c = sw_calloc(1, sizeof(*c));
    int want[NCONTROLLERS];
    int error = parse(opts->enabled, want);
    if (error == 0)
        error = sw_kubeconfig_load(&kc, opts->kubeconfig, NULL);
    if (error == 0)
        error = sw_client_new(&c->client, kc);
    if (error == 0)
        error = sw_informers_new(&c->informers, c->client);
    if (error == 0 && (want[C_GC] == 1 || want[C_NAMESPACE] == 1) && !slipway_server(c->client)) {
        sw_log(SW_LOG_INFO, "not a slipway server: garbagecollector and namespace are left to "
                            "its kube-controller-manager (name them in --controllers to run "
                            "them anyway)");
        want[C_GC] = want[C_GC] == 1 ? 0 : want[C_GC];
        want[C_NAMESPACE] = want[C_NAMESPACE] == 1 ? 0 : want[C_NAMESPACE];
    }
    /* every controller adds its handlers before the shared informers start */
    if (error == 0 && want[C_IMPORT])
        error = sw_import_controller_new(&c->import, c->client, c->informers, &opts->import);
    if (error == 0 && want[C_BUILD])
        error = sw_build_controller_new(&c->build, c->client, kc, c->informers, &opts->build);
    if (error == 0 && want[C_GC])
        error = sw_gc_new(&c->gc, c->client, c->informers, &opts->gc);
    if (error == 0 && want[C_NAMESPACE])
        error = sw_namespace_controller_new(&c->ns, c->client, c->informers, &opts->ns);
    if (error == 0)
        error = sw_informers_start(c->informers);
    if (error == 0 && c->import)
        error = sw_import_controller_start(c->import);
    if (error == 0 && c->build)
        error = sw_build_controller_start(c->build);
    if (error == 0 && c->gc)
        error = sw_gc_start(c->gc);
    if (error == 0 && c->ns)
        error = sw_namespace_controller_start(c->ns);
    sw_kubeconfig_free(kc);
    if (error < 0) {
        sw_controllers_stop(c);
        return error;
    }
    *out = c;
    return 0;
}

sw_gc *sw_controllers_gc(sw_controllers *c)
{
    return c ? c->gc : NULL;
}

void sw_controllers_stop(sw_controllers *c)
{
    if (!c)
        return;
    if (c->client)
        sw_client_shutdown(c->client); /* workers in a long request (an import) return now */
    sw_informers_stop(c->informers);   /* no handler runs once the controllers are freed */
    sw_namespace_controller_free(c->ns);
    sw_gc_free(c->gc);
    sw_build_controller_free(c->build);
    sw_import_controller_free(c->import);
    sw_informers_free(c->informers);
    sw_client_free(c->client);
    sw_free(c);
}
