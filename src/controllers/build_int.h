/* build_int: what build.c (decisions) and build_run.c (runner threads) share: the controller's
 * state, the runners table, and status transitions written with conflict retries. */
#ifndef SW_CONTROLLERS_BUILD_INT_H
#define SW_CONTROLLERS_BUILD_INT_H

#include "controllers/build.h"

#include "client/controller.h"

#include <pthread.h>
#include <stdint.h>

/* One build whose builder this controller runs. Fields are set before the runner thread
 * starts and read-only afterwards, except `deleted` (guarded by the controller's mu). */
typedef struct sw_build__runner {
    struct sw_build__runner *next;
    struct sw_build_controller *ctl;
    char ns[256], name[256];
    char key[520];       /* "ns/name", the informer key */
    char queue_key[600]; /* what to reconcile once the build finished */
    void *run;           /* the strategy's handle */
    int64_t start_us;    /* wall clock at start (µs) */
    int64_t start_ms;    /* monotonic clock at start */
    int64_t deadline_ms; /* completionDeadlineSeconds in ms */
    bool deleted;        /* the Build was deleted: stop, write nothing */
} sw_build__runner;

struct sw_build_controller {
    sw_client *client;
    sw_build_strategy *strategy;
    bool own_strategy;
    int workers_n;
    int grace_ms; /* SIGTERM → SIGKILL */
    char *server; /* API URL for builders */
    char *ca;     /* CA PEM for builders, or NULL */
    size_t ca_len;
    char **insecure;                         /* NULL-terminated */
    char *backends;                          /* --build-backends, or NULL */
    sw_informer *builds, *configs, *streams; /* the factory's */
    sw_controller *loop;                     /* work queue and workers */
    pthread_mutex_t mu; /* runners, nrunners, requeuing, deferred, stopping, runner->deleted */
    pthread_cond_t cond;
    sw_build__runner *runners;
    int nrunners;  /* reserved runners not yet done (unlinked ones included) */
    int requeuing; /* runner_done calls still requeueing deferred builds */
    int max_running;
    json_t *deferred; /* queue keys of builds refused for max_running (an object as a set) */
    bool stopping;
};

/* A status change; fields left zero are left alone. */
typedef struct sw_build__transition {
    const char *phase;
    const char *reason;     /* NULL: unchanged; "": removed */
    const char *message;    /* likewise */
    bool keep_reported;     /* a reason the builder reported through details wins */
    bool only_active;       /* applies only to a Pending or Running build */
    bool only_new;          /* applies only to a New build */
    bool start;             /* sets startTimestamp */
    bool complete;          /* sets completionTimestamp and duration */
    bool cancelled;         /* sets status.cancelled */
    int64_t start_us;       /* for startTimestamp and duration; 0: now / startTimestamp */
    int64_t end_us;         /* for completionTimestamp; 0: now */
    const char *snippet;    /* logSnippet, or NULL */
    const char *output_ref; /* outputDockerImageReference, or NULL */
} sw_build__transition;

/* Writes t on build (re-reading it on conflicts). *out (may be NULL) gets the stored build, or
 * NULL when t did not apply. A build the builder already finished only gets what is missing
 * (completion time, duration, logSnippet). */
int sw_build__transition_apply(struct sw_build_controller *ctl, const json_t *build,
                               const sw_build__transition *t, json_t **out);

/* Runners: reserve adds one for build (NULL when stopping or already there); unlink removes it
 * from the table (the build is no longer "ours"); done forgets the run and frees it. */
sw_build__runner *sw_build__runner_reserve(struct sw_build_controller *ctl, const json_t *build);
void sw_build__runner_unlink(struct sw_build_controller *ctl, sw_build__runner *r);
void sw_build__runner_done(struct sw_build_controller *ctl, sw_build__runner *r);
/* Starts r's thread (build_run.c), which owns r from then on. */
int sw_build__runner_launch(struct sw_build_controller *ctl, sw_build__runner *r);

bool sw_build__stopping(struct sw_build_controller *ctl);
const char *sw_build__phase(const json_t *build);
bool sw_build__active(const char *phase);
void sw_build__queue_key(const json_t *build, char *out, size_t n);
json_t *sw_build__text(const char *s);

#endif
