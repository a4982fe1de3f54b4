/* controllers: starts and stops the set of controllers slipway runs, against the API server a
 * kubeconfig names — slipway's own (embedded in `slipway server`) or a real cluster's
 * (`slipway controllers`). They share one API client and one informer factory. With leader
 * election the set is started each time this process becomes the leader and stopped (every
 * worker joined) whenever it stops being one. */
#ifndef SW_CONTROLLERS_H
#define SW_CONTROLLERS_H

#include "controllers/build.h"
#include "controllers/deployment.h"
#include "controllers/gc.h"
#include "controllers/import.h"
#include "controllers/managedimage.h"
#include "controllers/namespace.h"
#include "controllers/trigger.h"

#include <stdbool.h>

typedef struct sw_controllers sw_controllers;

typedef struct sw_controllers_opts {
    const char *kubeconfig; /* path */
    /* Which controllers run, as kube-controller-manager's --controllers: a comma list of
     * names (import, build, garbagecollector, namespace, managedimage, imagetrigger,
     * deployment), "*" for the default set, "-name" to leave one out (an empty result is
     * refused); NULL means "*". In the default set, garbagecollector, namespace and deployment
     * run only against a slipway server: a real cluster's kube-controller-manager does their
     * work (naming them runs them anyway).
     * Until the server first answers /version they wait; start does not. */
    const char *enabled;
    bool slipway_server; /* the server is known to be slipway's (embedded): no need to ask */
    sw_import_controller_opts import;
    sw_build_controller_opts build;
    sw_gc_opts gc;
    sw_namespace_controller_opts ns;
    sw_mi_controller_opts mi;
    /* NAMESPACE/NAME of the Secret naming the rollout webhook (rollouthook.h), or NULL */
    const char *rollout_webhook_secret;
    /* Several processes, one acting: the controllers run only while this process holds the
     * Lease (client/leader.h); 0s are client-go's defaults (15 s, 10 s, 2000 ms). */
    bool leader_elect;
    const char *lease_namespace; /* NULL: kube-system */
    const char *lease_name;      /* NULL: slipway-controllers */
    const char *identity;        /* NULL: <hostname>_<uuid> */
    int lease_s, renew_deadline_s, retry_ms;
} sw_controllers_opts;

/* A --leader-elect-* duration as kube takes it ("15s", "2000ms", "1m", or bare seconds):
 * milliseconds, 1 ms to 1 hour. 0, or SW_EINVALID naming the flag. */
int sw_controllers_parse_duration(const char *flag, const char *v, int *ms_out);

/* Checks an --controllers value: 0, or SW_EINVALID naming the unknown controller. */
int sw_controllers_check(const char *enabled);
int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts);
void sw_controllers_stop(sw_controllers *c);
/* The garbage collector, when it runs (benchmarks and tests read what it tracks). */
sw_gc *sw_controllers_gc(sw_controllers *c);
/* Whether the controllers run now (always without leader election). */
bool sw_controllers_leading(sw_controllers *c);

#endif
