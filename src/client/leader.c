/* leader: client-go's Lease election (see leader.h; etcd-triggers.md §4 has the algorithm). */
#include "client/leader.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

struct sw_leader {
    sw_client *c;
    sw_leader_opts o;
    char ns[254], name[254], identity[320];
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    _Atomic bool leading;
    json_t *lease;       /* the Lease as last read or written (its resourceVersion) */
    json_t *observed;    /* its spec when it last changed */
    int64_t observed_ms; /* monotonic time of that change, on our clock */
};

/* Waits ms unless stopped; false when stopping. */
static bool pause_ms(sw_leader *l, int64_t ms)
{
    struct timespec until = sw_time_mono_deadline(ms);
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &until) == 0)
        ;
    bool go_on = !l->stop;
    pthread_mutex_unlock(&l->mu);
    return go_on;
}

static json_t *spec_new(const char *holder, int duration, const char *acquire, const char *renew,
                        int64_t transitions)
{
    return json_pack("{s:s,s:i,s:s,s:s,s:I}", "holderIdentity", holder, "leaseDurationSeconds",
                     duration, "acquireTime", acquire, "renewTime", renew, "leaseTransitions",
                     (json_int_t)transitions);
}

/* Remembers lease (stolen) and, when its spec changed, the local time it was seen. */
static void observe(sw_leader *l, json_t *lease)
{
    json_t *spec = json_object_get(lease, "spec");
    if (!l->observed || !spec || !sw_json_same(l->observed, spec)) {
        json_decref(l->observed);
        l->observed = spec ? json_deep_copy(spec) : json_object();
        l->observed_ms = sw_time_mono_ms();
    }
    json_decref(l->lease);
    l->lease = lease;
}

/* One tryAcquireOrRenew: true when we hold the Lease now. */
static bool try_acquire_or_renew(sw_leader *l)
{
    char now[40];
    sw_time_format_micro(sw_time_now_micro(), now, sizeof(now));
    json_t *cur = NULL, *out = NULL;
    int error = sw_client_get(l->c, &sw_res_leases, l->ns, l->name, &cur);
    if (error == SW_ENOTFOUND) {
        json_t *lease =
            json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                      "Lease", "metadata", "name", l->name, "namespace", l->ns, "spec",
                      spec_new(l->identity, l->o.lease_s, now, now, 0));
        error = sw_client_create(l->c, &sw_res_leases, l->ns, lease, &out);
        json_decref(lease);
        if (error < 0) {
            sw_log(SW_LOG_INFO, "leader election %s/%s: create: %s", l->ns, l->name,
                   sw_error_msg());
            return false;
        }
        observe(l, out);
        return true;
    }
    if (error < 0) {
        sw_log(SW_LOG_INFO, "leader election %s/%s: get: %s", l->ns, l->name, sw_error_msg());
        return false;
    }
    observe(l, cur);
    const json_t *spec = l->observed;
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    int64_t duration = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    int64_t transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
    bool mine = sw_str_eq(holder, l->identity);
    if (holder && *holder && !mine && l->observed_ms + duration * 1000 > sw_time_mono_ms())
        return false; /* held, and renewed within its duration as far as we can tell */
    const char *acquired = json_string_value(json_object_get(spec, "acquireTime"));
    json_t *lease = json_deep_copy(l->lease);
    json_object_set_new(lease, "spec",
                        spec_new(l->identity, l->o.lease_s, mine && acquired ? acquired : now, now,
                                 mine ? transitions : transitions + 1));
    error = sw_client_update(l->c, &sw_res_leases, l->ns, lease, &out);
    json_decref(lease);
    if (error < 0) {
        if (error != SW_ECONFLICT || mine)
            sw_log(SW_LOG_INFO, "leader election %s/%s: update: %s", l->ns, l->name,
                   sw_error_msg());
        return false;
    }
    if (!mine)
        sw_log(SW_LOG_WARN, "leader election %s/%s: %s is the leader now (after %s)", l->ns,
               l->name, l->identity, holder && *holder ? holder : "nobody");
    observe(l, out);
    return true;
}

/* ReleaseOnCancel: the next candidate need not wait out the lease. */
static void release(sw_leader *l)
{
    if (!l->lease)
        return;
    char now[40];
    sw_time_format_micro(sw_time_now_micro(), now, sizeof(now));
    const char *acquired = sw_json_str_at(l->lease, "spec.acquireTime");
    json_t *lease = json_deep_copy(l->lease), *out = NULL;
    json_object_set_new(
        lease, "spec",
        spec_new("", 1, acquired ? acquired : now, now,
                 json_integer_value(json_object_get(l->observed, "leaseTransitions"))));
    int error = sw_client_update(l->c, &sw_res_leases, l->ns, lease, &out);
    if (error == SW_EUNAVAILABLE) /* a kept-alive connection the server had closed */
        error = sw_client_update(l->c, &sw_res_leases, l->ns, lease, &out);
    if (error < 0)
        sw_log(SW_LOG_INFO, "leader election %s/%s: release: %s", l->ns, l->name, sw_error_msg());
    json_decref(out);
    json_decref(lease);
}

