/* managedimage: the ManagedImage controller (docs/managedimages.md), level-based: each
 * reconcile compares what is (the owned ImageStream and BuildConfig, the newest build, the
 * registry's answer for the image, the base image's and the source's current revision) with
 * what the ManagedImage says, and does the one step that closes the gap: recreate or adopt or
 * put back an owned object, start one build, wait for one, back off after a failure, or
 * declare the image Ready. It is a pure API client (plus HEAD requests to the registry), so it
 * runs in `slipway server` or `slipway controllers` alike.
 *
 * Exactly one build per change: a build is started through instantiate with the BuildConfig's
 * lastVersion as a precondition, so two reconciles (or two controllers, or one before and
 * after a restart) that saw the same newest build cannot both start one.
 *
 * Threading: reconcile runs on the scaffold's workers (one call per ManagedImage at a time);
 * informer handlers only enqueue. The per-ManagedImage memory (when the image was last
 * verified, what the base and source resolved to) is under one mutex and is lost on restart
 * on purpose: a restarted controller verifies every image once. */
#ifndef SW_CONTROLLERS_MANAGEDIMAGE_H
#define SW_CONTROLLERS_MANAGEDIMAGE_H

#include "client/controller.h"
#include "client/rest.h"
#include "registry/client.h"

typedef struct sw_mi_controller sw_mi_controller;

typedef struct sw_mi_controller_opts {
    int workers;           /* 0: 4 */
    sw_registry *registry; /* borrowed, for HEAD requests; NULL: the controller makes its own */
    const char *const *insecure_registries; /* for its own registry client; NULL-terminated */
    /* The wait after a failed build before the next, doubled per consecutive failure with the
     * same inputs, capped: 0 takes $SW_MI_BACKOFF_MS, else 10000; and 300000. */
    int backoff_base_ms;
    int backoff_max_ms;
} sw_mi_controller_opts;

/* c and f must outlive the controller; its informers (managedimages, imagestreams,
 * buildconfigs, builds) are f's, started by f's owner. */
int sw_mi_controller_new(sw_mi_controller **out, sw_client *c, sw_informers *f,
                         const sw_mi_controller_opts *opts);
int sw_mi_controller_start(sw_mi_controller *m);
/* Stops reconciling and frees (stop the informers first). */
void sw_mi_controller_free(sw_mi_controller *m);

/* ---- pure helpers (exposed for tests) ---- */

/* The wait before build number n (n >= 1 failures in a row) is started: base * 2^(n-1),
 * capped at max; the first retry after a lost builder (the server or its builder died, not
 * the build) is immediate. */
int64_t sw_mi_backoff_ms(int failures, bool lost, int64_t base, int64_t max);

#endif
