/* build: the build controller (docs/internals/builds.md, openshift-api.md §4.3, §5.2), a pure
 * API client as OpenShift's BuildController and BuildConfigController are. It decides *when*:
 * runPolicy (Serial, Parallel, SerialLatestOnly), ConfigChange and ImageChange triggers,
 * reference resolution before a start, deadlines, cancellation, exit → phase, history pruning,
 * and builds whose builder disappeared. A sw_build_strategy decides *how* a builder runs: the
 * process strategy (build_process.h) spawns `slipway builder`; a Pod strategy can implement the
 * same calls without touching the controller. */
#ifndef SW_CONTROLLERS_BUILD_H
#define SW_CONTROLLERS_BUILD_H

#include "client/controller.h"
#include "client/kubeconfig.h"
#include "client/rest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sw_build_controller sw_build_controller;

/* What a builder needs besides its Build and token. Borrowed for the duration of start. */
typedef struct sw_build_env {
    const char *server; /* the API server URL */
    const char *ca_pem; /* its CA certificate(s) as PEM, or NULL */
    size_t ca_len;
    const char *push_auth;                  /* docker config.json for pushes, or NULL */
    const char *pull_auth;                  /* docker config.json for pulls, or NULL */
    const char *const *insecure_registries; /* NULL-terminated, or NULL */
    const char *backends; /* the build backends allowed ("native,buildah"), or NULL: all */
} sw_build_env;

typedef enum sw_build_state {
    SW_BUILD_RUNNING,
    SW_BUILD_EXITED,    /* value: the exit code */
    SW_BUILD_SIGNALLED, /* value: the signal that ended it */
} sw_build_state;

#define SW_BUILD_STRATEGY_VERSION 1

/* How builds run. A run handle is the strategy's own; every call but start and free takes one
 * from start. Calls for one run come from one thread; calls for different runs may overlap. */
typedef struct sw_build_strategy {
    unsigned int version; /* SW_BUILD_STRATEGY_VERSION */
    void *self;
    /* Starts the builder of build (namespace/name from its metadata) with the build token;
     * *out gets the run handle. Returns 0 or an SW_E* code with the message set. */
    int (*start)(void *self, const json_t *build, const char *token, const sw_build_env *env,
                 void **out);
    /* Whether the builder still runs; *value is the exit code or the signal. */
    int (*poll)(void *self, void *run, sw_build_state *state, int *value);
    /* Up to cap bytes of the builder's output (stdout and stderr), waiting at most timeout_ms:
     * *got is 0 when nothing came; *eof is set once the output has ended. */
    int (*read_output)(void *self, void *run, char *buf, size_t cap, int timeout_ms, size_t *got,
                       bool *eof);
    /* Asks the builder to stop (SIGTERM), or forces it (force: SIGKILL). */
    int (*cancel)(void *self, void *run, bool force);
    /* Releases run; a builder still running is killed first and waited for. */
    void (*forget)(void *self, void *run);
    /* Frees the strategy (NULL: nothing to free). */
    void (*free)(void *self);
} sw_build_strategy;

typedef struct sw_build_controller_opts {
    int workers;                            /* reconcile workers; 0: 2 */
    const char *builder_bin;                /* NULL: $SW_BUILDER_BIN, else the running binary */
    const char *const *insecure_registries; /* passed to every builder; NULL-terminated or NULL */
    int kill_grace_ms; /* SIGTERM → SIGKILL delay; 0: $SW_BUILD_KILL_GRACE_MS, else 10000 */
    sw_build_strategy *strategy; /* NULL: the process strategy (owned by the controller) */
    int max_running; /* builders running at once, all builds together; 0: 2 per CPU, at least 4.
                      * Builds past it stay New until one ends. */
    const char *backends; /* build backends builders may use (src/builder/backend.h); NULL: all */
} sw_build_controller_opts;

/* c and f must outlive the controller; its Build, BuildConfig and ImageStream informers are
 * f's (started by f's owner, who stops f before freeing the controller). What is needed of kc
 * (server URL, CA) is copied. */
int sw_build_controller_new(sw_build_controller **out, sw_client *c, const sw_kubeconfig *kc,
                            sw_informers *f, const sw_build_controller_opts *opts);
int sw_build_controller_start(sw_build_controller *bc);
/* Stops reconciling, kills running builders (their builds are marked Error/BuilderLost by the
 * next controller that starts), and frees. */
void sw_build_controller_free(sw_build_controller *bc);

/* ---- pure helpers (exposed for tests) ---- */

/* OpenShift's logSnippet: the last 5 lines of the output's tail, each line longer than 120
 * characters elided in the middle; a new sw_malloc'd string ("" for no output). */
char *sw_build_log_snippet(const char *tail, size_t len);

/* The runPolicy decision for the builds of one config (each a Build object; phases as stored).
 * *start and *cancel get new arrays of (references to) the builds to start and the New builds
 * to cancel (SerialLatestOnly). "Active" builds are those Pending or Running. */
void sw_build_runnable(const json_t *builds, const char *policy, json_t **start, json_t **cancel);

/* The build number (annotation openshift.io/build.number), or -1. */
long long sw_build_number(const json_t *build);

#endif
