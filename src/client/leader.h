/* leader: client-go's leader election over a coordination.k8s.io/v1 Lease, so that of several
 * processes running the same controllers exactly one acts. A candidate takes the Lease when it
 * is absent, released, or unchanged for leaseDurationSeconds as measured on the candidate's own
 * clock since it last saw the record change (clock skew does not matter); the leader renews it
 * every retry period and, once renewDeadline has passed without a successful renew, stops
 * acting (on_stop returns) before any other candidate can take over (leaseDuration >
 * renewDeadline), then goes back to being a candidate. Writes are PUTs carrying the
 * resourceVersion read last: a stale one is a 409, never two holders. Stopping a leader
 * releases the Lease (holder "", duration 1 s) so the next one takes over at once.
 * Threading: one thread per elector; on_start and on_stop run on it, one at a time, in turn. */
#ifndef SW_CLIENT_LEADER_H
#define SW_CLIENT_LEADER_H

#include "client/rest.h"

#include <stdbool.h>

typedef struct sw_leader sw_leader;

typedef struct sw_leader_opts {
    const char *ns;              /* the Lease's namespace; NULL: kube-system */
    const char *name;            /* the Lease */
    const char *identity;        /* NULL: <hostname>_<uuid> */
    int lease_s;                 /* 0: 15 */
    int renew_deadline_s;        /* 0: 10 */
    int retry_ms;                /* 0: 2000 */
    void (*on_start)(void *arg); /* became the leader: start acting */
    void (*on_stop)(void *arg);  /* no longer the leader: stop acting before returning */
    void *arg;
} sw_leader_opts;

/* Starts campaigning; c must outlive the elector (give it a client of its own, so stopping
 * the controllers' client does not cut the renewals). SW_EINVALID for durations that break
 * leaseDuration > renewDeadline > 1.2 x retryPeriod. */
int sw_leader_start(sw_leader **out, sw_client *c, const sw_leader_opts *opts);
bool sw_leader_is_leader(sw_leader *l);
const char *sw_leader_identity(const sw_leader *l);
/* Stops campaigning: a leader runs on_stop, then releases the Lease. NULL is a no-op. */
void sw_leader_stop(sw_leader *l);

#endif
