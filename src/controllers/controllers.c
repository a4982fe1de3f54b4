/* controllers: wiring of the API client and every controller (see controllers.h). */
#include "controllers/controllers.h"

#include "client/kubeconfig.h"
#include "util/alloc.h"
#include "util/error.h"

struct sw_controllers {
    sw_client *client;
    sw_import_controller *import;
    sw_build_controller *build;
};

int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts)
{
    sw_kubeconfig *kc = NULL;
    sw_controllers *c = sw_calloc(1, sizeof(*c));
    int error = sw_kubeconfig_load(&kc, opts->kubeconfig, NULL);
    if (error == 0)
        error = sw_client_new(&c->client, kc);
    if (error == 0)
        error = sw_import_controller_new(&c->import, c->client, &opts->import);
    if (error == 0)
        error = sw_import_controller_start(c->import);
    if (error == 0)
        error = sw_build_controller_new(&c->build, c->client, kc, &opts->build);
    if (error == 0)
        error = sw_build_controller_start(c->build);
    sw_kubeconfig_free(kc);
    if (error < 0) {
        sw_controllers_stop(c);
        return error;
    }
    *out = c;
    return 0;
}

void sw_controllers_stop(sw_controllers *c)
{
    if (!c)
        return;
    sw_build_controller_free(c->build);
    sw_import_controller_free(c->import);
    sw_client_free(c->client);
    sw_free(c);
}
