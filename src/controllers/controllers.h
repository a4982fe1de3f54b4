/* controllers: starts and stops the set of controllers slipway runs, against the API server a
 * kubeconfig names — slipway's own (embedded in `slipway server`) or a real cluster's
 * (`slipway controllers`). */
#ifndef SW_CONTROLLERS_H
#define SW_CONTROLLERS_H

#include "controllers/build.h"
#include "controllers/import.h"

typedef struct sw_controllers sw_controllers;

typedef struct sw_controllers_opts {
    const char *kubeconfig; /* path */
    sw_import_controller_opts import;
    sw_build_controller_opts build;
} sw_controllers_opts;

int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts);
void sw_controllers_stop(sw_controllers *c);

#endif