/* A candidate's next try: the retry period plus up to 20% jitter (client-go's factor 1.2
 * waits up to 2.2 periods; a smaller one sees a renewal sooner, so the takeover after a
 * leader dies comes within about leaseDuration + retryPeriod), or the moment the observed
 * record expires when that is sooner. */
static int64_t next_try_ms(const sw_leader *l)
{
    unsigned char r;
    sw_random_bytes(&r, 1);
    int64_t wait = l->o.retry_ms + (int64_t)l->o.retry_ms * 2 * r / (10 * 256);
    if (l->observed) {
        int64_t d = json_integer_value(json_object_get(l->observed, "leaseDurationSeconds"));
        int64_t left = l->observed_ms + d * 1000 - sw_time_mono_ms() + 10;
        if (left > 0 && left < wait)
            wait = left;
    }
    return wait;
}

static void *elect_main(void *arg)
{
    sw_leader *l = arg;
    for (;;) {
        /* candidate */
        bool got = false;
        while (!got) {
            got = try_acquire_or_renew(l);
            if (!got && !pause_ms(l, next_try_ms(l)))
                return NULL;
        }
        pthread_mutex_lock(&l->mu);
        bool stopping = l->stop;
        pthread_mutex_unlock(&l->mu);
        if (stopping) {
            release(l);
            return NULL;
        }
        atomic_store(&l->leading, true);
        sw_log(SW_LOG_INFO, "leader election %s/%s: leading as %s", l->ns, l->name, l->identity);
        l->o.on_start(l->o.arg);
        /* leader: renew every retry period until the renew deadline passes without success */
        int64_t renewed = sw_time_mono_ms();
        bool lost = false;
        while (pause_ms(l, l->o.retry_ms)) {
            if (try_acquire_or_renew(l)) {
                renewed = sw_time_mono_ms();
            } else if (sw_time_mono_ms() - renewed >= (int64_t)l->o.renew_deadline_s * 1000) {
                lost = true;
                break;
            }
        }
        atomic_store(&l->leading, false);
        if (lost)
            sw_log(SW_LOG_WARN,
                   "leader election %s/%s: no renewal for %d s: stopping the controllers", l->ns,
                   l->name, l->o.renew_deadline_s);
        l->o.on_stop(l->o.arg);
        if (!lost) {
            release(l);
            return NULL;
        }
    }
}

int sw_leader_start(sw_leader **out, sw_client *c, const sw_leader_opts *opts)
{
    sw_leader *l = sw_calloc(1, sizeof(*l));
    l->c = c;
    l->o = *opts;
    l->o.lease_s = opts->lease_s ? opts->lease_s : 15;
    l->o.renew_deadline_s = opts->renew_deadline_s ? opts->renew_deadline_s : 10;
    l->o.retry_ms = opts->retry_ms ? opts->retry_ms : 2000;
    if (l->o.lease_s <= l->o.renew_deadline_s ||
        (int64_t)l->o.renew_deadline_s * 1000 * 10 <= (int64_t)l->o.retry_ms * 12 || !opts->name ||
        !*opts->name || !opts->on_start || !opts->on_stop) {
        sw_free(l);
        return sw_error_set(SW_EINVALID, "leader election: leaseDuration must be greater than "
                                         "renewDeadline, and renewDeadline greater than 1.2 x "
                                         "retryPeriod");
    }
    sw_strlcpy(l->ns, opts->ns ? opts->ns : "kube-system", sizeof(l->ns));
    sw_strlcpy(l->name, opts->name, sizeof(l->name));
    if (opts->identity) {
        sw_strlcpy(l->identity, opts->identity, sizeof(l->identity));
    } else {
        char host[256] = "", uuid[37];
        if (gethostname(host, sizeof(host) - 1) < 0)
            sw_strlcpy(host, "slipway", sizeof(host));
        sw_uuid_v4(uuid);
        snprintf(l->identity, sizeof(l->identity), "%s_%s", host, uuid);
    }
    pthread_mutex_init(&l->mu, NULL);
    sw_time_cond_init(&l->cond);
    if (pthread_create(&l->th, NULL, elect_main, l) != 0) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cond);
        sw_free(l);
        return sw_error_set(SW_ERROR, "leader election: cannot start its thread");
    }
    *out = l;
    return 0;
}

bool sw_leader_is_leader(sw_leader *l)
{
    return l && atomic_load(&l->leading);
}

const char *sw_leader_identity(const sw_leader *l)
{
    return l->identity;
}

void sw_leader_stop(sw_leader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->th, NULL);
    json_decref(l->lease);
    json_decref(l->observed);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cond);
    sw_free(l);
}
