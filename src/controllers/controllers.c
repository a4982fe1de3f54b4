/* controllers: wiring of the API client and every controller (see controllers.h). */
#include "controllers/controllers.h"

#include "client/kubeconfig.h"
#include "util/alloc.h"
#include "util/error.h"

struct sw_controllers {
    sw_client *client;
    sw_informer *streams; /* one ImageStream watch and cache for both controllers */
    sw_import_controller *import;
    sw_build_controller *build;
};

int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts)
{
    sw_kubeconfig *kc = NULL;
    sw_controllers *c = sw_calloc(1, sizeof(*c));
    int error = sw_kubeconfig_load(&kc, opts->kubeconfig, NULL);
    sw_import_controller_opts io = opts->import;
    sw_build_controller_opts bo = opts->build;
    if (error == 0)
        error = sw_client_new(&c->client, kc);
    if (error == 0)
        error = sw_informer_new(&c->streams, c->client, &sw_res_imagestreams, NULL, NULL);
    io.streams = bo.streams = c->streams;
    /* both controllers add their handlers before the shared informer starts */
    if (error == 0)
        error = sw_import_controller_new(&c->import, c->client, &io);
    if (error == 0)
        error = sw_build_controller_new(&c->build, c->client, kc, &bo);
    if (error == 0)
        error = sw_informer_start(c->streams);
    if (error == 0)
        error = sw_import_controller_start(c->import);
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
    if (c->client)
        sw_client_shutdown(c->client); /* workers in a long request (an import) return now */
    if (c->streams)
        sw_informer_stop(c->streams); /* no handler runs once the controllers are freed */
    sw_build_controller_free(c->build);
    sw_import_controller_free(c->import);
    sw_informer_free(c->streams);
    sw_client_free(c->client);
    sw_free(c);
}
